package disruption

import (
	"fmt"
	"math"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// NodeExplanation says what the planner does with one node and why, and
// what removing it would save if nothing held it.
type NodeExplanation struct {
	Node     string
	NodePool string
	// PricePerHour is what the node costs (0 when unknown).
	PricePerHour float64
	// Command is the command that removes or replaces it now (nil: kept).
	Command *Command
	// Kept is why it stays (nil when it is in a command).
	Kept *Kept
	// Removable: its pods fit elsewhere (on the rest of the fleet plus new
	// nodes) if nothing held it; SavingsPerHour is what that would save
	// (negative: it would cost more), Replacements what would be launched.
	// When not Removable, Blocker says which pod fits nowhere else.
	Removable      bool
	SavingsPerHour float64
	Replacements   int
	Blocker        string
}

// ExplainNode plans in and explains one node: the command it is in or the
// reason it is kept, and the what-if of removing it alone, ignoring
// budgets, consolidateAfter and do-not-disrupt, so a person can see what
// holding it costs.
func ExplainNode(in *Input, node string) (*NodeExplanation, *Plan, error) {
	plan, err := Compute(in)
	if err != nil {
		return nil, nil, err
	}
	ex := &NodeExplanation{Node: node}
	found := false
	for i := range plan.Commands {
		for _, n := range plan.Commands[i].Nodes {
			if n == node {
				c := plan.Commands[i]
				ex.Command, found = &c, true
			}
		}
	}
	for i := range plan.Kept {
		if plan.Kept[i].Node == node {
			k := plan.Kept[i]
			ex.Kept, found = &k, true
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("node %q is not in the cluster", node)
	}
	// The what-if, on a fresh planner over the same input.
	p := &planner{in: in, now: in.Now, byName: map[string]*cnode{}, budgets: map[string]*budgetState{},
		pools: map[string]*engine.NodePool{}, gone: map[string]bool{}, plan: &Plan{Allowed: map[string]map[Reason]int{}}}
	p.eopts = in.Options.Engine
	p.eopts.SkipLowerBound = true
	for i := range in.Cluster.NodePools {
		p.pools[in.Cluster.NodePools[i].Name] = &in.Cluster.NodePools[i]
	}
	if err := p.build(); err != nil {
		return nil, nil, err
	}
	p.cur = p.withRelocated(in.Cluster)
	if err := p.compile(); err != nil {
		return nil, nil, err
	}
	n := p.byName[node]
	ex.NodePool = n.pool
	if n.known {
		ex.PricePerHour = n.price
	}
	res, err := p.whatIf([]*cnode{n})
	if err != nil {
		return nil, nil, err
	}
	if res.failCode == CodeCannotReschedule {
		ex.Blocker = res.failMsg
		return ex, plan, nil
	}
	ex.Removable = true
	ex.SavingsPerHour = math.Round((res.price-res.extra)*1e6) / 1e6
	ex.Replacements = len(res.replacements)
	return ex, plan, nil
}
