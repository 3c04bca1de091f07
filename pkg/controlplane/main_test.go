package controlplane_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

// cp is the package's shared control plane, with every component.
var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(m, mode))
	}
	os.Exit(controlplanetest.Main(m, controlplane.Options{
		ControllerManager: true,
		Scheduler:         true,
		Kwok:              true,
		AuditUsers:        []string{auditedUser},
	}, &cp))
}
