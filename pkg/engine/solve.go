package engine

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// solver holds one solve's compiled input and state.
type solver struct {
	in   *Input
	opts Options
	errs field.ErrorList

	res      *resTable
	zones    []zoneInfo
	zoneIdx  map[string]int
	zoneByID map[string]int

	pools      []*cpool
	poolByName map[string]*cpool
	// typeKeyCache holds typeKeysOf per instance type list.
	typeKeyCache map[listID]map[string]bool
	daemons      []*cdaemon

	hasPreferTaints bool

	// weights is 1 when every pool has one weight, 2 when they differ
	// (0: not looked yet); trialKeepsWeights' scratch maps.
	weights              int8
	weightFrom, weightTo map[int32]*snode

	// reservedRoom is each capacity reservation's available count, from
	// its reserved offerings (see finish).
	reservedRoom map[string]int
	// ledger is what the commitments have left once existing nodes and
	// in-flight claims took their part (nil: none; see finish).
	ledger *commitment.Ledger

	sclasses []*sclass
	classes  []*cclass
	pclasses []*pclass
	podSpec  []*sclass
	podClass []*cclass

	groups        []*tgroup
	groupByKey    map[string]int
	groupIndex    map[kvKey][]int
	groupScan     []int
	memberScratch []int

	// nodes: existing nodes and in-flight claims first (ids < nExisting),
	// then new NodeClaims.
	nodes     []*snode
	nExisting int
	exAll     []int32
	exZone    [][]int32
	exNoZone  []int32
	// Per pool: every new claim, the unpinned ones, those pinned per zone.
	poolAll      [][]int32
	poolUnpinned [][]int32
	poolZone     [][][]int32
	claimSeq     int

	// podNode is the node each pending pod is on (-1: none).
	podNode []int32

	demand      []rvec
	lambda      [][2]float64
	lambdaZ     [][][2]float64
	poolAnchors [][]*tgroup
	knobs       knobs
	window      int

	stats Stats

	shapes     []*shape
	fillGen    int
	classOrder []*cclass

	// improvement phase
	finalPrice     float64
	constructEvals int
	improving      bool
	trial          *trial
	trialGen       int
	evals          int
	repackClasses  []*cclass
	// noFill: seed does not fill the claims it opens (skeleton re-packs
	// place the zone-constrained pods alone first).
	noFill bool

	// scratch
	trialCounts []int
	trialLeft   []int
	// trialCands and trialShort are chooseByTrial's scratch lists.
	trialCands  []typeCost
	trialShort  []*ctype
	trialValues []float64
	gateValues  []float64
	zpBuf       []int
	costBuf     []float64
	mvScratch   []bool
}

// cdaemon is a DaemonSet compiled for overhead.
type cdaemon struct {
	name        string
	terms       []requirements.Requirements
	tolerations []corev1.Toleration
	req         rvec
}

// Solve plans where the pending pods of in go: onto existing nodes and
// in-flight NodeClaims first, then onto new NodeClaims from the NodePools.
// Pods that cannot be placed are listed with a reason. The error is
// non-nil only for malformed input (an *InputError wrapping
// ErrInvalidInput); the same input always gives the same plan.
func Solve(in *Input) (*Plan, error) {
	orig := in
	in, errs := withBuffers(in)
	if len(errs) > 0 {
		return nil, &InputError{Errs: errs}
	}
	s, err := newSolver(in)
	if err != nil {
		return nil, err
	}
	plan := s.runBest(func() *solver {
		alt, _ := newSolver(in) // in compiled without error once already
		return alt
	}).finish()
	plan.Buffers = bufferRooms(orig.Buffers, plan)
	return plan, nil
}

