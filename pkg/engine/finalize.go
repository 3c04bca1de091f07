package engine

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// rightSize returns the cheapest type (and its offering) of a new claim's
// options that holds its pods.
func (s *solver) rightSize(n *snode) (*ctype, coff, bool) {
	p := n.pool
	var best *ctype
	var bestOff coff
	n.types.each(func(i int) {
		t := p.types[i]
		if best != nil && t.minPrice > bestOff.price {
			return
		}
		if !n.used.fits(t.alloc) || !s.withinReserved(p, n, t) {
			return
		}
		o, ok := t.cheapest(n.zones, n.cts)
		if !ok {
			return
		}
		if best == nil || o.price < bestOff.price || o.price == bestOff.price && t.name < best.name {
			best, bestOff = t, o
		}
	})
	return best, bestOff, best != nil
}

// options lists every type of a claim that holds its pods, cheapest
// available offering first (then by name).
func (s *solver) options(n *snode) []*ctype {
	p := n.pool
	type opt struct {
		t     *ctype
		price float64
	}
	var out []opt
	n.types.each(func(i int) {
		t := p.types[i]
		if !n.used.fits(t.alloc) || !s.withinReserved(p, n, t) {
			return
		}
		if o, ok := t.cheapest(n.zones, n.cts); ok {
			out = append(out, opt{t, o.price})
		}
	})
	slices.SortStableFunc(out, func(a, b opt) int {
		if c := cmp.Compare(a.price, b.price); c != 0 {
			return c
		}
		return strings.Compare(a.t.name, b.t.name)
	})
	res := make([]*ctype, len(out))
	for i := range out {
		res[i] = out[i].t
	}
	return res
}

// validPrice reports whether p is a usable price (finite, positive).
func validPrice(p float64) bool { return p > 0 && !math.IsInf(p, 0) && !math.IsNaN(p) }

// finish builds the plan.
func (s *solver) finish() *Plan {
	plan := &Plan{}
	for i := range s.in.Nodes {
		if en := &s.in.Nodes[i]; en.Node != nil && !en.MarkedForDeletion && validPrice(en.PricePerHour) {
			plan.FleetPricePerHour += en.PricePerHour
		}
	}
	for i := range s.in.InFlight {
		if c := &s.in.InFlight[i]; validPrice(c.PricePerHour) {
			plan.FleetPricePerHour += c.PricePerHour
		}
	}
	for _, n := range s.nodes[:s.nExisting] {
		for _, pod := range n.pods {
			p := s.in.Pods[pod]
			plan.Existing = append(plan.Existing, Placement{Pod: PodRef{p.Namespace, p.Name}, Node: n.name, InFlight: n.kind == nkInFlight})
			s.stats.PlacedExisting++
		}
	}
	used := map[string]bool{}
	for i := range s.in.Nodes {
		if n := s.in.Nodes[i].Node; n != nil {
			used[n.Name] = true
		}
	}
	for i := range s.in.InFlight {
		used[s.in.InFlight[i].Name] = true
	}
	// Claims in plan order: by pool (weight order), then creation.
	var claims []*snode
	for _, n := range s.nodes[s.nExisting:] {
		if !n.removed && len(n.pods) > 0 {
			claims = append(claims, n)
		}
	}
	slices.SortStableFunc(claims, func(a, b *snode) int { return cmp.Compare(a.pool.idx, b.pool.idx) })
	seq := make([]int, len(s.pools))
	var boundClaims []*snode
	room := maps.Clone(s.reservedRoom)
	led := s.ledger.Clone()
	for _, n := range claims {
		p := n.pool
		opts := s.options(n)
		if len(opts) == 0 {
			// Cannot happen: construction keeps the target among the options.
			continue
		}
		off, _ := opts[0].cheapest(n.zones, n.cts)
		// Reservations and commitments are counted: a claim that finds
		// one full is planned on what remains (which may be the other).
		commit := ""
		for reserved, covered := false, false; ; {
			if off.ct == ctReserved && !reserved {
				reserved = true
				opts, off = s.reserve(n, opts, room)
			} else if off.cov && !covered {
				covered = true
				opts, off, commit = s.cover(n, opts, off, led)
			} else {
				break
			}
		}
		name := ""
		for {
			seq[p.idx]++
			name = fmt.Sprintf("%s-%d", p.name, seq[p.idx])
			if !used[name] {
				break
			}
		}
		used[name] = true
		nc := NewNodeClaim{
			Name: name, NodePool: p.name, Taints: p.taints, StartupTaints: p.np.StartupTaints,
			Offering: PlannedOffering{InstanceType: opts[0].name, Zone: s.zones[off.zone].name, CapacityType: ctNames[off.ct], Price: off.price},
		}
		if commit != "" {
			nc.Offering.Commitment, nc.Offering.ListPrice = commit, off.list
		}
		for _, t := range opts {
			nc.InstanceTypeOptions = append(nc.InstanceTypeOptions, t.name)
		}
		nc.Requirements, nc.Labels = s.claimRequirements(n, opts, name)
		for _, pod := range n.pods {
			p := s.in.Pods[pod]
			nc.Pods = append(nc.Pods, PodRef{p.Namespace, p.Name})
		}
		nc.Requests = s.res.list(n.used.add(opts[0].ds))
		plan.NodeClaims = append(plan.NodeClaims, nc)
		plan.PricePerHour += off.price
		s.stats.PlacedNew += len(n.pods)
		boundClaims = append(boundClaims, n)
	}
	for _, n := range s.nodes {
		if n.removed {
			continue
		}
		for _, pc := range n.podPC {
			if pc.mask != pc.sc.masks[0] {
				s.stats.Relaxed++
			}
		}
	}
	plan.FleetPricePerHour += plan.PricePerHour
	plan.Unschedulable = s.unschedulable()
	s.stats.Unschedulable = len(plan.Unschedulable)
	if !s.opts.SkipLowerBound {
		plan.LowerBound = s.lowerBound(boundClaims)
	}
	plan.Stats = s.stats
	return plan
}

