package operator_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// The operator tests run whole scenarios: PDBs (controller manager), pods
// (kwok) and the scheduler for anything pending.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Scheduler: true, Kwok: true}, &cp))
}
