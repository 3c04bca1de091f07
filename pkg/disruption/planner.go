package disruption

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// cnode is one node as the planner sees it.
type cnode struct {
	idx    int // index in the current cluster's Nodes at compile time
	name   string
	st     NodeState
	pool   string
	policy PoolPolicy
	// heldRoom: kept empty for the room it holds (pending pods, a
	// CapacityBuffer); drift replaces it anyway.
	heldRoom bool
	price    float64
	known    bool // instance type, capacity type, zone and price known
	it       string
	ct       string
	zone     string
	pods     []*corev1.Pod // reschedulable pods
	// cost is the node's disruption cost; podCost the sum of its pods'
	// positive eviction costs.
	cost, podCost float64
	// pdbs counts its pods per PDB index; multi is a pod matching several.
	pdbs  map[int]int
	multi string
	// blocked: a pod-level blocker (do-not-disrupt, PDB) with its code.
	blockCode Code
	blockMsg  string
	done      bool // in a command
	kept      *Kept
	// sick: a condition matches a repair policy (nil: healthy);
	// repairKept: repair decided why it stays.
	sick       *sickness
	repairKept bool
}

// sickness is a node condition matching a repair policy.
type sickness struct {
	cond       corev1.NodeCondition
	policy     cloudprovider.RepairPolicy
	eligibleAt time.Time
}

func (s *sickness) String() string {
	msg := fmt.Sprintf("%s=%s", s.cond.Type, s.cond.Status)
	if s.cond.Reason != "" {
		msg += fmt.Sprintf(" (reason %s)", s.cond.Reason)
	}
	return msg + fmt.Sprintf(" since %s, tolerated for %s", s.cond.LastTransitionTime.UTC().Format(time.RFC3339), s.policy.TolerationDuration)
}

// planner holds one pass.
type planner struct {
	in      *Input
	now     time.Time
	nodes   []*cnode
	byName  map[string]*cnode
	budgets map[string]*budgetState
	pdbLeft []int32
	pdbByNS map[string][]int
	pools   map[string]*engine.NodePool
	// coverage is what the commitments cover of each on-demand node
	// (engine.CommitmentLedger): a covered node costs its marginal price.
	coverage map[string]commitment.Coverage
	// cur is the cluster with every accepted command applied; model its
	// compiled form and base the plan of its pending pods.
	cur   *engine.Input
	model *engine.Model
	base  *engine.Plan
	// gone are removed nodes without pods (empty), still in cur.
	gone  map[string]bool
	plan  *Plan
	eopts engine.Options
	lastW engine.WhatIf
	// poolNodes and poolSick count each pool's nodes and those with a
	// condition matching a repair policy (the repair circuit breaker).
	poolNodes, poolSick map[string]int
	// lenient: a what-if that leaves pending pods without a place still
	// plans the displaced pods (repair: the node is broken, its room is
	// not really there).
	lenient bool
	// holdLimits: a what-if keeps the removed nodes' capacity counted
	// against their pools' limits (a replacement launched first runs
	// beside them; see limitHeld).
	holdLimits bool
}

// Compute plans one disruption pass over in. The error is only for
// malformed input (naming the field); the same input gives the same plan.
func Compute(in *Input) (*Plan, error) {
	if in == nil || in.Cluster == nil {
		return nil, fmt.Errorf("disruption: %s", field.Required(field.NewPath("cluster"), "must not be nil"))
	}
	p := &planner{in: in, now: in.Now, byName: map[string]*cnode{}, budgets: map[string]*budgetState{},
		pools: map[string]*engine.NodePool{}, gone: map[string]bool{}, plan: &Plan{Allowed: map[string]map[Reason]int{}}}
	p.eopts = in.Options.Engine
	p.eopts.SkipLowerBound = true
	for i := range in.Cluster.NodePools {
		p.pools[in.Cluster.NodePools[i].Name] = &in.Cluster.NodePools[i]
	}
	if err := p.build(); err != nil {
		return nil, err
	}
	p.cur = p.withRelocated(in.Cluster)
	// The model is compiled, and the base plan solved, when a method first
	// needs them (solve, placedOn): a pass in which no node can be a
	// candidate (every pool's consolidateAfter Never, nothing drifted)
	// compiles nothing.
	p.filter()
	if err := p.repair(); err != nil {
		return nil, err
	}
	if err := p.empty(); err != nil {
		return nil, err
	}
	if err := p.drift(); err != nil {
		return nil, err
	}
	if err := p.underutilized(); err != nil {
		return nil, err
	}
	p.finish()
	return p.plan, nil
}