// runBest runs s with the default heuristics and, when multiStart says
// so, fresh solvers from again with the zone tie-break rotated (one per
// other zone), then one more with the second heuristic setting
// (secondKnobs) at the rotation that did best, and returns the cheapest
// (the first among equals).
func (s *solver) runBest(again func() *solver) *solver {
	s.run(defaultKnobs)
	if !s.multiStart() {
		return s
	}
	best := s
	for sh := 1; sh < len(s.zones); sh++ {
		alt := again()
		k := defaultKnobs
		k.zoneShift = sh
		if alt.run(k).finalPrice < best.finalPrice*(1-1e-9) {
			best = alt
		}
	}
	k := secondKnobs
	k.zoneShift = best.knobs.zoneShift
	if alt := again(); alt.run(k).finalPrice < best.finalPrice*(1-1e-9) {
		best = alt
	}
	return best
}

// multiStart reports whether a plan is worth solving again with the zone
// tie-break rotated: a small input (under multiStartPods pending pods, no
// existing node or in-flight claim: what-ifs on a cluster are many and
// would pay it each time; improvement not disabled: a caller that turns
// it off, such as the disruption planner's fleet bound, wants the first
// plan) with at least multiStartClaims new claims, of
// which one pool's lie in more than one zone. Which zone the first
// (largest) claims land in is a tie-break of the construction, and zones
// differ in price; improvement re-packs but does not move a construction's
// large claims between zones.
func (s *solver) multiStart() bool {
	pending := 0
	for _, c := range s.classes {
		pending += len(c.pods)
	}
	if pending >= multiStartPods || len(s.zones) < 2 || s.nExisting > 0 || s.opts.ImprovementBudget < 0 {
		return false
	}
	claims := s.liveClaims()
	if len(claims) < multiStartClaims {
		return false
	}
	zones := map[*cpool]zmask{}
	for _, n := range claims {
		if n.zone >= 0 {
			zones[n.pool] |= 1 << uint(n.zone)
			if zones[n.pool].count() >= 2 {
				return true
			}
		}
	}
	return false
}

// multiStartPods is the input size (pending pods) below which Solve tries
// the rotated zone tie-breaks; multiStartClaims the fewest new claims a
// plan needs for it (what-ifs that re-place a node's pods onto one or two
// claims are not worth solving again).
const (
	multiStartPods   = 500
	multiStartClaims = 4
)

// run constructs and improves a plan with the given heuristics.
func (s *solver) run(k knobs) *solver {
	s.knobs = k
	s.evals = 0
	s.construct()
	s.constructEvals = s.evals
	s.repairQuotas()
	s.markFailed()
	s.stats.ConstructionPrice = s.totalPrice()
	s.improve()
	s.finalPrice = s.totalPrice()
	return s
}

func newSolver(in *Input) (*solver, error) {
	s, err := newSolverBase(in, false)
	if err != nil {
		return nil, err
	}
	s.buildClasses()
	s.buildExisting()
	if len(s.errs) > 0 {
		return nil, &InputError{Errs: s.errs}
	}
	s.buildMembership()
	s.finishGroups()
	s.countExisting()
	s.initRun()
	return s, nil
}

// newSolverBase checks the input and compiles what does not depend on the
// pending pods' placement: zones, tracked resources (with allPods, those
// of the pods on existing nodes and in-flight claims too), daemonsets and
// NodePools.
func newSolverBase(in *Input, allPods bool) (*solver, error) {
	if in == nil {
		return nil, &InputError{Errs: field.ErrorList{field.Required(field.NewPath("input"), "must not be nil")}}
	}
	s := &solver{
		in: in, opts: in.Options, groupByKey: map[string]int{}, groupIndex: map[kvKey][]int{},
		knobs: defaultKnobs, window: fitWindow,
	}
	switch in.Options.PreferencePolicy {
	case "", PreferenceRespect, PreferenceIgnore:
	default:
		s.errs = append(s.errs, field.NotSupported(field.NewPath("options", "preferencePolicy"), in.Options.PreferencePolicy,
			[]string{string(PreferenceIgnore), string(PreferenceRespect)}))
	}
	s.validatePools()
	s.buildZones()
	s.buildResources(allPods)
	s.buildDaemons()
	if len(s.errs) > 0 {
		return nil, &InputError{Errs: s.errs}
	}
	s.ledger, _ = CommitmentLedger(in)
	s.compilePools()
	return s, nil
}

