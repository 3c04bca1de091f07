package eventsink_test

import (
	"os"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

var cp *controlplane.ControlPlane

// An API server and etcd are all the recorder needs.
func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}