// build reads the nodes, their prices, pods, costs and PDBs, and the
// budgets.
func (p *planner) build() error {
	in := p.in
	var errs field.ErrorList
	for name, pp := range in.Pools {
		switch pp.ConsolidationPolicy {
		case "", PolicyWhenEmpty, PolicyWhenEmptyOrUnderutilized, PolicyBalanced:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("pools").Key(name).Child("consolidationPolicy"), pp.ConsolidationPolicy,
				[]string{PolicyWhenEmpty, PolicyWhenEmptyOrUnderutilized, PolicyBalanced}))
		}
		for _, v := range []struct {
			name string
			v    *float64
		}{{"perCommand", pp.MinSavings.PerCommand}, {"perPod", pp.MinSavings.PerPod}} {
			if v.v != nil && !validSavings(*v.v) {
				errs = append(errs, field.Invalid(field.NewPath("pools").Key(name).Child("minSavings", v.name), *v.v, "must be a non-negative number of $/h"))
			}
		}
	}
	if ms := in.Options.MinSavings; !validSavings(ms.PerCommand) || !validSavings(ms.PerPod) {
		errs = append(errs, field.Invalid(field.NewPath("options", "minSavings"), fmt.Sprintf("%g per command, %g per pod", ms.PerCommand, ms.PerPod),
			"must be non-negative numbers of $/h"))
	}
	_, p.coverage = engine.CommitmentLedger(in.Cluster)
	p.pdbLeft = make([]int32, len(in.PDBs))
	for i, pdb := range in.PDBs {
		p.pdbLeft[i] = max(pdb.DisruptionsAllowed, 0)
	}
	total := map[string]int{}
	disrupting := map[string]int{}
	deleting := map[string]int{}
	p.poolNodes, p.poolSick = map[string]int{}, map[string]int{}
	for i := range in.Cluster.Nodes {
		en := &in.Cluster.Nodes[i]
		if en.Node == nil {
			continue
		}
		n := &cnode{idx: i, name: en.Node.Name, pdbs: map[int]int{}}
		st, managed := in.Nodes[n.name]
		n.st = st
		if managed && st.NodePool != "" {
			if _, ok := p.pools[st.NodePool]; ok {
				n.pool = st.NodePool
			}
		}
		n.policy = in.Pools[n.pool]
		p.price(n, en)
		for _, pod := range en.Pods {
			if Reschedulable(pod) {
				n.pods = append(n.pods, pod)
			}
		}
		p.costs(n)
		p.pdbsOf(n)
		p.nodes = append(p.nodes, n)
		p.byName[n.name] = n
		if n.known {
			p.plan.FleetPricePerHour += n.price
		}
		if n.pool != "" && st.Initialized && !st.MarkedForDeletion {
			total[n.pool]++
		}
		if n.pool != "" && (st.NotReady || st.MarkedForDeletion || st.Rebooting) {
			disrupting[n.pool]++
		}
		if n.pool != "" && (st.MarkedForDeletion || st.Rebooting) {
			deleting[n.pool]++
		}
		if n.pool != "" {
			n.sick = p.sickness(st)
			p.poolNodes[n.pool]++
			if n.sick != nil {
				p.poolSick[n.pool]++
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("disruption: %w", errs.ToAggregate())
	}
	names := make([]string, 0, len(p.pools))
	for name := range p.pools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b, err := newBudgetState(name, in.Pools[name], p.now, total[name], disrupting[name], deleting[name])
		if err != nil {
			return fmt.Errorf("disruption: %w", err)
		}
		p.budgets[name] = b
		p.plan.Allowed[name] = map[Reason]int{}
		for _, r := range allReasons {
			p.plan.Allowed[name][r] = b.left[r]
		}
	}
	return nil
}

