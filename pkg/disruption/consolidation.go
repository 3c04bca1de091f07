package disruption

// Consolidation (Underutilized): candidates, multi-node then single-node
// commands, and the rules a consolidation must pass (cheaper, spot-to-spot,
// minValues, Balanced, the savings threshold, no A -> B -> A).

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// underutilized consolidates: the largest batch first, then single nodes.
func (p *planner) underutilized() error {
	var cands []*cnode
	var live map[string]int // static pools' nodes not being deleted
	for _, n := range p.nodes {
		if n.done || n.kept != nil {
			continue
		}
		if n.policy.Static {
			if n.policy.Replicas == nil {
				p.keep(n, CodeStaticPool, "pool %s is static (spec.replicas): its nodes are not consolidated", n.pool)
				continue
			}
			if live == nil {
				live = map[string]int{}
				for _, o := range p.nodes {
					if o.policy.Static && !o.st.MarkedForDeletion {
						live[o.pool]++
					}
				}
			}
			p.keep(n, CodeStaticPool, "pool %s is static (spec.replicas %d, has %d nodes): its nodes are not consolidated, only replaced when drifted; the static controller keeps the count",
				n.pool, *n.policy.Replicas, live[n.pool])
			continue
		}
		if len(n.pods) == 0 {
			continue
		}
		if code, msg := p.notCandidate(n, true); code != "" {
			p.keep(n, code, "%s", msg)
			continue
		}
		cands = append(cands, n)
	}
	p.plan.Stats.Candidates = len(cands)
	// Most price per unit of disruption first.
	slices.SortStableFunc(cands, drainFirst)
	if err := p.multi(cands); err != nil {
		return err
	}
	for _, n := range cands {
		if n.done || n.kept != nil {
			continue
		}
		b := p.budgets[n.pool]
		if !b.allows(ReasonUnderutilized, 1) {
			p.keep(n, CodeBudget, "%s", b.message(ReasonUnderutilized))
			continue
		}
		if i, ok := p.pdbBlock(n.pdbs); ok {
			pdb := p.in.PDBs[i]
			p.keep(n, CodePDB, "PDB %s/%s has no disruption left in this pass (earlier commands took it) and the node has %d of its pods", pdb.Namespace, pdb.Name, n.pdbs[i])
			continue
		}
		res, err := p.whatIf([]*cnode{n})
		if err != nil {
			return err
		}
		if res.failCode == "" {
			res.consolidate(p, []*cnode{n})
		}
		if err := p.settle(res); err != nil {
			return err
		}
		if res.failCode != "" {
			p.keep(n, res.failCode, "%s", res.failMsg)
			continue
		}
		cmd := res.command(ReasonUnderutilized, "single")
		if len(cmd.Replacements) == 0 {
			cmd.Message = fmt.Sprintf("Underutilized: deleting node %s, its %d pods fit on the rest of the fleet (saves $%.4f/h)", n.name, len(n.pods), cmd.SavingsPerHour)
		} else {
			cmd.Message = fmt.Sprintf("Underutilized: replacing node %s ($%.4f/h) with %s (saves $%.4f/h)", n.name, n.price, describeReplacements(cmd.Replacements), cmd.SavingsPerHour)
		}
		if err := p.accept(cmd, res, []*cnode{n}); err != nil {
			return err
		}
	}
	return nil
}

