package e2e_test

import (
	"fmt"
	"testing"
	"time"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// TestBudgetPercent: a pool with the budget nodes: "20%" scales down from
// 22 nodes to 2; a watch on Nodes and NodeClaims over the whole scale-down
// never sees more than ceil(20% of the pool's initialized nodes)
// disrupting (tainted karpenter.sh/disrupted or being deleted), and sees
// several at once (the budget is used, not just respected by going one at
// a time).
func TestBudgetPercent(t *testing.T) {
	const pool, before, after = "pct", 22, 2
	s := newScenario(t)
	s.pool(pool, func(np *karpv1.NodePool) {
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("5s")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "20%"}}
	})
	s.deployment("web", before, "100m", "128Mi", onPool(pool, spreadByHost("web")))
	s.waitRunning(before, 4*time.Minute)
	eventually(t, time.Minute, fmt.Sprintf("%d initialized NodeClaims", before), func() (bool, error) {
		n := 0
		for _, nc := range poolClaims(t, pool) {
			if nc.IsTrue(karpv1.ConditionTypeInitialized) {
				n++
			}
		}
		if n != before {
			return false, fmt.Errorf("%d initialized", n)
		}
		return true, nil
	})

	t.Cleanup(func() {
		if t.Failed() {
			logKeptReasons(t)
		}
	})
	w := watchFleet(t, pool, 20)
	begin := time.Now()
	s.scale("web", after)
	eventually(t, 6*time.Minute, fmt.Sprintf("the pool down to %d nodes", after), func() (bool, error) {
		if n := len(poolClaims(t, pool)); n != after {
			return false, fmt.Errorf("%d NodeClaims in pool %s", n, pool)
		}
		return true, nil
	})
	s.waitRunning(after, time.Minute)
	w.stop()
	most, violations := w.result()
	t.Logf("%d -> %d nodes in %s; at most %d disrupting at once", before, after, time.Since(begin).Round(time.Second), most)
	for _, v := range violations {
		t.Errorf("budget 20%% exceeded at %s", v)
	}
	if most < 2 {
		t.Errorf("at most %d node disrupting at once: a 20%% budget of %d nodes allows %d", most, before, (before*20+99)/100)
	}
}
