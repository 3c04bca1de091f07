package termination_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// No Node ever registers in these tests: the API server alone suffices.
// The drain itself is tested in package node/termination.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}
