# The README's two commands are `make run` and `make test`; each does its own
# set-up. One tag set everywhere, so SQLite (cgo) is compiled once.
SHELL       := /bin/bash
GO          ?= go
TAGS        := sqlite_fts5
export GOFLAGS := -tags=$(TAGS)
BIN         := bin/kevolve-mcp
VENV        ?= $(HOME)/.cache/kevolve/venv
# The Python stack the GPU box has (DESIGN.md section 7), CPU build for tests,
# plus nvcc 13.0 from NVIDIA's wheels so CUDA compiles are tested without a GPU
# (nvvm and crt pinned with it: a newer nvvm emits PTX that ptxas 13.0 rejects).
# numpy < 2.4: 2.4 breaks Triton 3.6's interpreter on loops with run-time bounds.
PY_PINS     := torch==2.11.0 triton==3.6.0 numpy==2.3.5 pyyaml \
               nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85

NODE_DIR    ?= $(HOME)/.cache/kevolve/node
NODE_PKG    := cmd/kevolve-mcp/testdata/node

.PHONY: build dist image image-cuda run test deps venv venv-install mcp-clients node-install vet bench bench-session bench-gpu-prep bench-run test-gpu test-gpu-run gpu-bins kb-sweep-prep kb-sweep-run kb-fastp-run kb-regress-prep kb-regress-run kb-regress-buildcheck kb-throughput-prep kb-throughput-run clean

# --version: the release (git describe), the commit and the build date.
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo 0.1.0-dev)
COMMIT      := $(shell git rev-parse HEAD 2>/dev/null)
BUILD_DATE  := $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS     := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.buildDate=$(BUILD_DATE)

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kevolve-mcp

# Release archives: dist/kevolve-mcp-VERSION-linux-ARCH.tar.gz (the binary,
# README) and dist/SHA256SUMS. SQLite is cgo, so an architecture other
# than this host's needs its C cross compiler (aarch64-linux-gnu-gcc,
# x86_64-linux-gnu-gcc); one that is missing is skipped with a note.
DIST_ARCHES ?= amd64 arm64
DIST_DIR    ?= dist
HOST_ARCH   := $(shell $(GO) env GOARCH)
dist:
	@rm -rf $(DIST_DIR) && mkdir -p $(DIST_DIR); built=0; \
	for arch in $(DIST_ARCHES); do \
	  cc=; if [ $$arch != $(HOST_ARCH) ]; then \
	    cc=$$( [ $$arch = arm64 ] && echo aarch64-linux-gnu-gcc || echo x86_64-linux-gnu-gcc ); \
	    command -v $$cc >/dev/null || { echo "dist: skipping linux/$$arch: no $$cc (apt-get install gcc-$${cc%-gcc})"; continue; }; fi; \
	  name=kevolve-mcp-$(VERSION)-linux-$$arch; mkdir -p $(DIST_DIR)/$$name; \
	  GOOS=linux GOARCH=$$arch CGO_ENABLED=1 $${cc:+CC=$$cc} $(GO) build -trimpath -ldflags '-s -w $(LDFLAGS)' \
	    -o $(DIST_DIR)/$$name/kevolve-mcp ./cmd/kevolve-mcp || exit 1; \
	  cp README.md $(DIST_DIR)/$$name/; tar -C $(DIST_DIR) -czf $(DIST_DIR)/$$name.tar.gz $$name; rm -rf $(DIST_DIR)/$$name; built=$$((built+1)); \
	done; [ $$built -gt 0 ] || { echo "dist: nothing built"; exit 1; }; \
	cd $(DIST_DIR) && sha256sum *.tar.gz > SHA256SUMS && cat SHA256SUMS

# The container image the Kubernetes manifest names (search/fleet.DefaultImage).
IMAGE ?= ghcr.io/kevolve/kevolve-mcp
image:
	docker build -f cmd/kevolve-mcp/Dockerfile --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
	  --build-arg BUILD_DATE=$(BUILD_DATE) -t $(IMAGE):$(VERSION)-cpu -t $(IMAGE):cpu .
image-cuda:
	docker build -f cmd/kevolve-mcp/Dockerfile --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) \
	  --build-arg BUILD_DATE=$(BUILD_DATE) --build-arg BASE=nvidia/cuda:13.0.2-runtime-ubuntu24.04 \
	  --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu130 -t $(IMAGE):$(VERSION) -t $(IMAGE):latest .

# A CPU-only virtualenv with the GPU box's torch and triton versions. Made once
# and reused: PyPI's torch wheel is several GB.
# The stamp names the pins, so changing them reinstalls.
# Two `make test`s at once (two clones, one home) take turns at a lock: the
# second finds the stamp the first made and installs nothing.
VENV_STAMP  := $(VENV)/.pins-$(shell echo '$(PY_PINS)' | md5sum | cut -c1-10)
venv: $(VENV_STAMP)
$(VENV_STAMP):
	mkdir -p $(dir $(VENV))
	flock $(VENV).lock $(MAKE) --no-print-directory venv-install
