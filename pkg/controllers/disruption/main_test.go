package disruption_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// Disruption needs nodes that become Ready and run pods (kwok, and the
// controller manager to lift the not-ready taint); pods are bound by name,
// so no scheduler.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Kwok: true}, &cp))
}
