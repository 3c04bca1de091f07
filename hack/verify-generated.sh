#!/usr/bin/env bash
# Regenerates every checked-in generated file and fails when any of them
# changed, naming the stale files. The catalog is regenerated only where its
# source data (../shared/data/ec2, outside the repository) is present.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local

generated() {
  { git ls-files -co --exclude-standard -- 'api/**/zz_generated.deepcopy.go' 'api/crds/*.yaml' 'charts/dovetail/crds/*.yaml' 'charts/dovetail-crd/templates/karpenter*.yaml' 'charts/dovetail-crd/templates/autoscaling.x-k8s.io_*.yaml' 'pkg/catalog/data/*' 'pkg/catalog/testdata/karpenter-allocatable.json'; } | sort -u
}
snapshot() { for f in $(generated); do printf '%s %s\n' "$(sha256sum <"$f" | cut -d' ' -f1)" "$f"; done; }

before=$(snapshot)
CONTROLLER_GEN="go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"
echo "verify-generated: regenerating deepcopy and CRDs" >&2
$CONTROLLER_GEN object paths=./api/...
$CONTROLLER_GEN crd paths=./api/... output:crd:artifacts:config=api/crds
go run ./api/crds/internal/patchcrds api/crds
# The charts carry copies of the CRDs (make charts).
cp api/crds/*.yaml charts/dovetail/crds/
cp api/crds/*.yaml charts/dovetail-crd/templates/
if [ -d ../shared/data/ec2 ] && [ -d pkg/catalog/internal/gen ]; then
  echo "verify-generated: regenerating the built-in catalog" >&2
  go run ./pkg/catalog/internal/gen -data ../shared/data/ec2 -out pkg/catalog/data
else
  echo "verify-generated: catalog source data not present here; checking the deepcopy and CRDs only" >&2
fi
after=$(snapshot)
if [ "$before" != "$after" ]; then
  echo "generated files are stale (they have now been regenerated; review and commit):" >&2
  diff <(echo "$before") <(echo "$after") | grep '^[<>]' | awk '{print "  " $3}' | sort -u >&2
  exit 1
fi
echo "verify-generated: up to date" >&2