// notCandidate says why a node with pods, not static and not kept by the
// shared rules, is not a consolidation candidate ("" when it is). With
// wait false, a consolidateAfter not yet elapsed does not count (the
// ranking of DrainOrder: the node will be a candidate).
func (p *planner) notCandidate(n *cnode, wait bool) (Code, string) {
	if n.policy.ConsolidationPolicy == PolicyWhenEmpty {
		return CodeWhenEmpty, fmt.Sprintf("pool %s consolidates only empty nodes (consolidationPolicy WhenEmpty) and the node has %d pods", n.pool, len(n.pods))
	}
	left, ok := p.consolidateLeft(n)
	if !ok {
		return CodeConsolidationDisabled, fmt.Sprintf("consolidateAfter is Never in pool %s", n.pool)
	}
	if wait && left > 0 {
		return CodeConsolidateAfter, fmt.Sprintf("consolidateAfter: %s left", left.Round(time.Second))
	}
	if n.blockCode != "" {
		return n.blockCode, n.blockMsg
	}
	if n.ct == cloudprovider.CapacityTypeReserved {
		return CodeReservedCapacity, fmt.Sprintf("it runs in a capacity reservation (%s %s in %s), paid for whether used or not: moving its pods saves nothing", n.ct, n.it, n.zone)
	}
	if !n.known || n.ct == "" || n.zone == "" {
		return CodeUnknownPrice, fmt.Sprintf("its instance type, capacity type, zone or price is unknown (type %q, capacity type %q, zone %q)", n.it, n.ct, n.zone)
	}
	return "", ""
}

// drainFirst orders consolidation candidates as the planner tries them:
// the most price per unit of disruption first, then by name.
func drainFirst(a, b *cnode) int {
	sa, sb := a.price/(1+a.podCost), b.price/(1+b.podCost)
	if c := cmp.Compare(sb, sa); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

func describeReplacements(rs []engine.NewNodeClaim) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s %s ($%.4f/h)", r.Offering.CapacityType, r.Offering.InstanceType, r.Offering.Price))
	}
	return strings.Join(parts, ", ")
}

// multi looks for the largest prefix of the candidates (within budgets
// and PDB allowances) that consolidates as one command.
func (p *planner) multi(cands []*cnode) error {
	for {
		var batch []*cnode
		taken := map[string]int{}
		pdbs := map[int]int{}
		for _, n := range cands {
			if n.done || n.kept != nil {
				continue
			}
			b := p.budgets[n.pool]
			if !b.allows(ReasonUnderutilized, taken[n.pool]+1) {
				continue
			}
			ok := true
			for i, c := range n.pdbs {
				if int32(pdbs[i]+c) > p.pdbLeft[i] {
					ok = false
				}
			}
			if !ok {
				continue
			}
			for i, c := range n.pdbs {
				pdbs[i] += c
			}
			taken[n.pool]++
			batch = append(batch, n)
		}
		if len(batch) < 2 {
			return nil
		}
		try := func(k int) (*result, error) {
			res, err := p.whatIf(batch[:k])
			if err != nil {
				return nil, err
			}
			if res.failCode == "" {
				res.consolidate(p, batch[:k])
			}
			if err := p.settle(res); err != nil {
				return nil, err
			}
			return res, nil
		}
		best, bestK := (*result)(nil), 0
		res, err := try(len(batch))
		if err != nil {
			return err
		}
		if res.failCode == "" {
			best, bestK = res, len(batch)
		} else {
			lo, hi := 2, len(batch)-1
			for lo <= hi {
				mid := (lo + hi) / 2
				r, err := try(mid)
				if err != nil {
					return err
				}
				if r.failCode == "" {
					best, bestK = r, mid
					lo = mid + 1
				} else {
					hi = mid - 1
				}
			}
		}
		if best == nil {
			return nil
		}
		cmd := best.command(ReasonUnderutilized, "multi")
		cmd.Message = fmt.Sprintf("Underutilized: replacing %d nodes ($%.4f/h) with %d new nodes ($%.4f/h), saves $%.4f/h",
			bestK, best.price, len(cmd.Replacements), cmd.ReplacementPricePerHour, cmd.SavingsPerHour)
		if len(cmd.Replacements) == 0 {
			cmd.Message = fmt.Sprintf("Underutilized: deleting %d nodes, their pods fit on the rest of the fleet (saves $%.4f/h)", bestK, cmd.SavingsPerHour)
		}
		if err := p.accept(cmd, best, batch[:bestK]); err != nil {
			return err
		}
	}
}

