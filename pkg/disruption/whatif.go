package disruption

// What-ifs: the compiled model of the cluster, a trial removal of nodes
// and the re-placement of their pods, and accepting a command (applying
// it to the model the next what-ifs see).

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// withRelocated returns the cluster with the reschedulable pods of nodes
// being deleted added to the pending pods (they need a place too, as the
// peer's simulation assumes), unless the snapshot lists them already.
func (p *planner) withRelocated(cl *engine.Input) *engine.Input {
	var extra []*corev1.Pod
	pending := map[engine.PodRef]bool{}
	for _, pod := range cl.Pods {
		if pod != nil {
			pending[engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}] = true
		}
	}
	for _, en := range cl.Nodes {
		if en.Node == nil {
			continue
		}
		if !en.MarkedForDeletion && !p.in.Nodes[en.Node.Name].MarkedForDeletion {
			continue
		}
		for _, pod := range en.Pods {
			if Reschedulable(pod) && !pending[engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}] {
				q := *pod
				q.Spec.NodeName = ""
				extra = append(extra, &q)
			}
		}
	}
	if len(extra) == 0 {
		return cl
	}
	out := *cl
	out.Pods = append(slices.Clip(cl.Pods), extra...)
	return &out
}

// compile (re)builds the model of the current cluster and plans its
// pending pods.
func (p *planner) compile() error {
	m, err := engine.Compile(p.cur)
	if err != nil {
		return fmt.Errorf("disruption: cluster: %w", err)
	}
	p.model = m
	p.plan.Stats.Compiles++
	base, err := p.solve(nil, nil)
	if err != nil {
		return err
	}
	p.base = base
	return nil
}

// closed lists nodes still inside their consolidateAfter: their pods count
// but consolidation does not move pods onto them.
func (p *planner) closed(remove []string) []string {
	var out []string
	for _, n := range p.nodes {
		if n.pool == "" || p.gone[n.name] || slices.Contains(remove, n.name) {
			continue
		}
		if left, ok := p.consolidateLeft(n); ok && left > 0 || p.in.Options.NodeRepair && n.sick != nil {
			// Nor onto nodes with a repair policy's condition.
			out = append(out, n.name)
		}
	}
	return out
}

func (p *planner) solve(remove []string, pods []*corev1.Pod) (*engine.Plan, error) {
	if p.model == nil {
		if err := p.compile(); err != nil {
			return nil, err
		}
	}
	all := make([]string, 0, len(remove)+len(p.gone))
	for name := range p.gone {
		all = append(all, name)
	}
	slices.Sort(all)
	all = append(all, remove...)
	p.plan.Stats.WhatIfs++
	w := engine.WhatIf{Remove: all, Pods: pods, ReleaseLimits: !p.holdLimits, Closed: p.closed(remove), Options: p.eopts}
	plan, err := p.model.Solve(w)
	if err != nil {
		return nil, fmt.Errorf("disruption: what-if: %w", err)
	}
	p.lastW = w
	return plan, nil
}

// result is one what-if's outcome.
type result struct {
	plan         *engine.Plan
	w            engine.WhatIf
	next         *engine.Model
	nextBase     *engine.Plan
	displaced    map[engine.PodRef]bool
	replacements []engine.NewNodeClaim
	placements   []engine.Placement
	price        float64 // the removed nodes
	extra        float64 // what the new plan adds
	replPrice    float64
	failCode     Code
	failMsg      string
}