// initRun sets up the per-run placement state once the classes, groups and
// existing nodes are built.
func (s *solver) initRun() {
	s.podNode = make([]int32, len(s.in.Pods))
	for i := range s.podNode {
		s.podNode[i] = -1
	}
	s.poolAll = make([][]int32, len(s.pools))
	s.poolUnpinned = make([][]int32, len(s.pools))
	s.poolZone = make([][][]int32, len(s.pools))
	for i := range s.pools {
		s.poolZone[i] = make([][]int32, len(s.zones))
	}
	s.stats.Pods = len(s.in.Pods)
	s.stats.Classes = len(s.classes)
	s.stats.TopologyGroups = len(s.groups)
}

// validatePools checks the NodePools for what would make a solve
// meaningless: missing or duplicate names.
func (s *solver) validatePools() {
	seen := map[string]bool{}
	for i := range s.in.NodePools {
		np := &s.in.NodePools[i]
		path := field.NewPath("nodePools").Index(i)
		if np.Name == "" {
			s.errs = append(s.errs, field.Required(path.Child("name"), "must not be empty"))
			continue
		}
		if seen[np.Name] {
			s.errs = append(s.errs, field.Duplicate(path.Child("name"), np.Name))
		}
		seen[np.Name] = true
		for j, it := range np.InstanceTypes {
			if it == nil {
				s.errs = append(s.errs, field.Required(path.Child("instanceTypes").Index(j), "must not be nil"))
			}
		}
	}
	seenNodes := map[string]bool{}
	for i := range s.in.Nodes {
		path := field.NewPath("nodes").Index(i)
		n := s.in.Nodes[i].Node
		if n == nil {
			s.errs = append(s.errs, field.Required(path.Child("node"), "must not be nil"))
			continue
		}
		if n.Name == "" {
			s.errs = append(s.errs, field.Required(path.Child("node", "metadata", "name"), "must not be empty"))
			continue
		}
		if seenNodes[n.Name] {
			s.errs = append(s.errs, field.Duplicate(path.Child("node", "metadata", "name"), n.Name))
		}
		seenNodes[n.Name] = true
		for j, p := range s.in.Nodes[i].Pods {
			if p == nil {
				s.errs = append(s.errs, field.Required(path.Child("pods").Index(j), "must not be nil"))
			}
		}
	}
	for i := range s.in.InFlight {
		path := field.NewPath("inFlight").Index(i)
		c := &s.in.InFlight[i]
		if c.Name == "" {
			s.errs = append(s.errs, field.Required(path.Child("name"), "must not be empty"))
			continue
		}
		if seenNodes[c.Name] {
			s.errs = append(s.errs, field.Duplicate(path.Child("name"), c.Name))
		}
		seenNodes[c.Name] = true
		for j, p := range c.Pods {
			if p == nil {
				s.errs = append(s.errs, field.Required(path.Child("pods").Index(j), "must not be nil"))
			}
		}
	}
	seenPods := map[PodRef]bool{}
	for i, p := range s.in.Pods {
		if p == nil {
			continue
		}
		ref := PodRef{p.Namespace, p.Name}
		if seenPods[ref] {
			s.errs = append(s.errs, field.Duplicate(field.NewPath("pods").Index(i), ref.String()))
		}
		seenPods[ref] = true
	}
	for i, ds := range s.in.DaemonSets {
		if ds == nil {
			s.errs = append(s.errs, field.Required(field.NewPath("daemonSets").Index(i), "must not be nil"))
		}
	}
}

