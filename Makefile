# dovetail: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

CONTROLLER_GEN := go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
GO_TEST_TIMEOUT ?= 22m

.PHONY: all build run test controlplane generate verify-generated vet unit fmt-check clean fuzz

all: build

## build: compile the dovetail binary to bin/dovetail
build:
	go build -o bin/dovetail ./cmd/dovetail

## controlplane: build (or reuse) the pinned Kubernetes binaries in the per-version cache
controlplane:
	@cd tools && go run ./cmd/build-controlplane >/dev/null

## generate: regenerate deepcopy, CRDs and the built-in instance catalog
generate:
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=api/crds
	go run ./pkg/catalog/internal/gen -data ../shared/data/ec2 -out pkg/catalog/data

## verify-generated: fail when checked-in generated files are stale
verify-generated:
	@hack/verify-generated.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...
	cd tools && go vet ./...

## test: everything CI checks (builds the control plane on first use)
test: controlplane fmt-check verify-generated vet
	DOVETAIL_CONTROLPLANE_DIR=$$(cd tools && go run ./cmd/build-controlplane 2>/dev/null) \
	  go test -timeout $(GO_TEST_TIMEOUT) ./...

## fuzz: run each fuzz target for FUZZ_TIME (default 60s); not part of `make test` (their seed corpora are)
FUZZ_TIME ?= 60s
FUZZ_TARGETS := ./pkg/simulate:FuzzExpand ./pkg/simulate:FuzzSimulate ./pkg/simulate:FuzzJSONString
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "fuzz $$pkg $$name for $(FUZZ_TIME)"; \
	  go test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME); \
	done

## run: the demo: local stack + examples/, a sample workload scaled up, a spot interruption, a live view (Ctrl-C stops)
run: build controlplane
	bin/dovetail local demo --apply examples/ $(RUN_FLAGS)

clean:
	rm -rf bin .dovetail