// whatIf removes nodes and re-places their pods on the rest plus new
// nodes; it fails when a pod fits nowhere or pending pods lose their place.
func (p *planner) whatIf(nodes []*cnode) (*result, error) {
	res := &result{displaced: map[engine.PodRef]bool{}}
	var remove []string
	var pods []*corev1.Pod
	for _, n := range nodes {
		remove = append(remove, n.name)
		if n.known {
			res.price += n.price
		}
		for _, pod := range n.pods {
			q := *pod
			q.Spec.NodeName = ""
			q.Status = corev1.PodStatus{Phase: corev1.PodPending}
			pods = append(pods, &q)
			res.displaced[engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}] = true
		}
	}
	// The engine's construction follows pod order, and its plans for the
	// same pods differ by a few percent with it. A batch (several nodes)
	// tries two orders and keeps the cheaper: the nodes' own (the order
	// their pods were placed in) and a canonical one (by namespace and
	// name, a Deployment's pods together). A single node, the canonical.
	canonical := slices.Clone(pods)
	slices.SortFunc(canonical, func(a, b *corev1.Pod) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	plan, err := p.solve(remove, canonical)
	if err != nil {
		return nil, err
	}
	res.plan, res.w = plan, p.lastW
	if len(nodes) > 1 {
		// The nodes' own order: by their place in the cluster, each
		// node's pods as it lists them.
		ordered := slices.Clone(nodes)
		slices.SortStableFunc(ordered, func(a, b *cnode) int { return a.idx - b.idx })
		own := make([]*corev1.Pod, 0, len(pods))
		byRef := make(map[engine.PodRef]*corev1.Pod, len(pods))
		for _, q := range pods {
			byRef[engine.PodRef{Namespace: q.Namespace, Name: q.Name}] = q
		}
		for _, n := range ordered {
			for _, pod := range n.pods {
				own = append(own, byRef[engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}])
			}
		}
		alt, err := p.solve(remove, own)
		if err != nil {
			return nil, err
		}
		if len(alt.Unschedulable) < len(plan.Unschedulable) ||
			len(alt.Unschedulable) == len(plan.Unschedulable) && alt.PricePerHour < plan.PricePerHour-1e-9 {
			plan = alt
			res.plan, res.w = alt, p.lastW
		}
	}
	for _, u := range plan.Unschedulable {
		if res.displaced[u.Pod] {
			res.failCode = CodeCannotReschedule
			res.failMsg = fmt.Sprintf("its pods cannot all be placed elsewhere: pod %s: %s", u.Pod, u.Message)
			return res, nil
		}
	}
	if len(plan.Unschedulable) > len(p.base.Unschedulable) && !p.lenient {
		res.failCode = CodeNeededByPending
		res.failMsg = fmt.Sprintf("removing it leaves %d more pending pods unplaceable", len(plan.Unschedulable)-len(p.base.Unschedulable))
		return res, nil
	}
	for _, nc := range plan.NodeClaims {
		var mine []engine.PodRef
		for _, ref := range nc.Pods {
			if res.displaced[ref] {
				mine = append(mine, ref)
			}
		}
		if len(mine) > 0 {
			nc.Pods = mine
			res.replacements = append(res.replacements, nc)
			res.replPrice += nc.Offering.Price
		}
	}
	for _, pl := range plan.Existing {
		if res.displaced[pl.Pod] {
			res.placements = append(res.placements, pl)
		}
	}
	res.extra = plan.PricePerHour - p.base.PricePerHour
	return res, nil
}

// limitHeld checks a passing drift or repair what-if of n against its
// pools' limits as a replace-first command meets them: the replacements
// launch while n still runs, so n's capacity still counts. The what-if
// releases it (the plan after the command); when a replacement lands in a
// pool with limits, the what-if is planned again with n's capacity held.
// If that passes too (the replacements fit under the limits beside n, or
// in another pool), it is the command's; if not, the limits block
// replacing first: limitMsg says why, and res is the released what-if,
// the plan once n is gone and provisioning has replaced it (what a
// terminate-first command leaves).
func (p *planner) limitHeld(n *cnode, res *result) (_ *result, limitMsg string, _ error) {
	limited := false
	for _, r := range res.replacements {
		if np := p.pools[r.NodePool]; np != nil && len(np.Limits) > 0 {
			limited = true
			break
		}
	}
	if !limited {
		return res, "", nil
	}
	p.holdLimits = true
	held, err := p.settledWhatIf(n)
	p.holdLimits = false
	if err != nil {
		return nil, "", err
	}
	if held.failCode == "" {
		return held, "", nil
	}
	return res, "its replacement cannot launch before it goes, the NodePool limits would be exceeded: " + held.failMsg, nil
}