// buildZones indexes every zone the input mentions, sorted by name.
func (s *solver) buildZones() {
	names := map[string]string{}
	note := func(z, id string) {
		if z == "" {
			return
		}
		if old, ok := names[z]; !ok || old == "" {
			names[z] = id
		}
	}
	// Pools of one node class usually share its type list: read each list
	// (same backing array and length) once.
	seenLists := map[listID]bool{}
	for i := range s.in.NodePools {
		its := s.in.NodePools[i].InstanceTypes
		if len(its) > 0 {
			id := listID{&its[0], len(its)}
			if seenLists[id] {
				continue
			}
			seenLists[id] = true
		}
		for _, it := range its {
			if it == nil {
				continue
			}
			for _, o := range it.Offerings {
				note(o.Zone, o.ZoneID)
			}
		}
	}
	for i := range s.in.Nodes {
		if n := s.in.Nodes[i].Node; n != nil {
			note(n.Labels[labelZone], n.Labels[labelZoneID])
		}
	}
	for i := range s.in.InFlight {
		if r := s.in.InFlight[i].Requirements.Get(labelZone); r != nil && r.IsFinite() {
			for _, v := range r.Values() {
				note(v, "")
			}
		}
	}
	for _, zs := range s.in.Volumes {
		for _, z := range zs {
			note(z, "")
		}
	}
	list := make([]string, 0, len(names))
	for z := range names {
		list = append(list, z)
	}
	slices.Sort(list)
	if len(list) > 64 {
		s.errs = append(s.errs, field.TooMany(field.NewPath("zones"), len(list), 64))
		list = list[:64]
	}
	s.zoneIdx = map[string]int{}
	s.zoneByID = map[string]int{}
	for i, z := range list {
		s.zones = append(s.zones, zoneInfo{name: z, id: names[z]})
		s.zoneIdx[z] = i
		if names[z] != "" {
			s.zoneByID[names[z]] = i
		}
	}
}

// buildResources tracks the extended resources the pending pods request
// (with allPods, also those of the pods on nodes and in-flight claims).
func (s *solver) buildResources(allPods bool) {
	s.res = newResTable()
	var names []corev1.ResourceName
	for _, p := range s.in.Pods {
		if p != nil {
			names = requestedNames(p, names)
		}
	}
	if allPods {
		for i := range s.in.Nodes {
			for _, p := range s.in.Nodes[i].Pods {
				if p != nil {
					names = requestedNames(p, names)
				}
			}
		}
		for i := range s.in.InFlight {
			for _, p := range s.in.InFlight[i].Pods {
				if p != nil {
					names = requestedNames(p, names)
				}
			}
		}
	}
	s.res.track(names)
}

