package engine

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Model is an Input compiled once, read-only, for many what-ifs: zones,
// resources, daemonset overhead, NodePools with their instance types and
// offerings, and the existing nodes and in-flight NodeClaims with what
// their pods use and which topology groups those pods count in. Each
// WhatIf runs a fresh placement state over the shared compiled parts, so
// "these nodes are gone, re-place their pods on what remains plus new
// nodes" costs a fraction of a full Solve.
//
// A Model is not safe for concurrent use (its caches fill as what-ifs run)
// and never modifies its Input.
type Model struct {
	in   *Input
	base *solver
	// ex are the existing nodes and in-flight claims as the simulation
	// starts them (id = index); never mutated after Compile.
	ex      []*snode
	exPods  [][]*corev1.Pod
	exIndex map[string]int
	// exNode[i] is the index in in.Nodes of ex[i] (-1 for in-flight).
	exNode []int
	// lsets are the distinct (namespace, labels) of the active pods on ex,
	// with where they run, for counting group members without visiting
	// every pod.
	lsets []labelSet
	lsIdx map[string]int
	kb    keyBuilder
	// members caches, per group key, the member counts per ex node.
	members map[string][]nodeCount
	// anti are the existing pods with required anti-affinity terms.
	anti []exPod
}

type labelSet struct {
	ns     string
	labels labels.Set
	nodes  []nodeCount
}

type nodeCount struct{ node, n int32 }

type exPod struct {
	node   int32
	pod    *corev1.Pod
	path   *field.Path
	active bool
}

// WhatIf is one question to a Model: with these nodes gone, where do these
// pods go?
type WhatIf struct {
	// Remove names existing nodes (or in-flight NodeClaims) that are gone:
	// nothing is placed on them and their pods do not count.
	Remove []string
	// Pods are pending in addition to the Input's pending pods, typically
	// the reschedulable pods of the removed nodes (with spec.nodeName
	// cleared or not: it is ignored).
	Pods []*corev1.Pod
	// Closed names existing nodes that stay (their pods count) but take no
	// new pod, such as nodes still inside their consolidateAfter.
	Closed []string
	// ReleaseLimits gives the removed nodes' capacity back to their
	// NodePools' limits.
	ReleaseLimits bool
	// Options replace the Input's options for this what-if.
	Options Options
}

// Compile checks and compiles in for what-ifs. Its error is the one Solve
// would return for the same input.
func Compile(in *Input) (*Model, error) {
	in, errs := withBuffers(in)
	if len(errs) > 0 {
		return nil, &InputError{Errs: errs}
	}
	s, err := newSolverBase(in, true)
	if err != nil {
		return nil, err
	}
	m := &Model{in: in, base: s, exIndex: map[string]int{}, members: map[string][]nodeCount{}}
	// The pending pods are checked here (their classes are built again by
	// every what-if); existing nodes and in-flight claims are built once.
	s.buildClasses()
	s.buildExisting()
	if len(s.errs) > 0 {
		return nil, &InputError{Errs: s.errs}
	}
	m.ex = s.nodes
	m.exPods = make([][]*corev1.Pod, len(m.ex))
	m.exNode = make([]int, len(m.ex))
	id := 0
	for i := range in.Nodes {
		en := &in.Nodes[i]
		if en.Node == nil || en.MarkedForDeletion {
			continue
		}
		m.exPods[id], m.exNode[id] = en.Pods, i
		id++
	}
	for i := range in.InFlight {
		if in.InFlight[i].Name == "" {
			continue
		}
		m.exPods[id], m.exNode[id] = in.InFlight[i].Pods, -1
		id++
	}
	m.lsIdx = map[string]int{}
	for id, pods := range m.exPods {
		m.exIndex[m.ex[id].name] = id
		path := field.NewPath("nodes").Index(m.exNode[id]).Child("pods")
		if m.exNode[id] < 0 {
			path = field.NewPath("inFlight").Child("pods")
		}
		for j, p := range pods {
			if p == nil {
				continue
			}
			active := p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
			if p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil &&
				len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				m.anti = append(m.anti, exPod{node: int32(id), pod: p, path: path.Index(j), active: active})
			}
			if !active {
				continue
			}
			m.addLabels(p, int32(id))
		}
	}
	return m, nil
}