// settledWhatIf is whatIf of the node alone, then settle.
func (p *planner) settledWhatIf(n *cnode) (*result, error) {
	res, err := p.whatIf([]*cnode{n})
	if err != nil {
		return nil, err
	}
	return res, p.settle(res)
}

// settle commits a passing what-if to the model the next what-ifs see,
// and fails it when provisioning would then launch more for the pending
// pods (no churn).
func (p *planner) settle(res *result) error {
	if res.failCode != "" {
		return nil
	}
	next, nextBase, err := p.settled(res)
	if err != nil {
		return err
	}
	res.next, res.nextBase = next, nextBase
	if msg, bad := p.churns(nextBase); bad {
		res.failCode, res.failMsg = CodeNeededByPending, msg
	}
	return nil
}

// command turns a passing what-if into a command.
func (res *result) command(reason Reason, typ string) *Command {
	return &Command{Reason: reason, ConsolidationType: typ, Replacements: res.replacements,
		Placements: res.placements, ReplacementPricePerHour: res.replPrice, SavingsPerHour: res.price - res.extra}
}

// settled commits a what-if to a new model and plans the pending pods on
// it: the cluster provisioning would see once the command is done.
func (p *planner) settled(res *result) (*engine.Model, *engine.Plan, error) {
	m, err := p.model.Commit(res.w, res.plan)
	if err != nil {
		return nil, nil, fmt.Errorf("disruption: applying command %d: %w", len(p.plan.Commands)+1, err)
	}
	p.plan.Stats.WhatIfs++
	base, err := m.Solve(engine.WhatIf{Closed: p.closed(nil), Options: p.eopts})
	if err != nil {
		return nil, nil, fmt.Errorf("disruption: what-if: %w", err)
	}
	return m, base, nil
}

// churns reports whether provisioning, on the cluster after the command,
// would launch more than it does now for the pending pods: the command
// would take capacity they need (and provisioning would put it back).
func (p *planner) churns(base *engine.Plan) (string, bool) {
	if base.PricePerHour > p.base.PricePerHour+1e-9 || len(base.Unschedulable) > len(p.base.Unschedulable) {
		return fmt.Sprintf("after it, provisioning would launch $%.4f/h for pending pods instead of $%.4f/h", base.PricePerHour, p.base.PricePerHour), true
	}
	return "", false
}

// accept records a command, takes its budget and PDB allowances, and
// applies it to the cluster the next what-ifs see.
func (p *planner) accept(cmd *Command, res *result, nodes []*cnode) error {
	for _, n := range nodes {
		p.addNode(cmd, n)
		p.budgets[n.pool].take(cmd.Reason, 1)
		for i, c := range n.pdbs {
			p.pdbLeft[i] = max(p.pdbLeft[i]-int32(c), 0)
		}
	}
	cmd.ReplacementPricePerHour = 0
	for _, r := range cmd.Replacements {
		cmd.ReplacementPricePerHour += r.Offering.Price
	}
	cmd.SavingsPerHour = res.price - res.extra
	p.plan.Commands = append(p.plan.Commands, *cmd)
	for _, pl := range res.placements {
		if d := p.byName[pl.Node]; d != nil && !pl.InFlight && !d.done {
			p.keep(d, CodeDestination, "command %d of this pass moves pods onto it", len(p.plan.Commands))
		}
	}
	p.model, p.cur, p.base = res.next, res.next.Input(), res.nextBase
	p.gone = map[string]bool{}
	p.plan.Stats.Commits++
	return nil
}
