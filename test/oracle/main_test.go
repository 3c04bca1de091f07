package oracle_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	// kube-scheduler judges the placements; kwok plays the kubelets. No
	// controller manager: the oracle creates daemonset pods itself and
	// binds volumes itself, so nothing else acts on the objects.
	os.Exit(controlplanetest.Main(m, controlplane.Options{Scheduler: true, Kwok: true, SkipCRDs: true}, &cp))
}