// pdbsOf counts the node's pods per PDB.
func (p *planner) pdbsOf(n *cnode) {
	if p.pdbByNS == nil {
		p.pdbByNS = map[string][]int{}
		for i, pdb := range p.in.PDBs {
			p.pdbByNS[pdb.Namespace] = append(p.pdbByNS[pdb.Namespace], i)
		}
	}
	for _, pod := range n.pods {
		var matched []int
		for _, i := range p.pdbByNS[pod.Namespace] {
			if pdb := p.in.PDBs[i]; pdb.Selector != nil && pdb.Selector.Matches(labelSet(pod.Labels)) {
				matched = append(matched, i)
			}
		}
		if len(matched) > 1 && n.multi == "" {
			var names []string
			for _, i := range matched {
				names = append(names, p.in.PDBs[i].Namespace+"/"+p.in.PDBs[i].Name)
			}
			n.multi = fmt.Sprintf("pod %s/%s matches %d PDBs (%s); its eviction would be refused", pod.Namespace, pod.Name, len(matched), strings.Join(names, ", "))
		}
		for _, i := range matched {
			n.pdbs[i]++
		}
	}
}

// consolidateLeft is how long until the node is Consolidatable (ok false
// when consolidateAfter is Never).
func (p *planner) consolidateLeft(n *cnode) (time.Duration, bool) {
	ca := n.policy.ConsolidateAfter
	if ca == nil {
		return 0, false
	}
	since := n.st.LastPodEvent
	if since.IsZero() {
		since = n.st.Created
	}
	return since.Add(*ca).Sub(p.now), true
}

// keep records why a node is not disrupted (the first reason wins).
func (p *planner) keep(n *cnode, code Code, format string, args ...any) {
	if n.kept != nil || n.done {
		return
	}
	n.kept = &Kept{Node: n.name, Code: code, Reason: fmt.Sprintf(format, args...)}
}

// filter applies the rules every method shares, and finds pod blockers.
func (p *planner) filter() {
	for _, n := range p.nodes {
		st := n.st
		switch {
		case n.pool == "":
			p.keep(n, CodeUnmanaged, "node %s belongs to no NodePool of the input", n.name)
		case st.MarkedForDeletion:
			p.keep(n, CodeDeleting, "node %s is already being deleted", n.name)
		case st.Rebooting:
			p.keep(n, CodeRebooting, "node %s is rebooting for repair (reboot %d of at most %d)", n.name, st.RepairReboots+1, cloudprovider.MaxRepairReboots)
		case !st.Initialized:
			p.keep(n, CodeNotInitialized, "node %s is not initialized yet", n.name)
		case st.NominatedUntil.After(p.now):
			p.keep(n, CodeNominated, "nominated for %d pending pods until %s", st.NominatedPods, st.NominatedUntil.UTC().Format(time.RFC3339))
		case st.DoNotDisrupt:
			p.keep(n, CodeNodeDoNotDisrupt, "node %s has %s", n.name, DoNotDisruptAnnotation)
		}
		// Pod-level blockers (drift with a terminationGracePeriod ignores
		// them).
		for _, pod := range n.pods {
			if until, blocked := p.doNotDisrupt(pod); blocked {
				n.blockCode = CodePodDoNotDisrupt
				if until.IsZero() {
					n.blockMsg = fmt.Sprintf("pod %s/%s has %s", pod.Namespace, pod.Name, DoNotDisruptAnnotation)
				} else {
					n.blockMsg = fmt.Sprintf("pod %s/%s has %s for %s more", pod.Namespace, pod.Name, DoNotDisruptAnnotation, until.Sub(p.now).Round(time.Second))
				}
				break
			}
		}
		if n.blockCode == "" {
			if n.multi != "" {
				n.blockCode, n.blockMsg = CodePDB, n.multi
			} else if i, ok := p.pdbBlock(n.pdbs); ok {
				pdb := p.in.PDBs[i]
				n.blockCode = CodePDB
				n.blockMsg = fmt.Sprintf("PDB %s/%s allows 0 disruptions now and the node has %d of its pods", pdb.Namespace, pdb.Name, n.pdbs[i])
			}
		}
	}
}

