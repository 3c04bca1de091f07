package lifecycle_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// The lifecycle needs kwok (nodes become Ready) and the controller manager
// (its node lifecycle controller lifts the not-ready taint that admission
// puts on every new Node).
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Kwok: true}, &cp))
}
