package disruption

// Emptiness: nodes with no reschedulable pods, removed within the Empty
// budget.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// placedOn counts the pending pods the base plan puts on node, and names
// the capacity buffers whose room it holds there.
func (p *planner) placedOn(node string) (int, []string) {
	c := 0
	var buffers []string
	for _, pl := range p.base.Existing {
		if pl.Node == node && !pl.InFlight {
			if name, ok := engine.BufferOf(pl.Pod); ok {
				buffers = append(buffers, pl.Pod.Namespace+"/"+name)
				continue
			}
			c++
		}
	}
	slices.Sort(buffers)
	return c, slices.Compact(buffers)
}

// empty removes nodes with no reschedulable pods, per pool within the
// Empty budget.
func (p *planner) empty() error {
	byPool := map[string][]*cnode{}
	var pools []string
	for _, n := range p.nodes {
		if n.kept != nil || n.done || len(n.pods) > 0 || n.policy.Static {
			continue
		}
		left, ok := p.consolidateLeft(n)
		if !ok {
			if n.st.Drifted == "" {
				p.keep(n, CodeConsolidationDisabled, "empty, but consolidateAfter is Never in pool %s", n.pool)
			}
			continue
		}
		if left > 0 {
			if n.st.Drifted == "" {
				p.keep(n, CodeConsolidateAfter, "empty; consolidateAfter: %s left", left.Round(time.Second))
			}
			continue
		}
		if p.model == nil {
			if err := p.compile(); err != nil {
				return err
			}
		}
		if c, buffers := p.placedOn(n.name); c > 0 {
			p.keep(n, CodeNeededByPending, "empty, but %d pending pods would be placed on it", c)
			continue
		} else if len(buffers) > 0 {
			p.keep(n, CodeBufferRoom, "empty, but it holds the room of CapacityBuffer %s", strings.Join(buffers, ", "))
			continue
		}
		if _, ok := byPool[n.pool]; !ok {
			pools = append(pools, n.pool)
		}
		byPool[n.pool] = append(byPool[n.pool], n)
	}
	slices.Sort(pools)
	for _, pool := range pools {
		b := p.budgets[pool]
		var cmd *Command
		for _, n := range byPool[pool] {
			if !b.allows(ReasonEmpty, 1) {
				p.keep(n, CodeBudget, "empty; %s", b.message(ReasonEmpty))
				continue
			}
			b.take(ReasonEmpty, 1)
			if cmd == nil {
				cmd = &Command{Reason: ReasonEmpty, ConsolidationType: "empty"}
			}
			p.addNode(cmd, n)
			p.gone[n.name] = true
		}
		if cmd != nil {
			cmd.SavingsPerHour = cmd.PricePerHour
			cmd.Message = fmt.Sprintf("Empty: deleting %d empty nodes of pool %s (saves $%.4f/h)", len(cmd.Nodes), pool, cmd.SavingsPerHour)
			p.plan.Commands = append(p.plan.Commands, *cmd)
		}
	}
	return nil
}

func (p *planner) addNode(cmd *Command, n *cnode) {
	n.done = true
	cmd.Nodes = append(cmd.Nodes, n.name)
	cmd.NodeClaims = append(cmd.NodeClaims, n.st.NodeClaim)
	if n.known {
		cmd.PricePerHour += n.price
	}
	cmd.DisruptionCost += n.cost
	for _, pod := range n.pods {
		cmd.Pods = append(cmd.Pods, engine.PodRef{Namespace: pod.Namespace, Name: pod.Name})
	}
}
