# dovetail: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
export GOTOOLCHAIN := local
export GOFLAGS := -buildvcs=false

CONTROLLER_GEN := go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
GO_TEST_TIMEOUT ?= 35m

.PHONY: all build run test controlplane chromium generate verify-generated vet unit fmt-check clean charts helm image terraform-iam tofu-fmt test-e2e-long fuzz soak soak-cycle test-upstream test-takeover

all: build

## build: compile the dovetail binary to bin/dovetail
build:
	go build -o bin/dovetail ./cmd/dovetail

## controlplane: build (or reuse) the pinned Kubernetes binaries in the per-version cache
controlplane:
	@cd tools && go run ./cmd/build-controlplane >/dev/null

## chromium: install Debian's chromium for the cost --html test (no-op when installed)
chromium:
	@hack/install-chromium.sh

## generate: regenerate deepcopy, CRDs and the built-in instance catalog
generate:
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=api/crds
	go run ./api/crds/internal/patchcrds api/crds
	cp api/crds/*.yaml charts/dovetail/crds/ && cp api/crds/*.yaml charts/dovetail-crd/templates/
	go run ./pkg/catalog/internal/gen -data ../shared/data/ec2 -out pkg/catalog/data

## verify-generated: fail when checked-in generated files are stale
verify-generated:
	@hack/verify-generated.sh

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	go vet ./...
	cd tools && go vet ./...
	cd tools/helm && go vet ./...
	cd tools/tofu && go vet ./...

## test: everything CI checks (builds the control plane on first use)
test: controlplane helm chromium fmt-check verify-generated vet
	DOVETAIL_CONTROLPLANE_DIR=$$(cd tools && go run ./cmd/build-controlplane 2>/dev/null) \
	DOVETAIL_HELM=$$(cd tools/helm && go run ./cmd/build-helm 2>/dev/null) \
	  go test -timeout $(GO_TEST_TIMEOUT) ./...

## test-e2e-long: the long disruption scenarios (scale-down 500 -> 100 pods, no churn under a descheduler, 20 kills during a consolidation), not part of make test
test-e2e-long: controlplane
	go vet -tags e2elong ./test/e2e/
	DOVETAIL_CONTROLPLANE_DIR=$$(cd tools && go run ./cmd/build-controlplane 2>/dev/null) \
	  go test -tags e2elong -run 'ScaleDown|NoChurn|ConsolidationCrash20' -timeout 30m -v ./test/e2e/

## fuzz: run each fuzz target for FUZZ_TIME (default 60s); not part of `make test` (their seed corpora are)
FUZZ_TIME ?= 60s
FUZZ_TARGETS := ./pkg/simulate:FuzzExpand ./pkg/simulate:FuzzSimulate ./pkg/simulate:FuzzJSONString
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "fuzz $$pkg $$name for $(FUZZ_TIME)"; \
	  go test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_TIME); \
	done

## soak: the full-cycle soak (soak-cycle, at most 25 min) then `make fuzz` (60 s per target); not part of `make test`; see docs/soak.md
soak:
	$(MAKE) soak-cycle
	$(MAKE) fuzz

## soak-cycle: scale-up, spot interruptions, 30% throttling + ICE, scale-down with consolidation, drift, 50 controller SIGKILLs on the local stack (SOAK_FLAGS, e.g. -keep)
SOAK_FLAGS ?=
soak-cycle: build controlplane
	go vet ./test/soak/
	go build -o bin/soak ./test/soak
	DOVETAIL_CONTROLPLANE_DIR=$$(cd tools && go run ./cmd/build-controlplane 2>/dev/null) \
	  bin/soak -binary bin/dovetail -repo . -report bin/soak-report.json $(SOAK_FLAGS)

## test-upstream: the peer's own regression and disruption suites (fetched and built via the module proxy into a scratch module outside the repo), one fresh local stack per spec; results in bin/upstream-results/results.md; fails when a result differs from test/upstream/expectations.txt; not part of `make test` (hours); UPSTREAM_FLAGS, e.g. -focus 'Expiration' -spec-timeout 10m; see docs/testing.md
UPSTREAM_FLAGS ?=
test-upstream: build controlplane
	go vet ./test/upstream/
	go build -o bin/upstream ./test/upstream
	DOVETAIL_CONTROLPLANE_DIR=$$(cd tools && go run ./cmd/build-controlplane 2>/dev/null) \
	  bin/upstream -binary bin/dovetail -out bin/upstream-results $(UPSTREAM_FLAGS)

## test-takeover: the real peer (Karpenter, built from the Go module proxy at run time, ~25 min cold) provisions on the local stack, dovetail takes over in place, the workload grows, the peer takes over again; fails on any deletion, drift, Pending pod or reconcile error (hack/takeover/takeover.sh; TAKEOVER_DIR keeps binaries); not part of `make test`
test-takeover: controlplane helm
	hack/takeover/takeover.sh

## run: the demo: local stack + examples/, a sample workload scaled up, a spot interruption, a live view (Ctrl-C stops)
run: build controlplane
	bin/dovetail local demo --apply examples/ $(RUN_FLAGS)

## image: the controller image (OCI index, linux/amd64 + linux/arm64, empty base) as an OCI layout in bin/image and bin/image.tar
IMAGE_VERSION ?= $(shell sed -n 's/^appVersion: "\(.*\)"/\1/p' charts/dovetail/Chart.yaml)
image:
	go run ./hack/image -version $(IMAGE_VERSION) -out bin/image

## charts: refresh the charts' copies of api/crds (charts/ tests check them; the RBAC is a link to config/rbac)
charts:
	cp api/crds/*.yaml charts/dovetail/crds/
	cp api/crds/*.yaml charts/dovetail-crd/templates/

## terraform-iam: refresh deploy/terraform's copy of docs/iam (its test checks it)
terraform-iam:
	cp docs/iam/*.json deploy/terraform/iam/

## tofu-fmt: `tofu fmt -check` on deploy/terraform, with OpenTofu built (or reused) from the Go module proxy by tools/tofu
tofu-fmt:
	$$(cd tools/tofu && go run ./cmd/build-tofu) fmt -check -recursive -diff deploy/terraform

## helm: build (or reuse) the pinned Helm CLI in the per-version cache
helm:
	@cd tools/helm && go run ./cmd/build-helm >/dev/null

clean:
	rm -rf bin .dovetail
