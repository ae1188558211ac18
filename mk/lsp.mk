# Language server (server/devflow/lsp): its pytest-lsp suite runs under test-python; this adds the
# headless Neovim acceptance check (an LSP client devflow did not write) and the latency bench.

NVIM_SAMPLE ?= samples/01_head_replaced_after_move.py
NVIM_RESULT := $(CACHE)/nvim_lsp_check.json
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: test-nvim nvim-install bench-lsp

nvim-install:
	@command -v nvim >/dev/null || ($(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q neovim)

# Checks a copy of the sample in a temporary folder (the harness edits the buffer, never saves).
test-nvim: setup-test nvim-install
	@mkdir -p $(CACHE)
	@tmp=$$(mktemp -d) && cp $(NVIM_SAMPLE) $$tmp/ && \
	DEVFLOW_SERVER_CMD="$(BIN)/devflow serve" DEVFLOW_FILE="$$tmp/$$(basename $(NVIM_SAMPLE))" \
	  timeout 300 nvim --headless -u NONE -c 'luafile $(SHARED)/harness/nvim_lsp_check.lua' > $(NVIM_RESULT); \
	rc=$$?; cat $(NVIM_RESULT); rm -rf "$$tmp"; \
	if [ $$rc = 0 ]; then echo "== test-nvim: passed"; else echo "== test-nvim: FAILED (exit $$rc)"; fi; exit $$rc
TEST_TARGETS += test-nvim

# didChange -> publishDiagnostics latency for 500 / 2,000 / 10,000-line files (prints p50/p95),
# then the 20-file project mode (first open, edits of train.py and of an imported module, RSS).
bench-lsp: setup-test
	$(BIN)/python bench/lsp_latency.py
	$(BIN)/python bench/lsp_latency.py --project
