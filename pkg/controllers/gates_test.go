package controllers_test

import (
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/dovetail-sh/dovetail/pkg/controllers"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// The pod deletion cost controller runs with its gate on, and only then.
func TestPodDeletionCostGate(t *testing.T) {
	for _, on := range []bool{false, true} {
		clk := clock.RealClock{}
		ctrls, err := controllers.NewControllers(controllers.Deps{
			Cloud: controllerstest.NewCloud(), Clock: clk, Metrics: metrics.NewRegistry(), Unavailable: unavailable.New(clk, 0),
		}, controllers.Config{LaunchTimeout: time.Minute, RegistrationTimeout: time.Minute, PodDeletionCostManagement: on})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, c := range ctrls {
			if c.Name() == "pod.deletioncost" {
				found = true
			}
		}
		if found != on {
			t.Errorf("gate %v: pod.deletioncost running = %v", on, found)
		}
	}
}
