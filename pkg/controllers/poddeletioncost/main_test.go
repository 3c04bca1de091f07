package poddeletioncost_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// The API server alone: nodes, NodeClaims and pods are written by the
// test (pods bound by name, nothing runs them), and no controller manager
// acts on the ReplicaSet that owns them.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}