// daemonPodSpec is the spec of the pod a DaemonSet's template makes, with
// the API server's defaulting of a container's requests from its limits
// (a resource with a limit and no request requests the limit): a
// template is not defaulted, the pods made from it are, and those pods
// are what the kube-scheduler fits onto the node. Without it a DaemonSet
// that sets only limits counts as no overhead, and the planned node turns
// out too small once the DaemonSet's pod lands on it.
func daemonPodSpec(spec *corev1.PodSpec) *corev1.PodSpec {
	out := spec.DeepCopy()
	for _, cs := range [][]corev1.Container{out.Containers, out.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
	return out
}

func (s *solver) buildDaemons() {
	for i, ds := range s.in.DaemonSets {
		if ds == nil {
			continue
		}
		pod := &corev1.Pod{Spec: *daemonPodSpec(&ds.Spec.Template.Spec)}
		terms, err := podTerms(pod)
		if err != nil {
			s.errs = append(s.errs, field.Invalid(field.NewPath("daemonSets").Index(i).Child("spec", "template", "spec"), ds.Namespace+"/"+ds.Name, err.Error()))
			continue
		}
		req, _ := s.res.podRequests(pod)
		s.daemons = append(s.daemons, &cdaemon{name: ds.Namespace + "/" + ds.Name, terms: terms, tolerations: pod.Spec.Tolerations, req: req})
	}
	for i := range s.in.NodePools {
		for _, t := range s.in.NodePools[i].Taints {
			if t.Effect == corev1.TaintEffectPreferNoSchedule {
				s.hasPreferTaints = true
			}
		}
	}
	for i := range s.in.Nodes {
		if n := s.in.Nodes[i].Node; n != nil {
			for _, t := range n.Spec.Taints {
				if t.Effect == corev1.TaintEffectPreferNoSchedule {
					s.hasPreferTaints = true
				}
			}
		}
	}
}

// buildExisting turns existing nodes and in-flight claims into simulation
// nodes, and existing pods' required anti-affinity into groups.
func (s *solver) buildExisting() {
	s.exZone = make([][]int32, len(s.zones))
	add := func(n *snode, target bool) {
		n.id = len(s.nodes)
		s.nodes = append(s.nodes, n)
		if !target {
			return
		}
		s.exAll = append(s.exAll, int32(n.id))
		switch {
		case n.zone >= 0:
			s.exZone[n.zone] = append(s.exZone[n.zone], int32(n.id))
		case n.kind == nkExisting:
			s.exNoZone = append(s.exNoZone, int32(n.id))
		}
	}
	for i := range s.in.Nodes {
		en := &s.in.Nodes[i]
		if en.Node == nil || en.MarkedForDeletion {
			continue
		}
		node := en.Node
		labels := make(map[string]string, len(node.Labels)+1)
		for k, v := range node.Labels {
			labels[k] = v
		}
		labels[requirements.NodeNameKey] = node.Name
		n := &snode{kind: nkExisting, name: node.Name, pool: s.poolByName[en.NodePool], labels: labels,
			zone: -1, ct: -1, taints: node.Spec.Taints, alloc: s.allocOf(node.Status.Allocatable)}
		if z, ok := s.zoneIdx[node.Labels[labelZone]]; ok {
			n.zone = z
		}
		n.ct = ctIndex(node.Labels[labelCapacityType])
		for _, p := range en.Pods {
			if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			req, _ := s.res.podRequests(p)
			n.used = n.used.add(req)
			n.ports = append(n.ports, podHostPorts(p)...)
			n.existingPods++
		}
		add(n, !node.Spec.Unschedulable)
		s.existingAnti(en.Pods, field.NewPath("nodes").Index(i).Child("pods"))
	}
	for i := range s.in.InFlight {
		c := &s.in.InFlight[i]
		if c.Name == "" {
			continue
		}
		n := s.inFlightNode(c)
		add(n, true)
		s.existingAnti(c.Pods, field.NewPath("inFlight").Index(i).Child("pods"))
	}
	s.nExisting = len(s.nodes)
}

// inFlightNode builds the simulation node of an in-flight NodeClaim: the
// labels its requirements pin, its allocatable net of the daemonsets that
// will run there, and what its nominated pods use.
func (s *solver) inFlightNode(c *InFlightNodeClaim) *snode {
	p := s.poolByName[c.NodePool]
	labels := c.Requirements.Labels()
	labels[labelHostname] = c.Name
	labels[requirements.NodeNameKey] = c.Name
	if c.NodePool != "" {
		labels[labelNodePool] = c.NodePool
	}
	if p != nil {
		for k, v := range p.fixed {
			labels[k] = v
		}
		s.typeCommonLabels(p, c.InstanceTypeOptions, labels)
	}
	n := &snode{kind: nkInFlight, name: c.Name, pool: p, labels: labels, zone: -1, ct: -1, taints: c.Taints,
		alloc: s.allocOf(c.Allocatable)}
	if z, ok := s.zoneIdx[labels[labelZone]]; ok {
		n.zone = z
	}
	n.ct = ctIndex(labels[labelCapacityType])
	for _, d := range s.daemons {
		if _, ok := tolerates(d.tolerations, c.Taints); !ok {
			continue
		}
		for _, t := range d.terms {
			if t.Matches(labels) == nil || c.Requirements.CompatibleWith(t, requirements.CompatibleOptions{OpenKeys: requirements.WellKnownKey}) == nil {
				n.alloc = n.alloc.sub(d.req)
				break
			}
		}
	}
	for _, pod := range c.Pods {
		if pod == nil {
			continue
		}
		req, _ := s.res.podRequests(pod)
		n.used = n.used.add(req)
		n.ports = append(n.ports, podHostPorts(pod)...)
		n.existingPods++
	}
	return n
}

// defaultMaxPods is the pod capacity assumed for a node or in-flight claim
// whose allocatable does not say (the kubelet's default).
const defaultMaxPods = 110

// allocOf converts a node's allocatable; a missing pod count means the
// kubelet default.
func (s *solver) allocOf(l corev1.ResourceList) rvec {
	v := s.res.vec(l)
	if _, ok := l[corev1.ResourcePods]; !ok {
		v[rPods] = defaultMaxPods
	}
	return v
}

// typeCommonLabels adds the labels every named instance type of the pool
// agrees on.
func (s *solver) typeCommonLabels(p *cpool, names []string, labels map[string]string) {
	var common map[string]string
	for _, name := range names {
		var t *ctype
		for _, ct := range p.types {
			if ct.name == name {
				t = ct
				break
			}
		}
		if t == nil {
			return
		}
		if common == nil {
			common = map[string]string{}
			for k, v := range t.labels {
				common[k] = v
			}
			continue
		}
		for k, v := range common {
			if t.labels[k] != v {
				delete(common, k)
			}
		}
	}
	for k, v := range common {
		if _, ok := labels[k]; !ok {
			labels[k] = v
		}
	}
}

// existingAnti registers the required anti-affinity terms of pods already
// on nodes: incoming pods they match must keep out of their domains.
func (s *solver) existingAnti(pods []*corev1.Pod, path *field.Path) {
	for j, p := range pods {
		if p == nil || p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		for ti := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			t := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
			if _, err := s.termGroup(gAnti, t, p); err != nil {
				s.errs = append(s.errs, field.Invalid(path.Index(j).Child("spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution").Index(ti), p.Namespace+"/"+p.Name, err.Error()))
			}
		}
	}
}