// consolidate checks a consolidation what-if against the rules: cheaper,
// never more expensive, spot-to-spot, minValues, Balanced.
func (res *result) consolidate(p *planner, nodes []*cnode) {
	savings := res.price - res.extra
	if !(res.replPrice < res.price) || savings <= 1e-9 {
		var cpu, mem resource.Quantity
		for _, n := range nodes {
			for _, pod := range n.pods {
				for _, c := range pod.Spec.Containers {
					cpu.Add(c.Resources.Requests[corev1.ResourceCPU])
					mem.Add(c.Resources.Requests[corev1.ResourceMemory])
				}
			}
		}
		res.failCode = CodeNoCheaper
		res.failMsg = fmt.Sprintf("no cheaper placement: its pods need %s vCPU and %s memory, and re-placing them costs $%.4f/h against the $%.4f/h it costs",
			cpu.String(), mem.String(), math.Max(res.extra, res.replPrice), res.price)
		return
	}
	// No A -> B -> A: a node consolidation launched recently is not
	// replaced by a type it replaced.
	forbidden := map[string]*cnode{}
	for _, n := range nodes {
		if _, ok := p.recentReplacement(n); ok {
			for _, t := range n.st.ReplacedTypes {
				forbidden[t] = n
			}
		}
	}
	for _, r := range res.replacements {
		if n := forbidden[r.Offering.InstanceType]; n != nil {
			res.failCode = CodeRecentReplacement
			res.failMsg = fmt.Sprintf("consolidation launched node %s %s ago in place of %s; replacing it with %s again within %s would be A -> B -> A",
				n.name, p.in.Now.Sub(n.st.Created).Round(time.Second), strings.Join(n.st.ReplacedTypes, ", "), r.Offering.InstanceType, ReplacementHold)
			return
		}
	}
	allSpot := true
	for _, n := range nodes {
		if n.ct != cloudprovider.CapacityTypeSpot {
			allSpot = false
		}
	}
	spotRepl := len(res.replacements) > 0
	for _, r := range res.replacements {
		if r.Offering.CapacityType != cloudprovider.CapacityTypeSpot {
			spotRepl = false
		}
	}
	// Narrow each replacement's options to what keeps the total below the
	// price of the removed nodes. A launch may take any option kept (a
	// spot fleet picks by spare capacity among offerings up to 10% above
	// the cheapest), so for several nodes each replacement is pinned to
	// its planned zone and capacity type and may cost at most its planned
	// price plus its share of half the savings: whatever is launched, at
	// least half of the savings are real. Without it a replacement of
	// several nodes saving a few percent may launch dearer than planned,
	// and the next pass finds the same saving again, and again
	// (replacements replaced in a loop). A single node keeps the peer's
	// rule: options cheaper than the node.
	slack := res.price - res.replPrice
	for i := range res.replacements {
		r := &res.replacements[i]
		limit := res.price - (res.replPrice - r.Offering.Price)
		worst := len(nodes) > 1
		if worst {
			limit = r.Offering.Price + slack/float64(2*len(res.replacements))
			pinOffering(r)
		}
		spotOnly := allSpot && spotRepl
		keep := p.cheaperOptions(r, limit, spotOnly, worst)
		keep = slices.DeleteFunc(keep, func(t string) bool { return forbidden[t] != nil })
		if allSpot && spotRepl && len(nodes) == 1 {
			if !p.in.Options.SpotToSpotConsolidation {
				res.failCode = CodeSpotToSpotDisabled
				res.failMsg = fmt.Sprintf("only a spot replacement (%s) would be cheaper, and spot-to-spot consolidation is off (feature gate SpotToSpotConsolidation)", r.Offering.InstanceType)
				return
			}
			if len(keep) < MinSpotToSpotTypes {
				res.failCode = CodeSpotToSpotTypes
				res.failMsg = fmt.Sprintf("spot-to-spot needs %d cheaper spot types, %d remain", MinSpotToSpotTypes, len(keep))
				return
			}
			keep = keep[:MinSpotToSpotTypes]
		} else if allSpot && spotRepl && !p.in.Options.SpotToSpotConsolidation {
			res.failCode = CodeSpotToSpotDisabled
			res.failMsg = "only spot replacements would be cheaper, and spot-to-spot consolidation is off (feature gate SpotToSpotConsolidation)"
			return
		}
		if len(keep) == 0 && worst {
			res.failCode = CodeNoCheaper
			res.failMsg = fmt.Sprintf("no cheaper placement: no instance type for replacement %s stays below $%.4f/h in every zone it may launch in (half of the $%.4f/h saved must hold whatever is launched)",
				r.Name, limit, slack)
			return
		}
		if msg, ok := p.narrow(r, keep); !ok {
			res.failCode = CodeMinValues
			res.failMsg = msg
			return
		}
	}
	// Balanced: savings share over disruption share.
	balanced := false
	for _, n := range nodes {
		if n.policy.ConsolidationPolicy == PolicyBalanced {
			balanced = true
		}
	}
	if balanced {
		var poolCost, poolDisruption, cost float64
		pools := map[string]bool{}
		for _, n := range nodes {
			pools[n.pool] = true
			cost += n.cost
		}
		for _, n := range p.nodes {
			if pools[n.pool] {
				if n.known {
					poolCost += n.price
				}
				poolDisruption += n.cost
			}
		}
		if cost > 0 && poolCost > 0 && poolDisruption > 0 {
			score := (savings / poolCost) / (cost / poolDisruption)
			if score < 0.5 {
				res.failCode = CodeBalanced
				res.failMsg = fmt.Sprintf("Balanced: saving $%.4f/h (%.1f%% of the pool) is not worth disrupting %.1f%% of it (score %.2f, needs 0.50)",
					savings, 100*savings/poolCost, 100*cost/poolDisruption, score)
				return
			}
		}
	}
	// The consolidation savings threshold (MinSavings).
	if need, why := p.minSavings(nodes); need > 0 && savings < need-1e-9 {
		res.failCode = CodeMinSavings
		res.failMsg = fmt.Sprintf("consolidating it saves $%.4f/h, below %s ($%.4f/h)", savings, why, need)
	}
}