// claimRequirements builds a claim's requirements and labels: the pool's,
// narrowed by each pod's node selector term, the options, the zones and
// capacity types with offerings, free keys pinned to one value.
func (s *solver) claimRequirements(n *snode, opts []*ctype, name string) (requirements.Requirements, map[string]string) {
	p := n.pool
	reqs := p.reqs
	seen := map[*pclass]bool{}
	for _, pc := range n.podPC {
		if seen[pc] {
			continue
		}
		seen[pc] = true
		if t, ok := s.finalTerm(pc, n, opts); ok {
			reqs = reqs.Intersection(t)
		}
	}
	names := make([]string, len(opts))
	var zones zmask
	var cts ctmask
	for i, t := range opts {
		names[i] = t.name
		for _, o := range t.offs {
			if n.zones.has(o.zone) && n.cts.has(o.ct) {
				zones |= 1 << uint(o.zone)
				cts |= 1 << uint(o.ct)
			}
		}
	}
	add := func(key string, op requirements.Operator, vals []string) {
		r, err := requirements.New(key, op, vals, nil)
		if err == nil {
			reqs = reqs.Intersection(requirements.NewRequirements(r))
		}
	}
	add(labelInstanceType, requirements.In, names)
	add(labelZone, requirements.In, s.zoneNames(zones))
	var ctv []string
	for c := range nCT {
		if cts.has(c) {
			ctv = append(ctv, ctNames[c])
		}
	}
	add(labelCapacityType, requirements.In, ctv)
	add(labelNodePool, requirements.In, []string{p.name})
	for k, v := range n.pinned {
		add(k, requirements.In, []string{v})
	}
	// Every free key gets one value, so the node carries the label.
	keys := make([]string, 0, len(p.free))
	for k := range p.free {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if v, ok := reqs.Get(k).Any(); ok {
			add(k, requirements.In, []string{v})
		}
	}
	labels := reqs.Labels()
	for k, v := range p.fixed {
		labels[k] = v
	}
	labels[labelHostname] = name
	return reqs, labels
}

// finalTerm returns the node selector term (with active node preferences)
// that a pod of pc satisfies on the final claim.
func (s *solver) finalTerm(pc *pclass, n *snode, opts []*ctype) (requirements.Requirements, bool) {
	pp := pc.poolEntry(n.pool)
	if pp == nil {
		return requirements.Requirements{}, false
	}
	for _, a := range pp.alts {
		if a.zones&n.zones == 0 || a.cts&n.cts == 0 {
			continue
		}
		ok := false
		for _, t := range opts {
			if a.types.has(t.idx) {
				ok = true
				break
			}
		}
		if ok {
			return a.term, true
		}
	}
	return requirements.Requirements{}, false
}

// unschedulable lists the pods left unplaced, with their reasons, sorted.
func (s *solver) unschedulable() []PodError {
	var out []PodError
	for _, c := range s.classes {
		if c.next >= len(c.pods) && len(c.back) == 0 {
			continue
		}
		code, msg := s.diagnose(c)
		for _, bp := range c.back {
			p := s.in.Pods[bp.pod]
			out = append(out, PodError{Pod: PodRef{p.Namespace, p.Name}, Code: code, Message: msg})
		}
		for _, pod := range c.pods[c.next:] {
			p := s.in.Pods[pod]
			out = append(out, PodError{Pod: PodRef{p.Namespace, p.Name}, Code: code, Message: msg})
		}
	}
	slices.SortFunc(out, func(a, b PodError) int {
		if c := strings.Compare(a.Pod.Namespace, b.Pod.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Pod.Name, b.Pod.Name)
	})
	return out
}