venv-install:
	@if [ -e $(VENV_STAMP) ]; then exit 0; fi; \
	  python3 -m venv $(VENV) && \
	  echo "venv: downloading torch, triton and nvcc (about 5 GB, once) into $(VENV)" && \
	  $(VENV)/bin/pip install --progress-bar on $(PY_PINS) && touch $(VENV_STAMP)

# Independent MCP clients for the end-to-end tests: the official TypeScript
# SDK and the MCP conformance suite, with a Node 22 binary from npm (the suite
# needs Node >= 22; Debian's is 20).
# Without npm the client tests skip (.ci/deps has said so).
# The stamp names the lock file's content, not its time: a fresh clone's
# newer files must not reinstall (npm ci empties node_modules first, under
# the feet of another `make test`'s client tests), and a changed lock must.
NODE_STAMP  := $(NODE_DIR)/.ok-$(shell cat $(NODE_PKG)/package.json $(NODE_PKG)/package-lock.json | md5sum | cut -c1-10)
mcp-clients:
	@if command -v npm >/dev/null; then $(MAKE) --no-print-directory $(NODE_STAMP); \
	  else echo "mcp-clients: no npm: the independent MCP client tests skip"; fi
$(NODE_STAMP):
	mkdir -p $(NODE_DIR)
	flock $(NODE_DIR).lock $(MAKE) --no-print-directory node-install
node-install:
	@if [ -e $(NODE_STAMP) ]; then exit 0; fi; \
	  rm -f $(NODE_DIR)/.ok-* && cp $(NODE_PKG)/package.json $(NODE_PKG)/package-lock.json $(NODE_DIR)/ && \
	  (cd $(NODE_DIR) && npm ci --silent --no-audit --no-fund) && touch $(NODE_STAMP)

vet:
	$(GO) vet ./...

# The system packages the tests need (clang-19, chromium, slurm-wlm, munge,
# ...): installed where this machine allows (root with apt-get), otherwise
# named with the tests they skip. KEVOLVE_TEST_STRICT=1 (.ci/run sets it)
# turns a missing one, here and in the tests, into a failure.
deps:
	@.ci/deps

# The per-package limit is the slowest package's (harness: its few hundred
# real evaluations took 25 min on the idle 2-core CI host) with room for a
# loaded one (issue 33: no limit that needs an idle machine).
test: deps venv mcp-clients build
	$(GO) vet ./...
	KEVOLVE_PYTHON=$(VENV)/bin/python env $$([ -e $(NODE_STAMP) ] && echo KEVOLVE_NODE_DIR=$(NODE_DIR)) \
	  $(GO) test -count=1 -timeout 80m ./...

# The main job on whatever hardware is here: discovery, then an evolve run
# with the built-in tuner (no LLM) on a bundled problem: progress, the best
# kernel's speedup over its start, over eager and its % of SOL, the report.
# A GPU box's own torch is used where there is one; otherwise the CPU venv.
DEMO_PROBLEM ?= other/matmul_fp32
DEMO_BUDGET  ?= 20
run: build
	@if [ -x /opt/torch/.venv/bin/python3 ] || [ -n "$$KEVOLVE_PYTHON" ]; then :; else $(MAKE) --no-print-directory venv; fi
	./$(BIN) doctor
	@echo
	./$(BIN) evolve --problem $(DEMO_PROBLEM) --operator tuner --budget $(DEMO_BUDGET)