// recentReplacement reports whether consolidation launched n as a
// replacement of other types less than ReplacementHold ago, and how long
// ago.
func (p *planner) recentReplacement(n *cnode) (time.Duration, bool) {
	if !strings.EqualFold(n.st.CreationReason, string(ReasonUnderutilized)) || len(n.st.ReplacedTypes) == 0 || n.st.Created.IsZero() {
		return 0, false
	}
	age := p.in.Now.Sub(n.st.Created)
	return age, age < ReplacementHold
}

// validSavings reports whether v is a usable savings threshold.
func validSavings(v float64) bool { return v >= 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }

// minSavings is what a consolidation of nodes must save: the strictest
// threshold of their pools (a pool without its own takes the global one),
// per command and per evicted pod; why names where it comes from.
func (p *planner) minSavings(nodes []*cnode) (need float64, why string) {
	pods := 0
	for _, n := range nodes {
		pods += len(n.pods)
	}
	for _, n := range nodes {
		perCmd, perPod := p.in.Options.MinSavings.PerCommand, p.in.Options.MinSavings.PerPod
		cmdFrom, podFrom := "the controller's minimum", "the controller's minimum"
		if v := n.policy.MinSavings.PerCommand; v != nil {
			perCmd, cmdFrom = *v, "pool "+n.pool+"'s minimum"
		}
		if v := n.policy.MinSavings.PerPod; v != nil {
			perPod, podFrom = *v, "pool "+n.pool+"'s minimum"
		}
		if perCmd > need {
			need, why = perCmd, fmt.Sprintf("%s of $%.4f/h per command", cmdFrom, perCmd)
		}
		if v := perPod * float64(pods); v > need {
			need, why = v, fmt.Sprintf("%s of $%.4f/h per evicted pod, times %d pods", podFrom, perPod, pods)
		}
	}
	return need, why
}

// pinOffering narrows a replacement's zone and capacity type to its
// planned offering's (requirements and labels).
func pinOffering(r *engine.NewNodeClaim) {
	if r.Labels != nil {
		r.Labels = maps.Clone(r.Labels) // the plan's map is shared
	}
	var pins []*requirements.Requirement
	for key, v := range map[string]string{corev1.LabelTopologyZone: r.Offering.Zone, "karpenter.sh/capacity-type": r.Offering.CapacityType} {
		if v == "" {
			continue
		}
		if req, err := requirements.New(key, requirements.In, []string{v}, nil); err == nil {
			pins = append(pins, req)
			if r.Labels != nil {
				r.Labels[key] = v
			}
		}
	}
	r.Requirements = r.Requirements.Intersection(requirements.NewRequirements(pins...))
}

