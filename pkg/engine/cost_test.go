package engine_test

import (
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

// TestCostMixed solves the seeded mixed workloads over the built-in
// us-east-1 catalog and checks the plan's price against the lower bound:
// within 10% for about 100 pods, within 5% for thousands.
func TestCostMixed(t *testing.T) {
	for _, m := range workload.MixedScenarios() {
		t.Run(m.Name, func(t *testing.T) {
			in := m.Input()
			start := time.Now()
			plan, err := engine.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			gap := plan.PricePerHour / plan.LowerBound
			limit := 1.05
			if len(in.Pods) < 500 {
				limit = 1.10
			}
			t.Logf("%-16s pods=%d claims=%d unsched=%d price=%.4f bound=%.4f gap=%.4f constr=%.4f time=%v", m.Name, len(in.Pods), len(plan.NodeClaims), len(plan.Unschedulable), plan.PricePerHour, plan.LowerBound, gap, plan.Stats.ConstructionPrice, el)
			if len(plan.Unschedulable) > 0 {
				t.Errorf("unschedulable: %v", plan.Unschedulable[0])
			}
			if errs := checkPlan(in, plan); len(errs) > 0 {
				t.Errorf("invalid plan:\n%s", describeErrs(errs))
			}
			if !(gap <= limit) {
				t.Errorf("gap %.4f above %.2f", gap, limit)
			}
		})
	}
}
