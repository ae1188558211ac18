# devflow: `make demo` and `make test` work on a fresh clone (Python >= 3.10, Node for the extension).
# Every part of the product adds its own targets in mk/*.mk and appends its test target to TEST_TARGETS.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
CACHE := $(CURDIR)/.cache
SHARED ?= $(abspath ../shared)
SERVER_STAMP := $(VENV)/.stamp-server
TEST_STAMP := $(VENV)/.stamp-test
# The CPU build of torch; a bare `torch` would pull a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# Quiet installs: pip -q, and the build backend's notices (setuptools' "Editable installation" banner)
# silenced, so `make demo` / `make vsix` print what a user needs. Errors still show.
PIP_QUIET := PYTHONWARNINGS=ignore $(BIN)/python -m pip install -q --no-warn-script-location

TEST_TARGETS :=

.PHONY: demo test setup setup-test test-python bench clean
.DEFAULT_GOAL := demo

$(SERVER_STAMP): server/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10) and "devflow needs Python >= 3.10" or 0)'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "== installing devflow into $(VENV)"
	@$(PIP_QUIET) --upgrade pip
	@$(PIP_QUIET) -e server
	@touch $@

$(TEST_STAMP): $(SERVER_STAMP)
	@echo "== installing the test dependencies ($(TORCH_SPEC) CPU, pytest) into $(VENV)"
	@$(PIP_QUIET) -e 'server[dev]' '$(TORCH_SPEC)' numpy
	@touch $@

setup: $(SERVER_STAMP)
setup-test: $(TEST_STAMP)

demo: setup
	@echo "== devflow check samples/"
	$(BIN)/devflow check samples/ --exit-zero

test-python: setup-test
	$(BIN)/python -m pytest -q tests/python
TEST_TARGETS += test-python

# Engine throughput and precision on ~2M lines of public PyTorch code (downloads wheels into .cache/).
bench: setup-test
	$(BIN)/python bench/throughput.py

-include mk/*.mk

test: $(TEST_TARGETS)
	@echo "== all test suites passed: $(TEST_TARGETS)"

clean:
	rm -rf $(VENV) node_modules extension/dist artifacts *.vsix