# GPU tests run on a machine with no Go toolchain: build every package's test
# binary here into .gpu/bin (the device tool carries at most 64 MiB, so they
# are stripped and gzipped), carry .gpu/bin there, and run `make test-gpu-run`.
GPU_PKGS ?= ./...
GPU_BIN  := .gpu/bin
gpu-bins:
	rm -rf $(GPU_BIN) && mkdir -p $(GPU_BIN)
	$(GO) build -ldflags='-s -w' -o $(GPU_BIN)/kevolve-mcp ./cmd/kevolve-mcp
	@for p in $$($(GO) list $(GPU_PKGS)); do \
	  n=$$(echo $$p | sed 's|github.com/kevolve/kevolve-mcp||; s|^/||; s|/|_|g'); \
	  $(GO) test -c -ldflags='-s -w' -o $(GPU_BIN)/$${n:-root}.test $$p >/dev/null || exit 1; \
	done; gzip -9 $(GPU_BIN)/*; du -sh $(GPU_BIN)

test-gpu: gpu-bins
	@echo "now, on the GPU machine (carry $(GPU_BIN)): make test-gpu-run"

# On the GPU machine: every test binary from its package folder, GPU tests on.
# The whole log goes to $${OUT:-.gpu}/test-gpu.log; the summary to stdout.
test-gpu-run:
	@for f in $(GPU_BIN)/*.gz; do [ -e "$$f" ] && gunzip -f "$$f"; done; chmod +x $(GPU_BIN)/*
	@log=$${OUT:-.gpu}/test-gpu.log; : > $$log; fail=0; for t in $(GPU_BIN)/*.test; do \
	  d=$$(basename $$t .test | tr _ /); \
	  start=$$(date +%s); echo "=== PACKAGE $$d" >> $$log; \
	  if (cd $$d && KEVOLVE_GPU=1 KEVOLVE_BIN=$(CURDIR)/$(GPU_BIN)/kevolve-mcp \
	      KEVOLVE_PYTHON=$${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3} \
	      $(CURDIR)/$$t -test.v -test.timeout 20m >> $$log 2>&1); then r=PASS; else r=FAIL; fail=1; fi; \
	  echo "$$r $$d ($$(( $$(date +%s) - start )) s)"; \
	done; grep -E "^(--- FAIL|FAIL|panic)" $$log | head -40; exit $$fail

# Benchmarks. Here (CPU): knowledge retrieval quality and latency, MCP round
# trips. For the GPU: the side-by-side run with KernelBench's own
# eval_kernel_against_ref, copied from a fetched checkout into the ignored
# .gpu/kb (never committed), carried with the test binary to the GPU machine.
KB_MIRROR ?= /work/.mirror/ScalingIntelligence+KernelBench/repo
bench: venv
	$(GO) test -run '^$$' -bench . -benchtime 200x ./retrieval ./tools ./search/fleet
	@if [ -d "$(KB_MIRROR)" ]; then $(MAKE) --no-print-directory bench-gpu-prep; \
	  else echo "KernelBench side-by-side: set KB_MIRROR to a KernelBench checkout"; fi

# Issue 36's agent session on this host beside a load of its own: eager
# medians' spread, noisy flags, fitness and the profile's per-call time.
bench-session: build venv
	cd cmd/kevolve-mcp && KEVOLVE_SESSION_LOAD=1 KEVOLVE_BIN=$(CURDIR)/$(BIN) KEVOLVE_PYTHON=$(VENV)/bin/python \
	  $(GO) test -run '^TestAgentSessionUnderLoad$$' -count=1 -v -timeout 30m .

bench-gpu-prep:
	rm -rf .gpu/bench && mkdir -p .gpu/bench
	PYTHON=$(VENV)/bin/python harness/testdata/kernelbench/prepare.sh .gpu/kb $(KB_MIRROR)
	$(GO) test -c -ldflags='-s -w' -o .gpu/bench/harness.test ./harness
	gzip -9 .gpu/bench/harness.test; du -sh .gpu/bench .gpu/kb
	@echo "now on the GPU machine (carry .gpu/bench .gpu/kb): make bench-run [BENCH_ONLY=regexp] [BENCH_SKIP_KB=1]"

bench-run:
	@[ ! -e .gpu/bench/harness.test.gz ] || gunzip -f .gpu/bench/harness.test.gz; chmod +x .gpu/bench/harness.test
	cd harness && KEVOLVE_GPU=1 KEVOLVE_TEST_STRICT=1 KEVOLVE_KB_DIR=$(CURDIR)/.gpu/kb \
	  KEVOLVE_PYTHON=$${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3} KEVOLVE_BENCH_OUT=$${OUT:-$(CURDIR)/.gpu/bench} \
	  KEVOLVE_BENCH_ONLY='$(BENCH_ONLY)' KEVOLVE_BENCH_DEADLINE_S=$${BENCH_DEADLINE_S:-0} KEVOLVE_BENCH_SKIP_KB=$(BENCH_SKIP_KB) \
	  $(CURDIR)/.gpu/bench/harness.test -test.run '^TestBenchKernelBench$$' -test.v -test.timeout 60m

# The reference-as-candidate sweep of KernelBench levels 1-3 (issue 9's
# regression: 250 verdicts, all integrity_violation via reference_ops). Here:
# the binary and .gpu/kb; there: `make kb-sweep-run`, results in $$OUT.
kb-sweep-prep:
	rm -rf .gpu/sweep && mkdir -p .gpu/sweep
	[ -d .gpu/kb/KernelBench/level3 ] || PYTHON=$(VENV)/bin/python harness/testdata/kernelbench/prepare.sh .gpu/kb $(KB_MIRROR)
	$(GO) build -ldflags='-s -w' -o .gpu/sweep/kevolve-mcp ./cmd/kevolve-mcp
	gzip -9 .gpu/sweep/kevolve-mcp; du -sh .gpu/sweep .gpu/kb
	@echo "now on the GPU machine (carry .gpu/sweep .gpu/kb): make kb-sweep-run"

kb-sweep-run:
	@[ ! -e .gpu/sweep/kevolve-mcp.gz ] || gunzip -f .gpu/sweep/kevolve-mcp.gz; chmod +x .gpu/sweep/kevolve-mcp
	harness/testdata/kernelbench/sweep.sh .gpu/sweep/kevolve-mcp .gpu/kb $${OUT:-.gpu/sweep/out}

# fast_p and geomean of issue 3's 23 bench candidates (corpus/kernelbench), same binary.
kb-fastp-run:
	@[ ! -e .gpu/sweep/kevolve-mcp.gz ] || gunzip -f .gpu/sweep/kevolve-mcp.gz; chmod +x .gpu/sweep/kevolve-mcp
	out=$${OUT:-.gpu/sweep/out}; mkdir -p $$out; timeout -s INT -k 20 540 .gpu/sweep/kevolve-mcp \
	  --python $${KEVOLVE_PYTHON:-/opt/torch/.venv/bin/python3} --db $$(mktemp -d)/k.db --log-level warn \
	  kernelbench run --kb .gpu/kb --level 1,2 --candidates 'corpus/kernelbench/level*/*/*.py' --target nvidia \
	  --jsonl $$out/kb-fastp.jsonl --summary $$out/kb-fastp-summary.json 2> $$out/kb-fastp.log | tee $$out/kb-fastp.txt

# The real-kernel regression set (issue 20): third-party KernelBench
# solutions, labelled in harness/testdata/kernelbench/regress.tsv before any
# run, laid out from local mirrors (fetched at test time, never committed)
# beside KernelBench's problems at c6c4ab6 in the ignored .gpu/regress.
# There: `make kb-regress-run` (again to resume after a slot's limit);
# the agreement is in $$OUT/regress-compare.txt.
CUDAL1_MIRROR ?= /work/.mirror/deepreinforce-ai+CUDA-L1/repo
kb-regress-prep:
	rm -rf .gpu/regress && mkdir -p .gpu/regress
	harness/testdata/kernelbench/regress_prep.sh .gpu/regress/set $(KB_MIRROR) $(CUDAL1_MIRROR)
	$(GO) build -ldflags='-s -w' -o .gpu/regress/kevolve-mcp ./cmd/kevolve-mcp
	gzip -9 .gpu/regress/kevolve-mcp; du -sh .gpu/regress
	@echo "now on the GPU machine (carry .gpu/regress): make kb-regress-run"

# Independent build evidence for the table (nothing of kevolve): each laid-out
# candidate's own load_inline calls built with plain torch. Off a GPU, set
# CUDA_HOME to a toolkit (the venv's nvidia/cu13 wheel folder will do, with
# its bin/ on PATH) and TORCH_CUDA_ARCH_LIST=9.0: compile errors need no device.
kb-regress-buildcheck:
	cd .gpu/regress/set/candidates && $${KEVOLVE_PYTHON:-$(VENV)/bin/python} $(CURDIR)/harness/testdata/kernelbench/regress_build_check.py \
	  $$(grep -l load_inline level*/*.py) | tee ../../build-check.txt