// pdbBlock returns the first PDB (by index) that covers some of the given
// pods and has no disruption left (none allowed now, or earlier commands
// of this pass took what it allowed). As the peer does, a PDB that allows
// some disruptions does not block a node holding more of its pods than
// that: the drain evicts through the eviction API, which refuses what the
// PDB does not allow yet, and the rest follow as the evicted pods come up
// elsewhere. Blocking such a node would stall drift and consolidation for
// good wherever one node holds more of an app than its PDB allows.
func (p *planner) pdbBlock(counts map[int]int) (int, bool) {
	idx := make([]int, 0, len(counts))
	for i := range counts {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		if counts[i] > 0 && p.pdbLeft[i] == 0 {
			return i, true
		}
	}
	return 0, false
}

// doNotDisrupt reports whether the pod blocks voluntary disruption now,
// and until when (zero: indefinitely).
func (p *planner) doNotDisrupt(pod *corev1.Pod) (time.Time, bool) {
	return doNotDisruptAt(pod, p.now)
}

// doNotDisruptAt is doNotDisrupt at now.
func doNotDisruptAt(pod *corev1.Pod, now time.Time) (time.Time, bool) {
	v, ok := pod.Annotations[DoNotDisruptAnnotation]
	if !ok {
		return time.Time{}, false
	}
	if v == "true" {
		return time.Time{}, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		// A value that is neither "true" nor a duration is honoured as
		// "true": the safe reading.
		return time.Time{}, true
	}
	start := pod.CreationTimestamp.Time
	if pod.Status.StartTime != nil {
		start = pod.Status.StartTime.Time
	}
	until := start.Add(d)
	return until, until.After(now)
}

// finish fills kept reasons for the rest, expiring nodes, prices and the
// bound.
func (p *planner) finish() {
	for _, n := range p.nodes {
		if n.done {
			continue
		}
		p.repairNote(n)
		if n.kept == nil {
			p.keep(n, CodeNotCandidate, "nothing to do: not empty, not drifted, and no cheaper placement was found for it")
		}
		p.plan.Kept = append(p.plan.Kept, *n.kept)
		if ea := n.policy.ExpireAfter; ea != nil && n.pool != "" && !n.st.Created.IsZero() {
			within := p.in.Options.ExpiringWithin
			if within <= 0 {
				within = time.Hour
			}
			at := n.st.Created.Add(*ea)
			if at.Sub(p.now) <= within {
				p.plan.Expiring = append(p.plan.Expiring, Expiring{Node: n.name, ExpireAt: at})
			}
		}
	}
	slices.SortFunc(p.plan.Kept, func(a, b Kept) int { return strings.Compare(a.Node, b.Node) })
	after := p.plan.FleetPricePerHour
	for _, c := range p.plan.Commands {
		after += c.ReplacementPricePerHour - c.PricePerHour
	}
	p.plan.FleetPricePerHourAfter = math.Max(after, 0)
	if !p.in.Options.SkipLowerBound {
		p.plan.LowerBoundPricePerHour = p.lowerBound()
	}
}

