package disruption

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
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

// price fills what the node costs, from its state, labels and the pool's
// offerings.
func (p *planner) price(n *cnode, en *engine.ExistingNode) {
	l := en.Node.Labels
	n.it = firstNonEmpty(n.st.InstanceType, l[corev1.LabelInstanceTypeStable])
	n.ct = firstNonEmpty(n.st.CapacityType, l["karpenter.sh/capacity-type"], capacityTypeFromEKS(l["eks.amazonaws.com/capacityType"]))
	n.zone = firstNonEmpty(n.st.Zone, l[corev1.LabelTopologyZone])
	n.price = n.st.PricePerHour
	if v, ok := p.overlaidPrice(n.pool, n.it, n.zone, n.ct); ok {
		// A NodeOverlay prices the offering: the node and its
		// replacements are compared at the same adjusted prices.
		n.price = v
	}
	if n.price <= 0 {
		n.price = en.PricePerHour
	}
	if n.price <= 0 {
		n.price = p.offeringPrice(n.pool, n.it, n.zone, n.ct)
	}
	if c, ok := p.coverage[n.name]; ok && n.price > 0 {
		// A commitment pays for it: removing it saves only what is not
		// covered, and a spot replacement is dearer than a covered node.
		n.price = c.Marginal(n.price)
	}
	n.known = n.it != "" && n.ct != "" && n.zone != "" && n.price > 0 && !math.IsInf(n.price, 0) && !math.IsNaN(n.price)
	if !n.known && n.price > 0 && !math.IsInf(n.price, 0) {
		// A price without the rest still counts for the fleet.
		n.known = n.it != "" && n.price > 0
	}
}

