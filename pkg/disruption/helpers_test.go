package disruption_test

import (
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/workload"
)

var (
	t0  = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	now = t0.Add(2 * time.Hour)
)

func dur(d time.Duration) *time.Duration { return &d }

// cluster plans a workload, materializes it and deletes a fraction of its
// (non-daemonset) pods, as a scale-down leaves a cluster.
func cluster(tb testing.TB, in *engine.Input, deleteFrac float64, seed uint64) *engine.Input {
	tb.Helper()
	plan, err := engine.Solve(in)
	if err != nil {
		tb.Fatal(err)
	}
	cl := workload.Materialize(in, plan, metav1.NewTime(t0))
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := range cl.Nodes {
		var keep []*corev1.Pod
		for _, p := range cl.Nodes[i].Pods {
			if disruption.Reschedulable(p) && rng.Float64() < deleteFrac {
				continue
			}
			keep = append(keep, p)
		}
		cl.Nodes[i].Pods = keep
	}
	// Pending pods the workload could not place stay pending.
	return cl
}

// input wraps a cluster for the planner: every node managed by its pool,
// initialized at t0, pools with the given policy.
func input(cl *engine.Input, pp disruption.PoolPolicy) *disruption.Input {
	in := &disruption.Input{Now: now, Cluster: cl, Pools: map[string]disruption.PoolPolicy{}, Nodes: map[string]disruption.NodeState{}}
	for _, np := range cl.NodePools {
		in.Pools[np.Name] = pp
	}
	for _, en := range cl.Nodes {
		in.Nodes[en.Node.Name] = disruption.NodeState{NodeClaim: en.Node.Name, NodePool: en.NodePool, Initialized: true,
			Created: t0, LastPodEvent: t0}
	}
	return in
}

// open is a policy that lets consolidation do everything at once.
func open() disruption.PoolPolicy {
	return disruption.PoolPolicy{ConsolidationPolicy: disruption.PolicyWhenEmptyOrUnderutilized, ConsolidateAfter: dur(0),
		Budgets: []disruption.Budget{{Nodes: "100%"}}}
}
