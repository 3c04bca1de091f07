package engine

import (
	"slices"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// decision is the outcome of a placement check: where the pod may go and
// how the node must narrow.
type decision struct {
	ok   bool
	why  failWhy
	grp  *tgroup
	alt  *classAlt
	zone int // zone to pin the node to, -1: leave as is
	ct   int // capacity type to pin, -1: leave as is
	// pinKey/pinVal pin an "other" topology key (new NodeClaims).
	pinKey, pinVal string
	// elig settles filtered spreads the pod is counted by, after narrowing
	// the claim to eligTypes × eligZones × eligCTs (when eligTypes is set).
	elig      []eligNarrow
	eligTypes bitset
	eligZones zmask
	eligCTs   ctmask
}

func fail(why failWhy) decision { return decision{why: why, zone: -1, ct: -1} }

func failGroup(why failWhy, g *tgroup) decision {
	return decision{why: why, grp: g, zone: -1, ct: -1}
}

// canPlace checks whether one pod of pc may go onto node n now. zonePref
// lists candidate zones, best first, for pods whose zone matters.
func (s *solver) canPlace(pc *pclass, n *snode, zonePref []int) decision {
	s.evals++
	if !fitsSum(&n.used, &pc.req, &n.alloc) {
		return fail(fwResources)
	}
	if n.kind == nkNew {
		return s.canPlaceNew(pc, n, zonePref)
	}
	return s.canPlaceExisting(pc, n)
}

func (s *solver) canPlaceExisting(pc *pclass, n *snode) decision {
	if !s.exCompatible(pc, n) {
		return fail(fwCompat)
	}
	if len(pc.sc.ports) > 0 && portsConflict(pc.sc.ports, n.ports) {
		return fail(fwPorts)
	}
	if pc.sc.vol != allZones && (n.zone < 0 || !pc.sc.vol.has(n.zone)) {
		return fail(fwVolume)
	}
	if pc.needsZone && n.zone < 0 {
		return fail(fwNoZone)
	}
	if pc.zoneRel && n.zone < 0 && n.kind == nkInFlight {
		// The zone it lands in is unknown: the pod could not be counted.
		return fail(fwNoZone)
	}
	for _, r := range pc.hostG {
		if !groupOK(r.g, n.id, r.own, r.member, r.g.kind != gSpread || s.existingEligible(r.g, n)) {
			return failGroup(fwTopoHost, r.g)
		}
	}
	for _, r := range pc.zoneG {
		d, ok := s.domain(n, r.g)
		if !ok {
			if r.own && r.g.kind != gAnti {
				return failGroup(fwNoZone, r.g)
			}
			continue
		}
		if !s.zoneRefOK(pc, r, d, r.g.kind != gSpread || s.existingEligible(r.g, n)) {
			return failGroup(fwTopoZone, r.g)
		}
	}
	for _, r := range pc.ctG {
		d, ok := s.domain(n, r.g)
		if !ok {
			if r.own && r.g.kind != gAnti {
				return failGroup(fwTopoCT, r.g)
			}
			continue
		}
		if !groupOK(r.g, d, r.own, r.member, r.g.kind != gSpread || s.existingEligible(r.g, n)) {
			return failGroup(fwTopoCT, r.g)
		}
	}
	for _, r := range pc.otherG {
		d, ok := s.domain(n, r.g)
		if !ok {
			if r.own && r.g.kind != gAnti {
				return failGroup(fwTopoOther, r.g)
			}
			continue
		}
		if !groupOK(r.g, d, r.own, r.member, r.g.kind != gSpread || s.existingEligible(r.g, n)) {
			return failGroup(fwTopoOther, r.g)
		}
	}
	return decision{ok: true, zone: -1, ct: -1}
}

// exCompatible checks (and caches) labels and taints against an existing
// node or in-flight NodeClaim.
func (s *solver) exCompatible(pc *pclass, n *snode) bool {
	if n.id < len(pc.exCompat) {
		if v := pc.exCompat[n.id]; v != 0 {
			return v == 1
		}
	} else {
		pc.exCompat = append(pc.exCompat, make([]uint8, s.nExisting-len(pc.exCompat))...)
	}
	ok := false
	for _, t := range pc.terms {
		if t.Matches(n.labels) == nil {
			ok = true
			break
		}
	}
	if ok {
		if _, tol := tolerates(pc.sc.tols, n.taints); !tol {
			ok = false
		}
	}
	if ok && pc.avoidPrefer && !toleratesPrefer(pc.sc.tols, n.taints) {
		ok = false
	}
	v := uint8(2)
	if ok {
		v = 1
	}
	pc.exCompat[n.id] = v
	return ok
}

// findAlt returns the first term of pc that a new NodeClaim still admits.
func findAlt(pc *pclass, n *snode) *classAlt {
	pp := pc.poolEntry(n.pool)
	if pp == nil {
		return nil
	}
	for _, a := range pp.alts {
		if !a.types.has(n.target.idx) || a.zones&n.zones == 0 || a.cts&n.cts == 0 {
			continue
		}
		if a.free.Len() > 0 && n.free.Len() > 0 && !freeIntersects(a.free, n.free) {
			continue
		}
		return a
	}
	return nil
}

func freeIntersects(a, b requirements.Requirements) bool {
	for r := range a.All() {
		if o := b.Get(r.Key()); o != nil {
			if _, ok := r.Intersection(o).Any(); !ok {
				return false
			}
		}
	}
	return true
}

func (s *solver) canPlaceNew(pc *pclass, n *snode, zonePref []int) decision {
	alt := findAlt(pc, n)
	if alt == nil {
		return fail(fwCompat)
	}
	if len(pc.sc.ports) > 0 && portsConflict(pc.sc.ports, n.ports) {
		return fail(fwPorts)
	}
	d := decision{ok: true, alt: alt, zone: -1, ct: -1}
	for _, r := range pc.hostG {
		if !groupOK(r.g, n.id, r.own, r.member, true) {
			return failGroup(fwTopoHost, r.g)
		}
	}
	zones := n.zones & alt.zones
	cts := n.cts & alt.cts
	if pc.ctRel && n.ct < 0 {
		c, g := s.pickCT(pc, n, zones, cts)
		if c < 0 {
			return failGroup(fwTopoCT, g)
		}
		d.ct = c
		cts = 1 << uint(c)
	} else if n.ct >= 0 {
		for _, r := range pc.ctG {
			if !groupOK(r.g, n.ct, r.own, r.member, true) {
				return failGroup(fwTopoCT, r.g)
			}
		}
	}
	if pc.zoneRel {
		if n.zone >= 0 {
			if g := s.zoneBlock(pc, n.zone); g != nil {
				return failGroup(fwTopoZone, g)
			}
		} else {
			z := -1
			var blocking *tgroup
			for _, cand := range zonePref {
				if !zones.has(cand) {
					continue
				}
				if _, ok := n.target.cheapest(1<<uint(cand), cts); !ok {
					continue
				}
				if g := s.zoneBlock(pc, cand); g != nil {
					blocking = g
					continue
				}
				z = cand
				break
			}
			if z < 0 {
				return failGroup(fwTopoZone, blocking)
			}
			d.zone = z
			zones = 1 << uint(z)
		}
	}
	if _, ok := n.target.cheapest(zones, cts); !ok {
		return fail(fwVolume)
	}
	if len(pc.otherG) > 0 {
		for _, r := range pc.otherG {
			v, known := s.otherValue(n, r.g.key)
			if !known {
				// Pin to the target's value (or the free key's first value).
				pv, ok := s.pinValue(n, r.g.key)
				if !ok {
					if r.own && r.g.kind != gAnti {
						return failGroup(fwTopoOther, r.g)
					}
					continue
				}
				v = pv
				d.pinKey, d.pinVal = r.g.key, pv
			}
			if !groupOK(r.g, r.g.valueIndex(v), r.own, r.member, true) {
				return failGroup(fwTopoOther, r.g)
			}
		}
	}
	mvTypes := alt.types
	if len(pc.eligG) > 0 {
		// Settle, for each filtered spread this pod is counted by, whether
		// the claim counts (narrowing it if it straddles the filter).
		types := n.types.clone()
		types.and(alt.types)
		for _, g := range pc.eligG {
			if _, done := n.elig[g.idx]; done {
				continue
			}
			en, ok := s.eligPlan(g, n, types, zones, cts)
			if !ok {
				return failGroup(fwTopoOther, g)
			}
			if en.narrow {
				types, zones, cts = en.types, en.zones, en.cts
				d.eligTypes = types
				d.eligZones, d.eligCTs = zones, cts
			}
			d.elig = append(d.elig, en)
		}
		mvTypes = types
		if d.zone < 0 && zones.count() == 1 && n.zone < 0 {
			d.zone = zones.first()
		}
	}
	if len(n.pool.minValues) > 0 {
		load := n.used.add(pc.req)
		if !s.minValuesOK(n.pool, n, mvTypes, load, zones, cts) {
			return fail(fwMinValues)
		}
	}
	return d
}

// pinValue picks the value a new NodeClaim would be pinned to for an
// "other" topology key: its target type's value, or the first value its
// free requirement allows.
func (s *solver) pinValue(n *snode, key string) (string, bool) {
	p := n.pool
	if p.typeKeys[key] {
		v, ok := n.target.labels[key]
		return v, ok
	}
	if r := n.free.Get(key); r != nil {
		return r.Any()
	}
	if r, ok := p.free[key]; ok {
		return r.Any()
	}
	return "", false
}

// zoneBlock returns the first zone group that forbids pc in zone z (nil
// if none). Every node of the zone is assumed to count.
func (s *solver) zoneBlock(pc *pclass, z int) *tgroup {
	for _, r := range pc.zoneG {
		if !s.zoneRefOK(pc, r, z, true) {
			return r.g
		}
	}
	return nil
}

// zoneRefOK checks one zone group in zone z: against the class's zone
// quota when the group is its quota spread, by groupOK otherwise.
func (s *solver) zoneRefOK(pc *pclass, r gref, z int, elig bool) bool {
	if c := pc.cls; c.quotaG == r.g {
		return c.quotaUsed[z] < c.quota[z]
	}
	return groupOK(r.g, z, r.own, r.member, elig)
}

// pickCT chooses a capacity type for a ct-relevant pod on an unpinned
// claim: the cheapest for the target that the ct groups allow.
func (s *solver) pickCT(pc *pclass, n *snode, zones zmask, cts ctmask) (int, *tgroup) {
	best, bestPrice := -1, 0.0
	var blocking *tgroup
	for c := range nCT {
		if !cts.has(c) {
			continue
		}
		price := n.target.priceIn(zones, 1<<uint(c))
		if price == inf {
			continue
		}
		var g *tgroup
		for _, r := range pc.ctG {
			if !groupOK(r.g, c, r.own, r.member, true) {
				g = r.g
				break
			}
		}
		if g != nil {
			blocking = g
			continue
		}
		if best < 0 || price < bestPrice {
			best, bestPrice = c, price
		}
	}
	return best, blocking
}

// zonePref orders the zones for a zone-relevant pod: least loaded first in
// the spread groups it owns or is counted by, zones holding its affinity
// targets first, then by index.
func (s *solver) zonePref(pc *pclass, buf []int) []int {
	buf = buf[:0]
	type zs struct {
		z     int
		score int64
	}
	var arr [64]zs
	k := 0
	for z := range s.zones {
		var score int64
		for _, r := range pc.zoneG {
			g := r.g
			switch g.kind {
			case gSpread:
				score += int64(g.cnt(z)) * 4
			case gAffinity:
				if r.own && g.cnt(z) > 0 {
					score -= 1 << 40
				}
			}
		}
		arr[k] = zs{z, score}
		k++
	}
	slices.SortStableFunc(arr[:k], func(a, b zs) int {
		if a.score != b.score {
			if a.score < b.score {
				return -1
			}
			return 1
		}
		if sh := s.knobs.zoneShift; sh != 0 {
			n := len(s.zones)
			return (a.z+n-sh%n)%n - (b.z+n-sh%n)%n
		}
		return a.z - b.z
	})
	for i := range k {
		buf = append(buf, arr[i].z)
	}
	return buf
}

// minValuesOK checks that the types still able to hold load keep every
// minValues of the pool.
func (s *solver) minValuesOK(p *cpool, n *snode, altTypes bitset, load rvec, zones zmask, cts ctmask) bool {
	for i := range p.minValues {
		mv := &p.minValues[i]
		if s.distinctValues(p, mv, n, altTypes, load, zones, cts) < mv.min {
			return false
		}
	}
	return true
}

func (s *solver) distinctValues(p *cpool, mv *mvKey, n *snode, altTypes bitset, load rvec, zones zmask, cts ctmask) int {
	switch {
	case mv.typeVal != nil:
		seen := s.mvScratch[:0]
		for range mv.nvals {
			seen = append(seen, false)
		}
		cnt := 0
		for wi := range n.types {
			w := n.types[wi]
			if altTypes != nil {
				w &= altTypes[wi]
			}
			for w != 0 {
				b := trailing(w)
				w &= w - 1
				i := wi<<6 | b
				t := p.types[i]
				if !load.fits(t.alloc) || t.zones&zones == 0 || t.cts&cts == 0 || !s.withinReserved(p, n, t) {
					continue
				}
				if v := mv.typeVal[i]; v >= 0 && !seen[v] {
					seen[v] = true
					cnt++
				}
			}
		}
		s.mvScratch = seen
		return cnt
	case mv.kind == kindZone || mv.kind == kindZoneID:
		return zones.count()
	case mv.kind == kindCapacity:
		c := 0
		for i := range nCT {
			if cts.has(i) {
				c++
			}
		}
		return c
	}
	return mv.min // keys fixed per pool: nothing to count
}

// withinReserved reports whether a type fits what a claim holds against
// its pool's limits.
func (s *solver) withinReserved(p *cpool, n *snode, t *ctype) bool {
	if len(p.limits) == 0 || n.reserved == nil {
		return true
	}
	for i := range p.limits {
		if t.capLimit[i] > n.reserved[i] {
			return false
		}
	}
	return true
}

// place puts one pod of pc onto n as decided.
func (s *solver) place(pc *pclass, n *snode, d decision, pod int32) {
	if s.trial != nil {
		s.touch(n)
		s.trial.moves = append(s.trial.moves, move{pod: pod, pc: pc, node: n, add: true})
	}
	n.used = n.used.add(pc.req)
	if len(pc.sc.ports) > 0 {
		n.ports = append(n.ports, pc.sc.ports...)
	}
	if n.kind == nkNew {
		a := d.alt
		n.types.and(a.types)
		zones := n.zones & a.zones
		if d.zone >= 0 {
			zones = 1 << uint(d.zone)
		}
		s.narrowZones(n, zones)
		n.cts &= a.cts
		if d.ct >= 0 {
			n.cts = 1 << uint(d.ct)
		}
		if c, ok := n.cts.only(); ok {
			n.ct = c
		}
		if a.free.Len() > 0 {
			n.free = n.free.Intersection(a.free)
		}
		if d.pinKey != "" {
			s.pinOther(n, d.pinKey, d.pinVal)
		}
		if d.elig != nil {
			if d.eligTypes != nil {
				n.types.and(d.eligTypes)
				s.narrowZones(n, n.zones&d.eligZones)
				n.cts &= d.eligCTs
				if c, ok := n.cts.only(); ok {
					n.ct = c
				}
			}
			if n.elig == nil {
				n.elig = map[int]bool{}
			}
			for _, en := range d.elig {
				n.elig[en.g] = en.res
			}
		}
	}
	n.pods = append(n.pods, pod)
	n.podPC = append(n.podPC, pc)
	s.podNode[pod] = int32(n.id)
	s.count(pc, n, 1)
	if pool := pc.cls.topPool; pool >= 0 {
		s.demand[pool] = s.demand[pool].sub(pc.req)
	}
	for _, g := range pc.anchorGroups {
		g.pendingAnchors--
	}
	for _, gi := range pc.sc.hard {
		s.groups[gi].pendingOwners--
	}
}

// unplace removes pod (of placement class pc) from n.
func (s *solver) unplace(pc *pclass, n *snode, pod int32) {
	if s.trial != nil {
		s.touch(n)
		s.trial.moves = append(s.trial.moves, move{pod: pod, pc: pc, node: n})
	}
	i := slices.Index(n.pods, pod)
	n.pods = slices.Delete(n.pods, i, i+1)
	n.podPC = slices.Delete(n.podPC, i, i+1)
	n.used = n.used.sub(pc.req)
	if len(pc.sc.ports) > 0 {
		for _, hp := range pc.sc.ports {
			if j := slices.Index(n.ports, hp); j >= 0 {
				n.ports = slices.Delete(n.ports, j, j+1)
			}
		}
	}
	s.podNode[pod] = -1
	s.count(pc, n, -1)
	if n.kind == nkNew {
	}
	if pool := pc.cls.topPool; pool >= 0 {
		s.demand[pool] = s.demand[pool].add(pc.req)
	}
	for _, g := range pc.anchorGroups {
		g.pendingAnchors++
	}
	for _, gi := range pc.sc.hard {
		s.groups[gi].pendingOwners++
	}
}

// count adds delta pods of pc on n to the topology groups.
func (s *solver) count(pc *pclass, n *snode, delta int32) {
	if c := pc.cls; c.quotaG != nil {
		if d, ok := s.domain(n, c.quotaG); ok {
			c.quotaUsed[d] += delta
		}
	}
	if delta > 0 {
		for _, gi := range pc.sc.hard {
			g := s.groups[gi]
			if g.kind == gAffinity && g.total == 0 && slices.Contains(pc.cls.member, gi) {
				if d, ok := s.domain(n, g); ok {
					g.first = d
				}
			}
		}
	}
	for _, gi := range pc.cls.member {
		g := s.groups[gi]
		g.total += delta
		if g.total == 0 {
			g.first = -1
		}
		if d, ok := s.domain(n, g); ok && s.eligible(g, n) {
			g.addCount(d, delta)
		}
	}
	// Only required terms make a pod an owner others must respect: the
	// kube-scheduler checks existing pods' required anti-affinity, never
	// their preferences.
	for _, gi := range pc.sc.hard {
		g := s.groups[gi]
		if d, ok := s.domain(n, g); ok {
			g.addOwner(d, delta)
			if slices.Contains(pc.cls.member, gi) {
				g.addOwnMem(d, delta)
			}
		}
	}
}

// narrowZones sets a new NodeClaim's zones; once one zone remains the
// claim is pinned and joins its pool's zone list.
func (s *solver) narrowZones(n *snode, zones zmask) {
	n.zones = zones
	if z, ok := zones.only(); ok && n.zone < 0 {
		n.zone = z
		if !n.listed {
			n.listed = true
			p := n.pool.idx
			s.poolZone[p][z] = append(s.poolZone[p][z], int32(n.id))
		}
	}
}

func (s *solver) pinOther(n *snode, key, val string) {
	if n.pinned == nil {
		n.pinned = map[string]string{}
	}
	n.pinned[key] = val
	p := n.pool
	if p.typeKeys[key] {
		n.types.each(func(i int) {
			if p.types[i].labels[key] != val {
				n.types.clear(i)
			}
		})
		return
	}
	if r, err := requirements.New(key, requirements.In, []string{val}, nil); err == nil {
		n.free.Add(r)
	}
}