// addLabels counts an active pod on ex node id in its label set.
func (m *Model) addLabels(p *corev1.Pod, id int32) {
	kb := &m.kb
	kb.reset()
	kb.str(p.Namespace)
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		kb.str(k)
		kb.str(p.Labels[k])
	}
	li, ok := m.lsIdx[string(kb.b)]
	if !ok {
		li = len(m.lsets)
		m.lsIdx[string(kb.b)] = li
		m.lsets = append(m.lsets, labelSet{ns: p.Namespace, labels: labels.Set(p.Labels)})
	}
	ls := &m.lsets[li]
	if k := len(ls.nodes); k > 0 && ls.nodes[k-1].node == id {
		ls.nodes[k-1].n++
	} else {
		ls.nodes = append(ls.nodes, nodeCount{id, 1})
	}
}

// Input returns the input the model was compiled from.
func (m *Model) Input() *Input { return m.in }

// Solve answers one what-if: the plan for the Input's pending pods plus
// w.Pods with w.Remove gone. A WhatIf with nothing removed and no pods
// plans like Solve on the Input (with w.Options).
func (m *Model) Solve(w WhatIf) (*Plan, error) {
	s := m.derive(w)
	if len(s.errs) > 0 {
		return nil, &InputError{Errs: s.errs}
	}
	plan := s.runBest(func() *solver { return m.derive(w) }).finish()
	// The fleet without the removed nodes, summed in the order finish
	// sums it.
	gone := make(map[string]bool, len(w.Remove))
	for _, name := range w.Remove {
		gone[name] = true
	}
	plan.FleetPricePerHour = 0
	for i := range m.in.Nodes {
		if en := &m.in.Nodes[i]; en.Node != nil && !gone[en.Node.Name] && !en.MarkedForDeletion && validPrice(en.PricePerHour) {
			plan.FleetPricePerHour += en.PricePerHour
		}
	}
	for i := range m.in.InFlight {
		if c := &m.in.InFlight[i]; !gone[c.Name] && validPrice(c.PricePerHour) {
			plan.FleetPricePerHour += c.PricePerHour
		}
	}
	plan.FleetPricePerHour += plan.PricePerHour
	return plan, nil
}

