package provisioning_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// Provisioning needs the kube-scheduler (it marks pods unschedulable), kwok
// (nodes become Ready, pods Running) and the controller manager (it lifts
// the not-ready taint admission puts on new Nodes).
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{ControllerManager: true, Scheduler: true, Kwok: true}, &cp))
}
