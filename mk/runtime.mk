# Runtime placement report (server/devflow/runtime): its tests run under test-python (pytest) and
# test-extension-unit (placement*.test.ts); these targets regenerate the shared DAP expression and
# run the probe benchmark.

.PHONY: runtime-expression bench-probe

# The expression the VS Code tracker evaluates, generated from probe.py / messages.py.
runtime-expression: setup
	PYTHONPATH=server $(BIN)/python -m devflow.runtime.dap_expression --write-ts

bench-probe: setup-test
	$(BIN)/python bench/probe.py
