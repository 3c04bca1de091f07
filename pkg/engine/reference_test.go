package engine_test

import (
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// TestReferenceWorkload solves the benchmark's reference workload and
// checks, independently, that every pod is placed and the plan is valid.
func TestReferenceWorkload(t *testing.T) {
	for _, n := range []int{200, 1000} {
		in := workload.Reference(n, workload.ReferenceSeed)
		plan, err := engine.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Unschedulable) > 0 {
			t.Errorf("n=%d: %d unschedulable, first %+v", n, len(plan.Unschedulable), plan.Unschedulable[0])
		}
		if errs := checkPlan(in, plan); len(errs) > 0 {
			t.Errorf("n=%d: invalid plan:\n%s", n, describeErrs(errs))
		}
		// Hostname anti-affinity alone forces one node per nginx pod.
		if got, want := len(plan.NodeClaims), n/5; got < want {
			t.Errorf("n=%d: %d claims, anti-affinity needs at least %d", n, got, want)
		}
		t.Logf("n=%d claims=%d price=%.2f bound=%.2f gap=%.4f", n, len(plan.NodeClaims), plan.PricePerHour, plan.LowerBound, plan.PricePerHour/plan.LowerBound)
	}
}