// derive builds a solver for w over the model's compiled parts.
func (m *Model) derive(w WhatIf) *solver {
	b := m.base
	in := *m.in
	in.Options = w.Options
	if len(w.Pods) > 0 {
		in.Pods = make([]*corev1.Pod, 0, len(m.in.Pods)+len(w.Pods))
		in.Pods = append(append(in.Pods, m.in.Pods...), w.Pods...)
	}
	s := &solver{
		in: &in, opts: in.Options, groupByKey: map[string]int{}, groupIndex: map[kvKey][]int{},
		knobs: defaultKnobs, window: fitWindow,
		res: b.res, zones: b.zones, zoneIdx: b.zoneIdx, zoneByID: b.zoneByID,
		daemons: b.daemons, hasPreferTaints: b.hasPreferTaints, ledger: b.ledger,
	}
	switch in.Options.PreferencePolicy {
	case "", PreferenceRespect, PreferenceIgnore:
	default:
		s.errs = append(s.errs, field.NotSupported(field.NewPath("options", "preferencePolicy"), in.Options.PreferencePolicy,
			[]string{string(PreferenceIgnore), string(PreferenceRespect)}))
		return s
	}
	// Pools: shared compiled types; per-run limits.
	s.pools = make([]*cpool, len(b.pools))
	s.poolByName = make(map[string]*cpool, len(b.pools))
	for i, p := range b.pools {
		c := *p
		c.limits = slices.Clone(p.limits)
		s.pools[i] = &c
		s.poolByName[c.name] = &c
	}
	removed := make([]bool, len(m.ex))
	for _, name := range w.Remove {
		id, ok := m.exIndex[name]
		if !ok {
			s.errs = append(s.errs, field.NotFound(field.NewPath("whatIf", "remove"), name))
			continue
		}
		if removed[id] {
			continue
		}
		removed[id] = true
		if w.ReleaseLimits {
			m.release(s, id)
		}
	}
	// Pending pods: the input's and the what-if's. Resources the model
	// does not track cannot be placed by it.
	var names []corev1.ResourceName
	for _, p := range w.Pods {
		if p != nil {
			names = requestedNames(p, names)
		}
	}
	for _, n := range names {
		if s.res.index(n) < 0 {
			s.errs = append(s.errs, field.Invalid(field.NewPath("whatIf", "pods"), string(n), "resource not tracked by the model (not requested by any pod of its input)"))
		}
	}
	if len(s.errs) > 0 {
		return s
	}
	s.buildClasses()
	if len(s.errs) > 0 {
		return s
	}
	closed := make([]bool, len(m.ex))
	for _, name := range w.Closed {
		if id, ok := m.exIndex[name]; ok {
			closed[id] = true
		}
	}
	// Existing nodes and in-flight claims, minus the removed ones.
	s.exZone = make([][]int32, len(s.zones))
	for id, t := range m.ex {
		if removed[id] {
			continue
		}
		n := new(snode)
		*n = *t
		if t.pool != nil {
			n.pool = s.pools[t.pool.idx]
		}
		n.ports = slices.Clip(t.ports)
		n.id = len(s.nodes)
		s.nodes = append(s.nodes, n)
		if closed[id] || n.kind == nkExisting && m.in.Nodes[m.exNode[id]].Node.Spec.Unschedulable {
			continue
		}
		s.exAll = append(s.exAll, int32(n.id))
		switch {
		case n.zone >= 0:
			s.exZone[n.zone] = append(s.exZone[n.zone], int32(n.id))
		case n.kind == nkExisting:
			s.exNoZone = append(s.exNoZone, int32(n.id))
		}
	}
	s.nExisting = len(s.nodes)
	// newID maps an ex index to the what-if's node id (-1: removed).
	newID := make([]int32, len(m.ex))
	next := int32(0)
	for id := range m.ex {
		if removed[id] {
			newID[id] = -1
			continue
		}
		newID[id] = next
		next++
	}
	for _, a := range m.anti {
		if newID[a.node] >= 0 {
			s.existingAnti([]*corev1.Pod{a.pod}, a.path)
		}
	}
	if len(s.errs) > 0 {
		return s
	}
	s.buildMembership()
	s.finishGroups()
	// Existing members and owners, from the cache.
	for _, g := range s.groups {
		for _, nc := range m.groupMembers(s, g) {
			id := newID[nc.node]
			if id < 0 {
				continue
			}
			n := s.nodes[id]
			g.total += nc.n
			if d, ok := s.domain(n, g); ok && s.existingEligible(g, n) {
				g.addCount(d, nc.n)
			}
		}
	}
	for _, a := range m.anti {
		id := newID[a.node]
		if id < 0 || !a.active {
			continue
		}
		n := s.nodes[id]
		for ti := range a.pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			t := &a.pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[ti]
			gi, err := s.termGroup(gAnti, t, a.pod)
			if err != nil {
				continue
			}
			g := s.groups[gi]
			if d, ok := s.domain(n, g); ok {
				g.addOwner(d, 1)
			}
		}
	}
	s.initRun()
	return s
}

// release gives node id's capacity back to its pool's limits.
func (m *Model) release(s *solver, id int) {
	t := m.ex[id]
	if t.pool == nil || m.exNode[id] < 0 {
		return
	}
	p := s.pools[t.pool.idx]
	capacity := m.in.Nodes[m.exNode[id]].Node.Status.Capacity
	for i := range p.limits {
		e := &p.limits[i]
		if i == p.nodesLimit {
			e.remaining++
			continue
		}
		if q, ok := capacity[e.name]; ok {
			e.remaining += quantityValue(e.name, &q)
		}
	}
}

