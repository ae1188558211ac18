"""Semantics found missing on unseen real cases, batch AF (tests/fixtures/engine/unseen/af_*): the Hugging Face
stack in user code.

- A Hugging Face processor (ProcessorMixin) holds its preprocessing components as attributes named after
  their modality (transformers' `_get_modality_for_attribute`: a name containing "tokenizer",
  "feature_extractor", "image_processor", ...; generated from MODALITY_TO_BASE_CLASS_MAPPING into
  frameworks.json `processor_modalities`). `processor.feature_extractor(audio, return_tensors="pt")` makes cpu
  tensors as the processor itself does; an audio tokenizer (a model) is not one. A feature extractor loaded
  by `XFeatureExtractor.from_pretrained` is such a preprocessor too (before: unknown).
- A repository's subfolder holding its own packaging file (sglang's `python/pyproject.toml`, installed with
  `pip install -e python`) is where the repository's scripts (`test/manual/*.py`) import the package from.
  (af_sglang_whisper_features_dtype_only still needs `x.to(w.dtype)` read as dtype-only: not done, see its
  source.txt.)
"""

from __future__ import annotations

import textwrap

from devflow.api import check_path, check_source


def _codes(src: str) -> list[tuple[int, str]]:
    return [(d.span.line, d.code) for d in check_source(textwrap.dedent(src), "t.py").diagnostics]


def test_feature_extractor_of_a_processor_makes_cpu_features():
    assert _codes("""
        import torch.nn as nn
        from transformers import WhisperProcessor
        proc = WhisperProcessor.from_pretrained("openai/whisper-small")
        model = nn.Conv1d(80, 16, 3).to("cuda")
        feats = proc.feature_extractor([0.0], sampling_rate=16000, return_tensors="pt")["input_features"]
        print(model(feats))
    """) == [(6, "DEV202")]


def test_renamed_processor_component_inside_a_class():
    assert _codes("""
        import torch.nn as nn
        from transformers import AutoProcessor

        class Captioner:
            def __init__(self, path, device="cuda"):
                self.processor = AutoProcessor.from_pretrained(path)
                self.vision = nn.Linear(4, 4).to(device)

            def embed(self, images):
                pixels = self.processor.image_processor(images, return_tensors="pt").pixel_values
                return self.vision(pixels)

        Captioner("m").embed([0])
    """) == [(11, "DEV202")]


def test_feature_extractor_from_pretrained_is_a_preprocessor():
    assert _codes("""
        import torch.nn as nn
        from transformers import AutoFeatureExtractor
        fe = AutoFeatureExtractor.from_pretrained("facebook/wav2vec2-base")
        model = nn.Linear(4, 4).cuda()
        x = fe([0.0], sampling_rate=16000, return_tensors="pt").input_values
        print(model(x))
    """) == [(6, "DEV202")]


def test_split_into_files(tmp_path):
    (tmp_path / "prep.py").write_text(textwrap.dedent("""
        from transformers import WhisperProcessor
        proc = WhisperProcessor.from_pretrained("w")

        def featurize(audio):
            return proc.feature_extractor(audio, return_tensors="pt")["input_features"]
    """))
    (tmp_path / "run.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        from prep import featurize
        model = nn.Conv1d(80, 16, 3).to("cuda")
        print(model(featurize([0.0])))
    """))
    found = [(d.span.line, d.code) for d in check_path(str(tmp_path / "run.py")).diagnostics]
    assert found == [(5, "DEV202")] or any(c == "DEV202" for _l, c in found)


def test_silent_when_moved_with_the_dtype_and_device():
    assert _codes("""
        import torch
        import torch.nn as nn
        from transformers import WhisperProcessor
        proc = WhisperProcessor.from_pretrained("w")
        model = nn.Conv1d(80, 16, 3).to("cuda")
        feats = proc.feature_extractor([0.0], return_tensors="pt")["input_features"]
        feats = feats.to(device=model.weight.device, dtype=model.weight.dtype)
        print(model(feats))
    """) == []


def test_silent_when_the_model_device_is_unknown():
    assert _codes("""
        import torch.nn as nn
        from transformers import WhisperProcessor

        def run(model, audio):
            proc = WhisperProcessor.from_pretrained("w")
            feats = proc.feature_extractor(audio, return_tensors="pt")["input_features"]
            return model(feats.to(model.dtype))
    """) == []


def test_silent_without_return_tensors_and_for_other_attributes():
    assert _codes("""
        import torch
        import torch.nn as nn
        from transformers import AutoProcessor
        proc = AutoProcessor.from_pretrained("m")
        model = nn.Linear(4, 4).to("cuda")
        ids = proc.tokenizer("hi").input_ids
        template = proc.chat_template
        print(model(torch.tensor(ids, device="cuda")))
    """) == []


def test_silent_on_cpu_model():
    assert _codes("""
        import torch.nn as nn
        from transformers import WhisperProcessor
        proc = WhisperProcessor.from_pretrained("w")
        model = nn.Conv1d(80, 16, 3)
        feats = proc.feature_extractor([0.0], return_tensors="pt")["input_features"]
        print(model(feats.to(model.weight.dtype)))
    """) == []


def _repo_with_python_package(tmp_path, packaged: bool):
    (tmp_path / "README.md").write_text("# repo\n")
    pkg = tmp_path / "python" / "mypkg"
    pkg.mkdir(parents=True)
    if packaged:  # `pip install -e python`
        (tmp_path / "python" / "pyproject.toml").write_text('[project]\nname = "mypkg"\n')
    (pkg / "__init__.py").write_text("")
    (pkg / "runner.py").write_text(textwrap.dedent("""
        import torch.nn as nn
        from transformers import WhisperProcessor

        class Runner:
            def __init__(self, device="cuda"):
                self.model = nn.Conv1d(80, 16, 3).to(device)
                self.proc = WhisperProcessor.from_pretrained("w")

            def run(self, audio):
                feats = self.proc.feature_extractor(audio, return_tensors="pt")["input_features"]
                return self.model(feats)
    """))
    (tmp_path / "test" / "manual").mkdir(parents=True)
    script = tmp_path / "test" / "manual" / "run_it.py"
    script.write_text(textwrap.dedent("""
        from mypkg.runner import Runner

        if __name__ == "__main__":
            Runner(device="cuda").run([0.0])
    """))
    return script


def test_package_installed_from_a_subfolder_resolves_from_the_repository(tmp_path):
    """`python/pyproject.toml` beside `test/` (sglang's layout): `from mypkg.runner import Runner` in
    test/manual/run_it.py resolves in python/, as `pip install -e python` makes it."""
    script = _repo_with_python_package(tmp_path, packaged=True)
    assert [d.code for d in check_path(str(script)).diagnostics] == ["DEV202"]


def test_silent_when_the_subfolder_is_not_a_package_to_install(tmp_path):
    script = _repo_with_python_package(tmp_path, packaged=False)
    assert check_path(str(script)).diagnostics == []