// diagnose explains why the remaining pods of a class could not be placed.
func (s *solver) diagnose(c *cclass) (ReasonCode, string) {
	if c.errCode != "" {
		return c.errCode, c.errMsg
	}
	pc := c.lastPC
	if pc == nil {
		pc = s.pclassFor(c, c.sc.masks[len(c.sc.masks)-1])
	}
	if len(s.pools) == 0 {
		return NoCompatibleNodePool, "no NodePool exists and no existing node can take the pod"
	}
	var parts []string
	var code ReasonCode
	if len(pc.pools) == 0 {
		unsupported, other := false, ReasonCode("")
		for _, r := range pc.rejects {
			parts = append(parts, fmt.Sprintf("nodepool %q: %s", r.pool.name, r.msg))
			switch r.code {
			case Unsupported:
				unsupported = true
			case NoCompatibleNodePool:
			default:
				if other == "" {
					other = r.code
				}
			}
		}
		switch {
		case other != "":
			code = other
		case unsupported:
			code = Unsupported
		default:
			code = NoCompatibleNodePool
		}
		return code, strings.Join(parts, "; ")
	}
	for _, pp := range pc.pools {
		f := pc.lastFail[pp.pool.idx]
		fc, fm := s.failReason(pc, pp.pool, f)
		if code == "" {
			code = fc
		}
		parts = append(parts, fmt.Sprintf("nodepool %q: %s", pp.pool.name, fm))
	}
	for _, r := range pc.rejects {
		parts = append(parts, fmt.Sprintf("nodepool %q: %s", r.pool.name, r.msg))
	}
	if len(c.sc.prefs) > 0 && pc.mask != 0 {
		parts = append(parts, "preferences were relaxed")
	}
	return code, strings.Join(parts, "; ")
}

func (s *solver) failReason(pc *pclass, p *cpool, f failInfo) (ReasonCode, string) {
	switch f.why {
	case fwLimits:
		var lim []string
		for _, l := range p.limits {
			lim = append(lim, fmt.Sprintf("%s limit %s (remaining %s)", l.name, formatLimit(l.name, l.limit), formatLimit(l.name, max(l.remaining, 0))))
		}
		return NodePoolLimitReached, "a new node would exceed the pool's limits: " + strings.Join(lim, ", ")
	case fwTopoZone, fwTopoHost, fwTopoCT, fwTopoOther, fwNoZone:
		g := f.group
		if g == nil {
			return TopologySpreadUnsatisfiable, "no topology domain satisfies the pod's constraints"
		}
		code := TopologySpreadUnsatisfiable
		switch g.kind {
		case gAffinity:
			code = AffinityUnsatisfiable
		case gAnti:
			code = AntiAffinityConflict
		}
		who := "the pod's"
		if !pc.owns(g.idx) {
			who = "an existing or planned pod's"
		}
		return code, fmt.Sprintf("%s %s cannot be met in any domain", who, describeGroup(g))
	case fwPorts:
		return HostPortConflict, "its host ports are taken on every node it could use"
	case fwVolume, fwOffering:
		if pc.sc.vol != allZones {
			return VolumeZoneConflict, fmt.Sprintf("volumes %s allow only zones [%s], where no fitting instance type has an available offering",
				joinQuoted(pc.sc.volNames), joinSpace(s.zoneNames(pc.sc.vol&allZonesOf(s))))
		}
		return NoAvailableOffering, "no fitting instance type has an available offering in the allowed zones and capacity types"
	case fwMinValues:
		var keys []string
		for _, mv := range p.minValues {
			keys = append(keys, fmt.Sprintf("%s minValues %d", mv.key, mv.min))
		}
		return MinValuesUnsatisfiable, "no node holding the pod keeps the pool's " + strings.Join(keys, ", ")
	case fwResources:
		return ResourcesExceedAllTypes, "no instance type holds the pod"
	}
	return NoCompatibleNodePool, "no new node can take the pod"
}

func formatLimit(name any, v int64) string {
	if fmt.Sprint(name) == "cpu" {
		return formatAmount(rCPU, v)
	}
	if fmt.Sprint(name) == "memory" {
		return formatAmount(rMem, v)
	}
	return fmt.Sprint(v)
}

// reserve gives claim n, whose cheapest offering is reserved, room in a
// capacity reservation of its first option (its cheapest reserved
// offering whose reservation has room, taken off room); when every
// reservation of the option is full, the claim leaves the reserved
// capacity type out and takes its options and offering from the others.
// Reservations hold a counted number of instances, so claims in plan
// order fill them and the rest are planned on the pool's other capacity
// types. A reserved offering without a reservation id (a catalog's) is not
// counted. A claim allowed only reserved capacity keeps its offering: its
// launch fails for lack of capacity and the next plan sees the
// reservation full.
func (s *solver) reserve(n *snode, opts []*ctype, room map[string]int) ([]*ctype, coff) {
	for _, o := range opts[0].offs {
		if o.ct != ctReserved || !n.zones.has(o.zone) || !n.cts.has(o.ct) {
			continue
		}
		if o.res == "" {
			return opts, o // reserved capacity of no counted reservation (a simulate catalog's)
		}
		if room[o.res] > 0 {
			room[o.res]--
			return opts, o
		}
	}
	cts := n.cts
	n.cts &^= 1 << uint(ctReserved)
	if n.cts != 0 {
		if alt := s.options(n); len(alt) > 0 {
			off, _ := alt[0].cheapest(n.zones, n.cts)
			return alt, off
		}
	}
	n.cts = cts
	off, _ := opts[0].cheapest(n.zones, n.cts)
	return opts, off
}
