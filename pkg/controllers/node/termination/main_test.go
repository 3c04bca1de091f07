package termination_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// Drains need the whole cluster: the controller manager computes PDB
// status and runs DaemonSets, the scheduler places DaemonSet pods, kwok
// runs pods and removes deleted ones.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Scheduler: true, Kwok: true}, &cp))
}
