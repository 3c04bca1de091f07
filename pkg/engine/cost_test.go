package engine_test

import (
	"math"
	"sort"
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

// costLimit is the rule of the cost tests: within 10% of the bound under
// 500 pods, within 5% from 500 pods.
func costLimit(pods int) float64 {
	if pods < 500 {
		return 1.10
	}
	return 1.05
}

// knownCostGaps are family cases whose plans are valid but above the rule
// (issue 14): reported, not asserted, until the plans or the bound close
// them. None is left: a case added here must say why.
var knownCostGaps = map[string]bool{}

// runFamilyCosts solves every case, checks the plan and the rule, and logs
// the distribution of gaps per family (min, median, p90, max).
func runFamilyCosts(t *testing.T, cases []workload.FamilyCase) {
	gaps := map[string][]float64{}
	var order []string
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			in := c.Input()
			start := time.Now()
			plan, err := engine.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			gap := plan.PricePerHour / plan.LowerBound
			if _, ok := gaps[c.Family]; !ok {
				order = append(order, c.Family)
			}
			gaps[c.Family] = append(gaps[c.Family], gap)
			limit := costLimit(len(in.Pods))
			t.Logf("pods=%d claims=%d unsched=%d price=%.4f bound=%.4f gap=%.4f constr=%.4f time=%v", len(in.Pods), len(plan.NodeClaims), len(plan.Unschedulable), plan.PricePerHour, plan.LowerBound, gap, plan.Stats.ConstructionPrice, el)
			if len(plan.Unschedulable) > 0 {
				t.Errorf("unschedulable: %v", plan.Unschedulable[0])
			}
			if errs := checkPlan(in, plan); len(errs) > 0 {
				t.Errorf("invalid plan:\n%s", describeErrs(errs))
			}
			switch {
			case knownCostGaps[c.Name()] && gap <= limit:
				t.Errorf("known gap %s now meets the rule (%.4f <= %.2f): remove it from knownCostGaps", c.Name(), gap, limit)
			case knownCostGaps[c.Name()]:
				t.Logf("known gap: %.4f (rule %.2f)", gap, limit)
			case !(gap <= limit):
				t.Errorf("gap %.4f above %.2f", gap, limit)
			}
		})
	}
	for _, f := range order {
		g := append([]float64(nil), gaps[f]...)
		sort.Float64s(g)
		q := func(p float64) float64 { return g[int(math.Ceil(p*float64(len(g))))-1] }
		t.Logf("%-26s n=%d min=%.4f median=%.4f p90=%.4f max=%.4f", f, len(g), g[0], q(0.5), q(0.9), g[len(g)-1])
	}
}

// TestCostFamilies solves the tuning families (workload.TuningFamilies).
func TestCostFamilies(t *testing.T) { runFamilyCosts(t, workload.TuningFamilies()) }

// TestCostHeldOut solves the held-out family (workload.HeldOutFamily):
// shapes and seeds no tuning looked at.
func TestCostHeldOut(t *testing.T) { runFamilyCosts(t, workload.HeldOutFamily()) }
