// Package charts holds dovetail's Helm charts (dovetail and dovetail-crd)
// and their tests; it has no Go code of its own.
//
// charts/dovetail/files/rbac is a symbolic link to config/rbac (helm
// follows it; `helm package` resolves it), so the chart's RBAC has one
// source. The CRDs in both charts are copies of api/crds: `make charts`
// (and `make generate`) refresh them and the tests here fail when they
// drift. The tests run the Helm
// CLI built from the Go module proxy by tools/helm (DOVETAIL_HELM names a
// binary to use instead): lint, template with the defaults, with the peer's
// documented values, with the peer's own values.yaml (fetched through the
// Go module proxy, internal/peermodule) beside the peer's chart rendered
// with it, each value against what `dovetail controller` accepts, the
// values schema, without clusterName, and an install, upgrade and
// uninstall on the local stack with the controller running under the
// chart's ServiceAccount token.
//
// Must not: hold templates' logic that the controller should own, or a
// second copy of the RBAC rules.
package charts
