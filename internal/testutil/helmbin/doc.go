// Package helmbin finds the pinned Helm CLI for tests: $DOVETAIL_HELM, else
// the one tools/helm's build-helm builds (or finds in its per-version
// cache); and reads the environment a rendered Deployment gives its
// controller.
//
// What must not live here: anything production code uses.
package helmbin
