package disruption

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// Drain tiers of DrainOrder, first drained first.
const (
	// TierDrifted: drifted nodes the planner would replace (empty ones,
	// then the oldest first, as Drifted commands go).
	TierDrifted = iota
	// TierCandidate: consolidation candidates, in the order Underutilized
	// tries them (the most price per unit of disruption first).
	TierCandidate
	// TierHeld: nodes something holds now (Code says what); they go last.
	TierHeld
)

// DrainRank is one node's place in DrainOrder.
type DrainRank struct {
	Node, NodePool string
	// Tier is TierDrifted, TierCandidate or TierHeld.
	Tier int
	// Code is why a TierHeld node is held (as Plan.Kept would say).
	Code Code
	// Pods are its reschedulable pods (what a drain evicts).
	Pods []engine.PodRef
}

// DrainOrder ranks the managed nodes that have reschedulable pods in the
// order the planner would try to drain them, without planning anything
// (no what-if, no solve): first the drifted ones Drifted commands would
// replace, in their order; then the consolidation candidates, in the order
// Underutilized tries them (price per unit of disruption cost, most
// first; a node still inside its consolidateAfter is ranked as it will be
// once that passes); then every other node (held by do-not-disrupt, a PDB,
// its pool's policy, an unknown price, ...), in the same order among
// themselves. Empty nodes are not ranked: they evict nothing.
//
// The PodDeletionCostManagement controller writes pod deletion costs from
// it, so that a ReplicaSet scale-down removes pods first from the nodes
// consolidation would drain first. Same purity as Compute; the error is
// for malformed input only.
func DrainOrder(in *Input) ([]DrainRank, error) {
	if in == nil || in.Cluster == nil {
		return nil, fmt.Errorf("disruption: %s", field.Required(field.NewPath("cluster"), "must not be nil"))
	}
	p := &planner{in: in, now: in.Now, byName: map[string]*cnode{}, budgets: map[string]*budgetState{},
		pools: map[string]*engine.NodePool{}, gone: map[string]bool{}, plan: &Plan{Allowed: map[string]map[Reason]int{}}}
	for i := range in.Cluster.NodePools {
		p.pools[in.Cluster.NodePools[i].Name] = &in.Cluster.NodePools[i]
	}
	if err := p.build(); err != nil {
		return nil, err
	}
	p.filter()
	var drifted, cands, held []*cnode
	code := map[*cnode]Code{}
	for _, n := range p.nodes {
		if n.pool == "" || len(n.pods) == 0 {
			continue
		}
		switch {
		case n.kept != nil:
			code[n] = n.kept.Code
			held = append(held, n)
		case n.st.Drifted != "" && (n.blockCode == "" || n.st.TerminationGracePeriod != nil):
			drifted = append(drifted, n)
		case n.policy.Static:
			code[n] = CodeStaticPool
			held = append(held, n)
		default:
			if c, _ := p.notCandidate(n, false); c != "" {
				code[n] = c
				held = append(held, n)
				continue
			}
			cands = append(cands, n)
		}
	}
	slices.SortStableFunc(drifted, func(a, b *cnode) int {
		if c := a.st.Created.Compare(b.st.Created); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	slices.SortStableFunc(cands, drainFirst)
	slices.SortStableFunc(held, drainFirst)
	out := make([]DrainRank, 0, len(drifted)+len(cands)+len(held))
	for tier, ns := range [][]*cnode{drifted, cands, held} {
		for _, n := range ns {
			r := DrainRank{Node: n.name, NodePool: n.pool, Tier: tier, Code: code[n]}
			for _, pod := range n.pods {
				r.Pods = append(r.Pods, engine.PodRef{Namespace: pod.Namespace, Name: pod.Name})
			}
			out = append(out, r)
		}
	}
	return out, nil
}