func capacityTypeFromEKS(v string) string {
	switch v {
	case "ON_DEMAND":
		return cloudprovider.CapacityTypeOnDemand
	case "SPOT":
		return cloudprovider.CapacityTypeSpot
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// offeringPrice looks a price up in the pool's instance types (any pool's
// when the node has none), 0 when unknown.
// overlaidPrice is the price of the pool's offering when a NodeOverlay set
// it (cloudprovider.Offering.PriceOverlay).
func (p *planner) overlaidPrice(pool, it, zone, ct string) (float64, bool) {
	np := p.pools[pool]
	if np == nil {
		return 0, false
	}
	for _, t := range np.InstanceTypes {
		if t == nil || t.Name != it {
			continue
		}
		for _, o := range t.Offerings {
			if o.Zone == zone && o.CapacityType == ct && o.PriceOverlay != "" {
				return o.Price, true
			}
		}
	}
	return 0, false
}

func (p *planner) offeringPrice(pool, it, zone, ct string) float64 {
	look := func(np *engine.NodePool) float64 {
		for _, t := range np.InstanceTypes {
			if t == nil || t.Name != it {
				continue
			}
			for _, o := range t.Offerings {
				if o.Zone == zone && o.CapacityType == ct {
					return o.Price
				}
			}
		}
		return 0
	}
	if np := p.pools[pool]; np != nil {
		if v := look(np); v > 0 {
			return v
		}
	}
	for i := range p.in.Cluster.NodePools {
		if v := look(&p.in.Cluster.NodePools[i]); v > 0 {
			return v
		}
	}
	return 0
}

// EvictionCost is the peer's cost of evicting one pod: 1 plus its deletion
// cost over 2^27 plus its priority over 2^25, clamped to [-10, 10].
func EvictionCost(pod *corev1.Pod) float64 {
	c := 1.0
	if v, ok := pod.Annotations["controller.kubernetes.io/pod-deletion-cost"]; ok {
		if d, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(d) && !math.IsInf(d, 0) {
			c += d / (1 << 27)
		}
	}
	if pod.Spec.Priority != nil {
		c += float64(*pod.Spec.Priority) / (1 << 25)
	}
	return math.Max(-10, math.Min(10, c))
}

// costs computes the node's disruption cost: its pods' eviction costs,
// weighted by the share of its lifetime left.
func (p *planner) costs(n *cnode) {
	sum := 0.0
	for _, pod := range n.pods {
		c := EvictionCost(pod)
		sum += c
		if c > 0 {
			n.podCost += c
		}
	}
	n.cost = sum * p.lifetimeLeft(n)
}

func (p *planner) lifetimeLeft(n *cnode) float64 {
	return lifeLeft(n.st.Created, p.now, n.policy.ExpireAfter)
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

// drift replaces drifted nodes one at a time: empty ones first, then the
// oldest.
func (p *planner) drift() error {
	var cands []*cnode
	for _, n := range p.nodes {
		if n.done || n.st.Drifted == "" {
			continue
		}
		// What keeps an empty node from consolidation does not keep it from
		// drift: its consolidateAfter, and the room it holds for pending
		// pods or a CapacityBuffer (the replacement, launched first, takes
		// that room over).
		if n.kept != nil && !(n.kept.Code == CodeConsolidateAfter || n.kept.Code == CodeConsolidationDisabled ||
			n.kept.Code == CodeBufferRoom || n.kept.Code == CodeNeededByPending) {
			continue
		}
		n.heldRoom = n.kept != nil && (n.kept.Code == CodeBufferRoom || n.kept.Code == CodeNeededByPending)
		n.kept = nil
		if n.blockCode != "" && n.st.TerminationGracePeriod == nil {
			p.keep(n, n.blockCode, "drifted (%s), but %s", n.st.Drifted, n.blockMsg)
			continue
		}
		cands = append(cands, n)
	}
	slices.SortStableFunc(cands, func(a, b *cnode) int {
		if (len(a.pods) == 0) != (len(b.pods) == 0) {
			if len(a.pods) == 0 {
				return -1
			}
			return 1
		}
		if c := a.st.Created.Compare(b.st.Created); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for _, n := range cands {
		if n.kept != nil {
			continue
		}
		b := p.budgets[n.pool]
		if !b.allows(ReasonDrifted, 1) {
			p.keep(n, CodeBudget, "drifted (%s); %s", n.st.Drifted, b.message(ReasonDrifted))
			continue
		}
		if i, ok := p.pdbBlock(n.pdbs); ok && n.st.TerminationGracePeriod == nil {
			pdb := p.in.PDBs[i]
			p.keep(n, CodePDB, "drifted (%s), but PDB %s/%s has no disruption left in this pass (earlier commands took it) and the node has %d of its pods", n.st.Drifted, pdb.Namespace, pdb.Name, n.pdbs[i])
			continue
		}
		res, err := p.settledWhatIf(n)
		if err != nil {
			return err
		}
		if res.failCode == CodeNeededByPending && n.heldRoom {
			// The node held room for pending pods or a CapacityBuffer:
			// provisioning launches that room again once the node is
			// tainted (the churn is the point).
			res.failCode, res.failMsg = "", ""
		}
		if res.failCode != "" {
			p.keep(n, CodeDriftBlocked, "drifted (%s), but %s", n.st.Drifted, res.failMsg)
			continue
		}
		res, limitMsg, err := p.limitHeld(n, res)
		if err != nil {
			return err
		}
		if limitMsg != "" && !p.in.Options.TerminateFirstDrift {
			p.keep(n, CodeDriftBlocked, "drifted (%s), but %s (feature gate TerminateFirstDrift is off)", n.st.Drifted, limitMsg)
			continue
		}
		cmd := res.command(ReasonDrifted, "")
		cmd.Message = fmt.Sprintf("Drifted (%s): replacing node %s with %d new nodes", n.st.Drifted, n.name, len(cmd.Replacements))
		if limitMsg != "" {
			cmd.terminateFirst(n)
			cmd.Message = fmt.Sprintf("Drifted (%s): terminating node %s first, provisioning replaces it once its capacity is released (TerminateFirstDrift: %s)", n.st.Drifted, n.name, limitMsg)
		} else if len(cmd.Replacements) == 0 && n.heldRoom {
			cmd.Message = fmt.Sprintf("Drifted (%s): deleting node %s; provisioning launches the room it held for pending pods or a CapacityBuffer again", n.st.Drifted, n.name)
		} else if len(cmd.Replacements) == 0 {
			cmd.Message = fmt.Sprintf("Drifted (%s): deleting node %s, its pods fit on the rest of the fleet", n.st.Drifted, n.name)
		}
		if err := p.accept(cmd, res, []*cnode{n}); err != nil {
			return err
		}
	}
	return nil
}

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

// command turns a passing what-if into a command.
func (res *result) command(reason Reason, typ string) *Command {
	return &Command{Reason: reason, ConsolidationType: typ, Replacements: res.replacements,
		Placements: res.placements, ReplacementPricePerHour: res.replPrice, SavingsPerHour: res.price - res.extra}
}

// terminateFirst makes a replace-first command delete-only: its node
// goes first and provisioning launches for its pods once the capacity is
// released (TerminateFirstDrift, TerminateFirstRepair).
func (c *Command) terminateFirst(n *cnode) {
	c.TerminateFirst = true
	c.TerminateFirstReason = TerminateFirstPoolAtLimit
	if n.policy.Static {
		c.TerminateFirstReason = TerminateFirstStaticAtLimit
	}
	c.Replacements = nil
	c.ReplacementPricePerHour = 0
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
