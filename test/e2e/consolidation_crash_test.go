package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// consolidationCrashNodes is how many nodes the crash scenario
// consolidates: each is replaced by a cheaper one.
const consolidationCrashNodes = 16

// consolidationCrashSetup builds the scenario: an on-demand arm64 pool
// (so replacements need no SpotToSpotConsolidation gate) with the given
// budget, 16 nodes each running one 3-CPU "big" pod and one 200m "small" pod
// (both spread one per host), then "big" scaled to 0: every node is left
// with one small pod on a 4-vCPU node and is replaced by a smaller one
// (the small pods' host spread forbids packing them). It returns the
// NodeClaims before the scale-down.
func consolidationCrashSetup(s *scenario, pool, budget string) []karpv1.NodeClaim {
	s.t.Helper()
	s.pool(pool, func(np *karpv1.NodePool) {
		np.Spec.Template.Spec.Requirements[1].Values = []string{karpv1.CapacityTypeOnDemand}
		np.Spec.Disruption.ConsolidateAfter = karpv1.MustParseNillableDuration("5s")
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: budget}}
	})
	s.deployment("big", consolidationCrashNodes, "3", "2Gi", onPool(pool, spreadByHost("big")))
	s.deployment("small", consolidationCrashNodes, "200m", "256Mi", onPool(pool, spreadByHost("small")))
	s.waitRunning(2*consolidationCrashNodes, 4*time.Minute)
	before := poolClaims(s.t, pool)
	if len(before) != consolidationCrashNodes {
		s.t.Fatalf("%d NodeClaims in pool %s, want %d", len(before), pool, consolidationCrashNodes)
	}
	s.scale("big", 0)
	return before
}

// consolidationSettled waits until no NodeClaim of before is left, the
// pool has exactly one node per small pod (no duplicate replacement),
// every small pod runs, no node carries the disrupted taint, and
// instances and NodeClaims match one to one (no orphan instance). It
// returns the pool's $/h.
func consolidationSettled(t *testing.T, s *scenario, pool string, before []karpv1.NodeClaim, timeout time.Duration) float64 {
	t.Helper()
	old := map[string]bool{}
	for _, nc := range before {
		old[nc.Name] = true
	}
	eventually(t, timeout, "every node replaced once, pods Running, no taint, no orphan", func() (bool, error) {
		claims := poolClaims(t, pool)
		var left []string
		for _, nc := range claims {
			if old[nc.Name] {
				left = append(left, nc.Name)
			}
		}
		if len(left) > 0 {
			return false, fmt.Errorf("%d original NodeClaims left (%s)", len(left), strings.Join(left, ", "))
		}
		if len(claims) != consolidationCrashNodes {
			return false, fmt.Errorf("%d NodeClaims in the pool, want %d (one per small pod)", len(claims), consolidationCrashNodes)
		}
		running, pending, err := s.running()
		if err != nil || running != consolidationCrashNodes {
			return false, fmt.Errorf("%d pods running, %d pending (%v)", running, pending, err)
		}
		for _, n := range managedNodes(t) {
			for _, taint := range n.Spec.Taints {
				if taint.Key == karpv1.DisruptedTaintKey {
					return false, fmt.Errorf("node %s still tainted %s", n.Name, taint.Key)
				}
			}
		}
		if err := consistent(t); err != nil {
			return false, err
		}
		// No deleting NodeClaim lingers either.
		for _, nc := range nodeClaims(t) {
			if nc.DeletionTimestamp != nil {
				return false, fmt.Errorf("NodeClaim %s still being deleted", nc.Name)
			}
		}
		return true, nil
	})
	var price float64
	for _, nc := range poolClaims(t, pool) {
		p, _ := nodeclaimutil.HourlyPrice(&nc)
		price += p
	}
	return price
}

// killDuringConsolidation SIGKILLs and restarts the controller kills
// times, each at a seeded random moment 0-1.5 s after a disruption
// command is seen in progress (a NodeClaim of the pool carries the command
// annotation: a candidate not removed yet), so every kill lands inside the consolidation: in
// its validation, launch, registration, drain or deletion. It fails when
// the consolidation ends before every kill landed.
func killDuringConsolidation(t *testing.T, s *scenario, pool string, before []karpv1.NodeClaim, kills int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	old := map[string]bool{}
	for _, nc := range before {
		old[nc.Name] = true
	}
	for i := range kills {
		eventually(t, 2*time.Minute, fmt.Sprintf("a command in progress before kill %d", i+1), func() (bool, error) {
			originals := 0
			for _, nc := range nodeClaims(t) {
				if nc.Labels[karpv1.NodePoolLabelKey] != pool {
					continue
				}
				if old[nc.Name] && nc.DeletionTimestamp == nil {
					originals++
				}
				if nc.Annotations[disruption.CommandAnnotationKey] != "" {
					return true, nil
				}
			}
			return false, fmt.Errorf("no command in progress, %d original NodeClaims left", originals)
		})
		timer := time.NewTimer(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
		<-timer.C
		if err := ctrl.Kill(0); err != nil {
			t.Fatal(err)
		}
		if err := ctrl.Restart(s.ctx, 0); err != nil {
			t.Fatalf("restart %d: %v", i+1, err)
		}
	}
}

// TestConsolidationCrash kills the controller (SIGKILL) at 3 seeded
// moments while 16 nodes are being replaced by cheaper ones; afterwards
// every original node is gone, each small pod has exactly one node (no
// duplicate replacement), no node is left tainted, every pod runs and
// every instance has its NodeClaim. The 20-kill variant with an
// uninterrupted baseline runs in `make test-e2e-long`
// (TestConsolidationCrash20, build tag e2elong).
func TestConsolidationCrash(t *testing.T) {
	s := newScenario(t)
	before := consolidationCrashSetup(s, "crashc", "50%")
	begin := time.Now()
	killDuringConsolidation(t, s, "crashc", before, 3, 15)
	price := consolidationSettled(t, s, "crashc", before, 5*time.Minute)
	t.Logf("16 nodes replaced through 3 kills in %s; pool $%.4f/h", time.Since(begin).Round(time.Second), price)
}
