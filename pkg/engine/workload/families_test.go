package workload_test

import (
	"reflect"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// TestFamiliesDeterministic checks that every family case builds the same
// input twice, has pods, and that the held-out family shares no seed with
// the tuning families.
func TestFamiliesDeterministic(t *testing.T) {
	tuning := map[uint64]bool{}
	for _, c := range workload.TuningFamilies() {
		tuning[c.Seed] = true
	}
	all := append(workload.TuningFamilies(), workload.HeldOutFamily()...)
	for _, c := range all {
		a, b := c.Input(), c.Input()
		if len(a.Pods) == 0 {
			t.Errorf("%s: no pods", c.Name())
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: two builds differ", c.Name())
		}
		t.Logf("%s pods=%d pools=%d daemonsets=%d", c.Name(), len(a.Pods), len(a.NodePools), len(a.DaemonSets))
	}
	for _, c := range workload.HeldOutFamily() {
		if tuning[c.Seed] {
			t.Errorf("%s: seed %d is a tuning seed", c.Name(), c.Seed)
		}
		if c.Knobs == workload.TuningKnobs {
			t.Errorf("%s: held-out case has the tuning knobs", c.Name())
		}
	}
}