// cheaperOptions returns the replacement's options whose cheapest
// compatible offering (with worst: every compatible offering) costs less
// than limit, cheapest first.
func (p *planner) cheaperOptions(r *engine.NewNodeClaim, limit float64, spotOnly, worst bool) []string {
	np := p.pools[r.NodePool]
	if np == nil {
		return r.InstanceTypeOptions
	}
	types := map[string]*cloudprovider.InstanceType{}
	for _, t := range np.InstanceTypes {
		if t != nil {
			types[t.Name] = t
		}
	}
	zones := r.Requirements.Get(corev1.LabelTopologyZone)
	cts := r.Requirements.Get("karpenter.sh/capacity-type")
	unavailable := map[engine.OfferingKey]bool{}
	for _, k := range p.cur.Unavailable {
		unavailable[k] = true
	}
	type opt struct {
		name  string
		price float64
	}
	var out []opt
	for _, name := range r.InstanceTypeOptions {
		t := types[name]
		if t == nil {
			continue
		}
		best, dearest := math.Inf(1), 0.0
		for _, o := range t.Offerings {
			if !o.Available || unavailable[engine.OfferingKey{InstanceType: name, Zone: o.Zone, CapacityType: o.CapacityType}] {
				continue
			}
			if zones != nil && !zones.Has(o.Zone) || cts != nil && !cts.Has(o.CapacityType) {
				continue
			}
			if spotOnly && o.CapacityType != cloudprovider.CapacityTypeSpot {
				continue
			}
			price := o.Price
			if r.Offering.Commitment != "" && o.CapacityType == cloudprovider.CapacityTypeOnDemand {
				// The engine kept the options the commitment covers: each
				// costs its sliver at the margin.
				price *= commitment.PriceFactor
			}
			best = math.Min(best, price)
			dearest = math.Max(dearest, price)
		}
		if best < limit && (!worst || dearest < limit) {
			out = append(out, opt{name, best})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].price < out[j].price })
	names := make([]string, len(out))
	for i, o := range out {
		names[i] = o.name
	}
	return names
}

// narrow sets the replacement's options to keep (and its instance-type
// requirement), failing when a minValues requirement no longer holds.
func (p *planner) narrow(r *engine.NewNodeClaim, keep []string) (string, bool) {
	if len(keep) == 0 {
		return "no instance type of the replacement is cheaper than what it replaces", false
	}
	np := p.pools[r.NodePool]
	types := map[string]*cloudprovider.InstanceType{}
	if np != nil {
		for _, t := range np.InstanceTypes {
			if t != nil {
				types[t.Name] = t
			}
		}
	}
	for req := range r.Requirements.All() {
		mv := req.MinValues()
		if mv == nil {
			continue
		}
		seen := map[string]bool{}
		for _, name := range keep {
			v := name
			if req.Key() != corev1.LabelInstanceTypeStable {
				t := types[name]
				if t == nil {
					continue
				}
				v = t.Labels[req.Key()]
			}
			if v != "" {
				seen[v] = true
			}
		}
		if len(seen) < *mv {
			return fmt.Sprintf("the cheaper instance types have %d values of %s, below its minValues %d", len(seen), req.Key(), *mv), false
		}
	}
	r.InstanceTypeOptions = keep
	old := r.Requirements.Get(corev1.LabelInstanceTypeStable)
	var mv *int
	if old != nil {
		mv = old.MinValues()
	}
	if nr, err := requirements.New(corev1.LabelInstanceTypeStable, requirements.In, keep, mv); err == nil {
		var rs []*requirements.Requirement
		for req := range r.Requirements.All() {
			if req.Key() != corev1.LabelInstanceTypeStable {
				rs = append(rs, req)
			}
		}
		rs = append(rs, nr)
		r.Requirements = requirements.NewRequirements(rs...)
	}
	return "", true
}
