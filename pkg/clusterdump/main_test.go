package clusterdump_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// A cluster without dovetail's (or the peer's) CRDs: what a Cluster
// Autoscaler cluster looks like to a snapshot.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{SkipCRDs: true}, &cp))
}
