package capacitybuffer_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// Buffers need nodes that become Ready and run pods (kwok, and the
// controller manager to lift the not-ready taint and to collect a
// buffer's owned PodTemplate); real pods are bound by name, so no
// scheduler.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Kwok: true}, &cp))
}