kb-regress-run:
	@[ ! -e .gpu/regress/kevolve-mcp.gz ] || gunzip -f .gpu/regress/kevolve-mcp.gz; chmod +x .gpu/regress/kevolve-mcp
	harness/testdata/kernelbench/regress_run.sh .gpu/regress/kevolve-mcp .gpu/regress/set $${OUT:-.gpu/regress/out}

# Issue 22's throughput set: every load_inline kernel of CUDA-L1's published
# H100 file (levels 1-2), evaluated with empty caches and a fresh database;
# SET=leaderboard: issue 34's, 32 KernelBench-leaderboard solutions that build.
# There: `make kb-throughput-run [RERUN=1]`; evaluations a minute in $$OUT/tput.
kb-throughput-prep:
	rm -rf .gpu/tput && SET=$(SET) harness/testdata/kernelbench/throughput_prep.sh .gpu/tput $(KB_MIRROR) $(CUDAL1_MIRROR)
	$(GO) build -ldflags='-s -w' -o .gpu/tput/kevolve-mcp ./cmd/kevolve-mcp
	gzip -9 .gpu/tput/kevolve-mcp; du -sh .gpu/tput
	@echo "now on the GPU machine (carry .gpu/tput): make kb-throughput-run"

kb-throughput-run:
	@[ ! -e .gpu/tput/kevolve-mcp.gz ] || gunzip -f .gpu/tput/kevolve-mcp.gz; chmod +x .gpu/tput/kevolve-mcp
	RERUN=$(RERUN) harness/testdata/kernelbench/throughput_run.sh $(CURDIR)/.gpu/tput/kevolve-mcp .gpu/tput $${OUT:-.gpu/tput/out}/tput

clean:
	rm -rf bin dist $(GPU_BIN)
