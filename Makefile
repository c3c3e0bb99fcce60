# The README's two commands are `make run` and `make test`; each does its own
# set-up. One tag set everywhere, so SQLite (cgo) is compiled once.
SHELL       := /bin/bash
GO          ?= go
TAGS        := sqlite_fts5
export GOFLAGS := -tags=$(TAGS)
BIN         := bin/kevolve-mcp
VENV        ?= $(HOME)/.cache/kevolve/venv
# The Python stack the GPU box has (DESIGN.md section 7), CPU build for tests.
PY_PINS     := torch==2.11.0 triton==3.6.0 numpy pyyaml

NODE_DIR    ?= $(HOME)/.cache/kevolve/node
NODE_PKG    := cmd/kevolve-mcp/testdata/node

.PHONY: build run test venv mcp-clients vet bench test-gpu gpu-bins clean

build:
	$(GO) build -o $(BIN) ./cmd/kevolve-mcp

# A CPU-only virtualenv with the GPU box's torch and triton versions. Made once
# and reused: PyPI's torch wheel is several GB.
venv: $(VENV)/.kevolve-ok
$(VENV)/.kevolve-ok:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q $(PY_PINS)
	touch $@

# Independent MCP clients for the end-to-end tests: the official TypeScript
# SDK and the MCP conformance suite, with a Node 22 binary from npm (the suite
# needs Node >= 22; Debian's is 20).
mcp-clients: $(NODE_DIR)/.kevolve-ok
$(NODE_DIR)/.kevolve-ok: $(NODE_PKG)/package.json $(NODE_PKG)/package-lock.json
	mkdir -p $(NODE_DIR)
	cp $(NODE_PKG)/package.json $(NODE_PKG)/package-lock.json $(NODE_DIR)/
	cd $(NODE_DIR) && npm ci --silent --no-audit --no-fund
	touch $@

vet:
	$(GO) vet ./...

test: venv mcp-clients build
	$(GO) vet ./...
	KEVOLVE_PYTHON=$(VENV)/bin/python KEVOLVE_NODE_DIR=$(NODE_DIR) KEVOLVE_TEST_STRICT=1 \
	  $(GO) test -count=1 -timeout 45m ./...

run: build
	@if [ -x /opt/torch/.venv/bin/python3 ] || python3 -c 'import torch' 2>/dev/null; then :; else $(MAKE) venv; fi
	./$(BIN) doctor

clean:
	rm -rf bin .gpu