// groupMembers returns how many active pods of each ex node are members of
// g, computed once per group spec.
func (m *Model) groupMembers(s *solver, g *tgroup) []nodeCount {
	if c, ok := m.members[g.gkey]; ok {
		return c
	}
	var out []nodeCount
	for i := range m.lsets {
		ls := &m.lsets[i]
		if g.matchesNS(s, ls.ns) && g.sel.Matches(ls.labels) {
			out = append(out, ls.nodes...)
		}
	}
	slices.SortFunc(out, func(a, b nodeCount) int { return int(a.node - b.node) })
	// Merge counts of the same node.
	k := 0
	for _, nc := range out {
		if k > 0 && out[k-1].node == nc.node {
			out[k-1].n += nc.n
			continue
		}
		out[k] = nc
		k++
	}
	out = out[:k]
	m.members[g.gkey] = out
	return out
}

// Commit returns the model of the cluster after a what-if is carried out:
// w.Remove gone, w.Pods bound where plan placed them (existing nodes and
// in-flight NodeClaims), and plan's new NodeClaims that hold some of
// w.Pods in flight with those pods (pods plan placed for the input's own
// pending pods stay pending). It shares the compiled pools and every
// untouched node with m, so it costs a fraction of Compile. Every pod of
// w.Pods must be placed by plan.
func (m *Model) Commit(w WhatIf, plan *Plan) (*Model, error) {
	var errs field.ErrorList
	removed := map[string]bool{}
	for _, name := range w.Remove {
		if _, ok := m.exIndex[name]; !ok {
			errs = append(errs, field.NotFound(field.NewPath("whatIf", "remove"), name))
		}
		removed[name] = true
	}
	moved := make(map[PodRef]*corev1.Pod, len(w.Pods))
	for _, p := range w.Pods {
		if p != nil {
			moved[PodRef{p.Namespace, p.Name}] = p
		}
	}
	bound := 0
	bind := func(ref PodRef, node string) *corev1.Pod {
		q := *moved[ref]
		q.Spec.NodeName = node
		bound++
		return &q
	}
	dest := map[string][]*corev1.Pod{}
	for _, pl := range plan.Existing {
		if _, ok := moved[pl.Pod]; ok {
			dest[pl.Node] = append(dest[pl.Node], bind(pl.Pod, pl.Node))
		}
	}
	var claims []InFlightNodeClaim
	for _, nc := range plan.NodeClaims {
		var pods []*corev1.Pod
		for _, ref := range nc.Pods {
			if _, ok := moved[ref]; ok {
				pods = append(pods, bind(ref, nc.Name))
			}
		}
		if len(pods) == 0 {
			continue
		}
		c := InFlightNodeClaim{Name: nc.Name, NodePool: nc.NodePool, Requirements: nc.Requirements, Taints: nc.Taints,
			StartupTaints: nc.StartupTaints, InstanceTypeOptions: nc.InstanceTypeOptions, Pods: pods, PricePerHour: nc.Offering.Price}
		if p := m.base.poolByName[nc.NodePool]; p != nil {
			for _, t := range p.np.InstanceTypes {
				if t != nil && t.Name == nc.Offering.InstanceType {
					c.Allocatable = t.Allocatable()
				}
			}
		}
		claims = append(claims, c)
	}
	if bound != len(moved) {
		errs = append(errs, field.Invalid(field.NewPath("plan"), bound, fmt.Sprintf("places %d of the what-if's %d pods", bound, len(moved))))
	}
	if len(errs) > 0 {
		return nil, &InputError{Errs: errs}
	}
	in := *m.in
	in.Nodes = make([]ExistingNode, 0, len(m.in.Nodes))
	for _, en := range m.in.Nodes {
		if en.Node != nil && removed[en.Node.Name] {
			continue
		}
		if en.Node != nil {
			if add := dest[en.Node.Name]; len(add) > 0 {
				en.Pods = append(slices.Clip(en.Pods), add...)
			}
		}
		in.Nodes = append(in.Nodes, en)
	}
	in.InFlight = make([]InFlightNodeClaim, 0, len(m.in.InFlight)+len(claims))
	for _, c := range m.in.InFlight {
		if removed[c.Name] {
			continue
		}
		if add := dest[c.Name]; len(add) > 0 {
			c.Pods = append(slices.Clip(c.Pods), add...)
		}
		in.InFlight = append(in.InFlight, c)
	}
	in.InFlight = append(in.InFlight, claims...)

	base := m.base
	if base.ledger != nil {
		// The new in-flight claims take their part of the commitments.
		nb := *base
		nb.ledger, _ = CommitmentLedger(&in)
		base = &nb
	}
	nm := &Model{in: &in, base: base, exIndex: map[string]int{}, members: map[string][]nodeCount{},
		lsIdx: make(map[string]int, len(m.lsIdx))}
	newID := make([]int32, len(m.ex))
	for old, t := range m.ex {
		if removed[t.name] {
			newID[old] = -1
			continue
		}
		newID[old] = int32(len(nm.ex))
		add := dest[t.name]
		if len(add) > 0 {
			c := new(snode)
			*c = *t
			c.ports = slices.Clip(t.ports)
			for _, p := range add {
				req, _ := m.base.res.podRequests(p)
				c.used = c.used.add(req)
				c.ports = append(c.ports, podHostPorts(p)...)
				c.existingPods++
			}
			t = c
		}
		nm.ex = append(nm.ex, t)
		pods := m.exPods[old]
		if len(add) > 0 {
			pods = append(slices.Clip(pods), add...)
		}
		nm.exPods = append(nm.exPods, pods)
	}
	// The order is Compile's: nodes, then in-flight claims, new ones last.
	nodeAt := make(map[string]int, len(in.Nodes))
	for i, en := range in.Nodes {
		if en.Node != nil {
			nodeAt[en.Node.Name] = i
		}
	}
	nm.exNode = make([]int, 0, len(nm.ex)+len(claims))
	for _, t := range nm.ex {
		if t.kind == nkExisting {
			nm.exNode = append(nm.exNode, nodeAt[t.name])
		} else {
			nm.exNode = append(nm.exNode, -1)
		}
	}
	for i := range claims {
		n := m.base.inFlightNode(&claims[i])
		nm.ex = append(nm.ex, n)
		nm.exPods = append(nm.exPods, claims[i].Pods)
		nm.exNode = append(nm.exNode, -1)
	}
	for id, t := range nm.ex {
		nm.exIndex[t.name] = id
	}
	// Label sets and anti-affinity owners, renumbered, plus the moved pods.
	for k, v := range m.lsIdx {
		nm.lsIdx[k] = v
	}
	nm.lsets = make([]labelSet, len(m.lsets))
	for i, ls := range m.lsets {
		nodes := make([]nodeCount, 0, len(ls.nodes))
		for _, nc := range ls.nodes {
			if id := newID[nc.node]; id >= 0 {
				nodes = append(nodes, nodeCount{id, nc.n})
			}
		}
		nm.lsets[i] = labelSet{ns: ls.ns, labels: ls.labels, nodes: nodes}
	}
	for _, a := range m.anti {
		if id := newID[a.node]; id >= 0 {
			a.node = id
			nm.anti = append(nm.anti, a)
		}
	}
	for id := range nm.ex {
		var add []*corev1.Pod
		if id >= len(nm.ex)-len(claims) {
			add = nm.exPods[id]
		} else {
			add = dest[nm.ex[id].name]
		}
		for _, p := range add {
			nm.addLabels(p, int32(id))
			if p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil &&
				len(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
				nm.anti = append(nm.anti, exPod{node: int32(id), pod: p, path: field.NewPath("whatIf", "pods"), active: true})
			}
		}
	}
	// Node order, and on a node its pods in order, as Compile lists them.
	slices.SortStableFunc(nm.anti, func(a, b exPod) int { return int(a.node - b.node) })
	return nm, nil
}