// countExisting counts the pods on existing nodes and in-flight claims in
// the groups they belong to or own.
func (s *solver) countExisting() {
	var member []int
	visit := func(n *snode, pods []*corev1.Pod) {
		for _, p := range pods {
			if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			member = s.memberships(p.Namespace, p.Labels, member[:0])
			for _, gi := range member {
				g := s.groups[gi]
				g.total++
				if d, ok := s.domain(n, g); ok && s.existingEligible(g, n) {
					g.addCount(d, 1)
				}
			}
			if p.Spec.Affinity == nil || p.Spec.Affinity.PodAntiAffinity == nil {
				continue
			}
			for ti := range p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				t := &p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
				gi, err := s.termGroup(gAnti, t, p)
				if err != nil {
					continue
				}
				g := s.groups[gi]
				if d, ok := s.domain(n, g); ok {
					g.addOwner(d, 1)
				}
			}
		}
	}
	id := 0
	for i := range s.in.Nodes {
		en := &s.in.Nodes[i]
		if en.Node == nil || en.MarkedForDeletion {
			continue
		}
		visit(s.nodes[id], en.Pods)
		id++
	}
	for i := range s.in.InFlight {
		c := &s.in.InFlight[i]
		if c.Name == "" {
			continue
		}
		visit(s.nodes[id], c.Pods)
		id++
	}
}

// totalPrice sums the cheapest right-sized price of every new claim.
func (s *solver) totalPrice() float64 {
	total := 0.0
	for _, n := range s.nodes[s.nExisting:] {
		if n.removed || len(n.pods) == 0 {
			continue
		}
		if t, o, ok := s.rightSize(n); ok {
			_ = t
			total += o.price
		}
	}
	return total
}

func (s *solver) String() string {
	return fmt.Sprintf("solver{pods=%d classes=%d nodes=%d}", len(s.in.Pods), len(s.classes), len(s.nodes))
}