// LowerBound returns what Compute puts in Plan.LowerBoundPricePerHour
// (without planning anything): a proven lower bound on the $/h of any
// fleet that holds every pod running on managed nodes or pending, each
// pod on a node of an offering of a NodePool of the input that its
// requirements, tolerations and volumes allow (whatever the pools'
// weights, limits, and the offerings' availability), with a workload's
// pods under required hostname anti-affinity among themselves on distinct
// nodes, and every node priced at its catalog price. Topology spreads are
// not assumed to hold (an existing fleet may be skewed), so the fleet
// after the commands can never cost less. It is the costly part of a pass at scale; a caller that plans
// often can set Options.SkipLowerBound and call this only when the pods
// or pools changed. It only reads in, so it may run while Compute runs on
// the same input. The error is Compute's: malformed input.
func LowerBound(in *Input) (float64, error) {
	if in == nil || in.Cluster == nil {
		return 0, fmt.Errorf("disruption: %s", field.Required(field.NewPath("cluster"), "must not be nil"))
	}
	p := &planner{in: in, now: in.Now, byName: map[string]*cnode{}, budgets: map[string]*budgetState{},
		pools: map[string]*engine.NodePool{}, gone: map[string]bool{}, plan: &Plan{Allowed: map[string]map[Reason]int{}}}
	p.eopts = in.Options.Engine
	for i := range in.Cluster.NodePools {
		p.pools[in.Cluster.NodePools[i].Name] = &in.Cluster.NodePools[i]
	}
	if err := p.build(); err != nil {
		return 0, err
	}
	return p.lowerBound(), nil
}

// lowerBound bounds the $/h of any fleet holding every pod running on
// managed nodes or pending (see Plan.LowerBoundPricePerHour for exactly
// which fleets). The fleet after the commands keeps most pods where they
// are, so the engine's bound, which is for fresh plans, is loosened to
// what an existing placement may look like:
//
//   - Pool weights are dropped (every pool gets weight 0). The engine's
//     bound lets each pod use only the pools of the weight tier its pods
//     landed in, because a fresh plan fills the heaviest pool first; an
//     existing node of a lighter pool with room holds pods all the same.
//   - Topology spreads are dropped. Deleting pods leaves
//     the survivors as skewed as it happens, the planner does not move a
//     pod only to even out a spread, and the engine's bound turns a zone
//     spread into per-zone minimums that such a fleet need not meet.
//   - Unavailable offerings and pool limits are dropped: an existing node
//     of an offering now out of capacity, or of a pool at its limit, is
//     still in the fleet.
//
// What stays: each pod's node requirements, tolerations, volumes' zones
// and required hostname anti-affinity among a workload's own pods, which
// every placement respects (a deletion or a move never puts two such pods
// on one node).
func (p *planner) lowerBound() float64 {
	in := p.in.Cluster
	// The pods go in as they are, not copied (at 30,000 pods copies held
	// some 40 MB through the solve): the engine reads no pod's
	// spec.nodeName (bound pods are pods of Input.Nodes), and
	// IgnoreTopologySpread drops the spreads.
	b := &engine.Input{DaemonSets: in.DaemonSets, Volumes: in.Volumes, NamespaceLabels: in.NamespaceLabels,
		Region: in.Region, Commitments: in.Commitments, Options: engine.Options{ImprovementBudget: -1, Seed: p.eopts.Seed, IgnoreTopologySpread: true}}
	for _, np := range in.NodePools {
		np.Limits, np.Usage, np.Weight = nil, nil, 0
		b.NodePools = append(b.NodePools, np)
	}
	n := len(in.Pods)
	for _, nd := range p.nodes {
		if nd.pool != "" {
			n += len(nd.pods)
		}
	}
	b.Pods = make([]*corev1.Pod, 0, n)
	b.Pods = append(b.Pods, in.Pods...)
	for _, nd := range p.nodes {
		if nd.pool == "" {
			continue
		}
		b.Pods = append(b.Pods, nd.pods...)
	}
	plan, err := engine.Solve(b)
	if err != nil {
		return 0
	}
	return plan.LowerBound
}
