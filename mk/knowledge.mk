# Library knowledge (server/devflow/knowledge/*.json) generated from the real packages: the installed
# torch (TORCH_SPEC) and released wheels of timm, torchvision, transformers, peft, accelerate,
# safetensors, diffusers, huggingface_hub, kornia (downloaded into .cache/knowledge, read by an ast scan; pins in
# tools/knowledge/pins.py; also einops, tiktoken, torchtext, lightning, torch_geometric, pillow and the config
# libraries yacs, easydict, addict for frameworks.json). The generated files are
# committed; the engine loads them.
# Also the metamorphic measurement (tests/metamorphic): the engine on rewritten corpus cases and on the
# rewritten unseen real cases (tests/fixtures/engine/unseen: their expect.txt lines, _fixed twins, silent cases).

.PHONY: knowledge knowledge-check metamorphic

knowledge: setup-test
	$(BIN)/python tools/knowledge/generate.py

# Fails when the committed tables differ from what the pinned packages give.
knowledge-check: setup-test
	$(BIN)/python tools/knowledge/generate.py --check

metamorphic: setup-test
	$(BIN)/python tests/metamorphic/run.py --shared $(SHARED)
	$(BIN)/python tests/metamorphic/run.py --fixtures tests/fixtures/engine/unseen
