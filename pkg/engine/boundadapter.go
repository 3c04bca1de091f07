package engine

import (
	"math"
	"slices"

	"github.com/dovetail-sh/dovetail/pkg/engine/bound"
)

// lowerBound builds the bound's problem from the pods the plan puts on new
// claims and solves it. Per pod class: its requests (cpu, memory, one pod
// slot), the offerings it may use in the pools its pods landed in and the
// pools of the same weight (type × zone × capacity type after requirement,
// taint, volume and availability filtering; only types one pod fits, with
// allocatable net of the daemonsets), the zone minimums a zone spread among
// the class's own pods forces, and the distinct nodes its hostname
// anti-affinity among its own pods forces.
func (s *solver) lowerBound(claims []*snode) float64 {
	if len(claims) == 0 {
		return 0
	}
	// Pods per placement class on new claims, and the pools they used.
	type agg struct {
		count int
		pools map[*cpool]bool
	}
	per := map[*pclass]*agg{}
	var order []*pclass
	for _, n := range claims {
		for _, pc := range n.podPC {
			a := per[pc]
			if a == nil {
				a = &agg{pools: map[*cpool]bool{}}
				per[pc] = a
				order = append(order, pc)
			}
			a.count++
			a.pools[n.pool] = true
		}
	}
	var prob bound.Problem
	offIdx := map[[4]int]int{}
	offering := func(p *cpool, t *ctype, o coff) int {
		k := [4]int{p.idx, t.idx, o.zone, o.ct}
		if i, ok := offIdx[k]; ok {
			return i
		}
		i := len(prob.Offerings)
		offIdx[k] = i
		prob.Offerings = append(prob.Offerings, bound.Offering{
			Price: o.price,
			Alloc: [bound.NumResources]float64{float64(t.alloc[rCPU]), float64(t.alloc[rMem]), float64(t.alloc[rPods])},
			Zone:  o.zone,
		})
		return i
	}
	allowedCache := map[string][]int{}
	var kb keyBuilder
	// The pools of each class: those used, plus their tier-mates.
	poolsOf := make([][]*pcPool, len(order))
	for ci, pc := range order {
		a := per[pc]
		for _, pp := range pc.pools {
			use := a.pools[pp.pool]
			if !use {
				for p := range a.pools {
					if p.weight == pp.pool.weight {
						use = true
					}
				}
			}
			if use {
				poolsOf[ci] = append(poolsOf[ci], pp)
			}
		}
	}
	twin := twinPools(order, poolsOf)
	for ci, pc := range order {
		a := per[pc]
		var pools []*pcPool
		for _, pp := range poolsOf[ci] {
			if twin[pp.pool] == pp.pool {
				pools = append(pools, pp)
			}
		}
		kb.reset()
		for _, pp := range pools {
			kb.int(int64(pp.pool.idx))
			for _, al := range pp.alts {
				kb.int(int64(al.zones))
				kb.int(int64(al.cts))
				for _, w := range al.types {
					kb.int(int64(w))
				}
			}
		}
		allowed, ok := allowedCache[string(kb.b)]
		if !ok {
			for _, pp := range pools {
				p := pp.pool
				for _, al := range pp.alts {
					al.types.each(func(i int) {
						t := p.types[i]
						for _, o := range t.offs {
							if al.zones.has(o.zone) && al.cts.has(o.ct) {
								allowed = append(allowed, offering(p, t, o))
							}
						}
					})
				}
			}
			slices.Sort(allowed)
			allowed = slices.Compact(allowed)
			allowedCache[string(kb.b)] = allowed
		}
		if len(allowed) == 0 {
			continue
		}
		g := bound.Group{
			Count:   a.count,
			Request: [bound.NumResources]float64{float64(pc.req[rCPU]), float64(pc.req[rMem]), float64(pc.req[rPods])},
			Allowed: allowed,
		}
		s.boundConstraints(pc, a.count, allowed, &prob, &g)
		prob.Groups = append(prob.Groups, g)
	}
	s.stats.BoundGroups = len(prob.Groups)
	total := 0.0
	for _, sub := range splitProblem(&prob) {
		res, err := bound.Solve(sub)
		if err != nil {
			return 0
		}
		total += max(res.LowerBound, zoneFloor(sub), bound.Floor(sub))
	}
	return total
}

// twinPools maps each pool the classes use to its representative: the
// first pool that offers the same types at the same prices, allocatable
// and zones, and that every class allows with the same terms (or does not
// use at all). Twins' offerings are identical columns in the bound's
// problem (same price and capacity, allowed by the same groups), so
// keeping one of each set of twins leaves the bound unchanged while the
// problem no longer grows with the number of pools: a cluster with many
// NodePools of one tier that differ only in name (or labels and taints no
// pending pod cares about) costs the bound one pool.
func twinPools(order []*pclass, poolsOf [][]*pcPool) map[*cpool]*cpool {
	type use struct {
		class int
		alts  []*classAlt
	}
	uses := map[*cpool][]use{}
	var seen []*cpool
	for ci := range order {
		for _, pp := range poolsOf[ci] {
			if _, ok := uses[pp.pool]; !ok {
				seen = append(seen, pp.pool)
			}
			uses[pp.pool] = append(uses[pp.pool], use{class: ci, alts: pp.alts})
		}
	}
	rep := make(map[*cpool]*cpool, len(seen))
	bySig := map[string]*cpool{}
	var kb keyBuilder
	sameUses := func(a, b []use) bool {
		return slices.EqualFunc(a, b, func(x, y use) bool {
			return x.class == y.class && len(x.alts) == len(y.alts) && (len(x.alts) == 0 || &x.alts[0] == &y.alts[0])
		})
	}
	for _, p := range seen {
		// A compile twin that the classes use through the same alternatives
		// (pclassFor shares them) has the same column: skip the signature.
		if tw := p.twin; tw != nil && tw != p {
			if r, ok := rep[tw]; ok && sameUses(uses[p], uses[tw]) {
				rep[p] = r
				continue
			}
		}
		kb.reset()
		for _, u := range uses[p] {
			kb.int(int64(u.class))
			kb.int(int64(len(u.alts)))
			for _, al := range u.alts {
				kb.int(int64(al.zones))
				kb.int(int64(al.cts))
				kb.int(int64(len(al.types)))
				for _, w := range al.types {
					kb.int(int64(w))
				}
			}
		}
		kb.int(int64(len(p.types)))
		for _, t := range p.types {
			kb.int(t.alloc[rCPU])
			kb.int(t.alloc[rMem])
			kb.int(t.alloc[rPods])
			kb.int(int64(len(t.offs)))
			for _, o := range t.offs {
				kb.int(int64(o.zone))
				kb.int(int64(o.ct))
				kb.int(int64(math.Float64bits(o.price)))
			}
		}
		if r, ok := bySig[string(kb.b)]; ok {
			rep[p] = r
			continue
		}
		bySig[string(kb.b)] = p
		rep[p] = p
	}
	return rep
}

// zoneFloor is a second lower bound on the cost of any plan for p, from
// the zone minimums alone, which the linear relaxation can miss when the
// pods forced into a zone fill only a fraction of a node: nodes in
// different zones are distinct, so the plan pays, in every zone z with a
// minimum, at least
//
//   - one node that holds a pod forced into z: the cheapest offering in z
//     that such a pod's group allows (each allows only offerings one of
//     its pods fits), and
//   - for each resource r, the forced pods' total request of r at the
//     lowest price per unit of r among the offerings in z any group
//     allows (whatever nodes hold them provide that much r),
//
// so at least the larger of the two. The sum over the zones bounds the
// plan; the relaxation's optimum and bound.Floor (whole nodes: what one
// node of a type can hold of the pods, per resource) are bounds as well,
// and the caller takes the largest.
func zoneFloor(p *bound.Problem) float64 {
	type zoneNeed struct {
		cheapest float64
		demand   [bound.NumResources]float64
	}
	need := map[int]*zoneNeed{}
	for _, g := range p.Groups {
		for z, m := range g.MinPerZone {
			if m <= 0 {
				continue
			}
			zn := need[z]
			if zn == nil {
				zn = &zoneNeed{cheapest: math.Inf(1)}
				need[z] = zn
			}
			for _, oi := range g.Allowed {
				if o := p.Offerings[oi]; o.Zone == z && o.Price < zn.cheapest {
					zn.cheapest = o.Price
				}
			}
			for r := range bound.NumResources {
				zn.demand[r] += float64(m) * g.Request[r]
			}
		}
	}
	total := 0.0
	for z, zn := range need {
		if math.IsInf(zn.cheapest, 1) {
			return 0 // a minimum no allowed offering serves: leave it to the relaxation
		}
		floor := zn.cheapest
		for r := range bound.NumResources {
			if zn.demand[r] <= 0 {
				continue
			}
			unit := math.Inf(1)
			for _, o := range p.Offerings {
				if o.Zone == z && o.Alloc[r] > 0 {
					unit = math.Min(unit, o.Price/o.Alloc[r])
				}
			}
			if !math.IsInf(unit, 1) {
				floor = math.Max(floor, zn.demand[r]*unit)
			}
		}
		total += floor
	}
	// Rounding in the sums above must not lift the floor over a plan.
	return total * (1 - 1e-9)
}

// splitProblem cuts a bound problem into independent parts: groups that
// share no offering (directly or through other groups) never compete, so
// the sum of the parts' bounds bounds the whole, and smaller problems
// solve faster and tighter.
func splitProblem(p *bound.Problem) []*bound.Problem {
	parent := make([]int, len(p.Offerings))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, g := range p.Groups {
		for _, o := range g.Allowed[1:] {
			if a, b := find(g.Allowed[0]), find(o); a != b {
				parent[max(a, b)] = min(a, b)
			}
		}
	}
	index := map[int]int{}
	var parts []*bound.Problem
	var offMap [][]int // per part: original offering -> part offering (-1)
	for _, g := range p.Groups {
		root := find(g.Allowed[0])
		pi, ok := index[root]
		if !ok {
			pi = len(parts)
			index[root] = pi
			parts = append(parts, &bound.Problem{})
			m := make([]int, len(p.Offerings))
			for i := range m {
				m[i] = -1
			}
			offMap = append(offMap, m)
		}
		part, m := parts[pi], offMap[pi]
		ng := g
		ng.Allowed = make([]int, len(g.Allowed))
		for j, o := range g.Allowed {
			if m[o] < 0 {
				m[o] = len(part.Offerings)
				part.Offerings = append(part.Offerings, p.Offerings[o])
			}
			ng.Allowed[j] = m[o]
		}
		part.Groups = append(part.Groups, ng)
	}
	return parts
}

// boundConstraints adds the zone minimums and distinct-node counts that the
// class's own constraints force on its pods, where they involve only the
// class's pods (so they bound every plan).
func (s *solver) boundConstraints(pc *pclass, count int, allowed []int, prob *bound.Problem, g *bound.Group) {
	for _, gi := range pc.owned {
		tg := s.groups[gi]
		if !slices.Contains(pc.cls.member, gi) {
			continue
		}
		// The class's own pods are pairwise apart under hostname
		// anti-affinity among themselves, and under a hostname spread of
		// maxSkew 1 (a node holding one of them may hold no other: the
		// minimum over hostnames is 0 while any node lacks them, as the
		// engine plans it).
		if tg.kk == kindHostname && (tg.kind == gAnti || tg.kind == gSpread && tg.maxSkew == 1) && count >= 2 {
			g.DistinctNodes = count
			continue
		}
		if int(tg.total) != count || !s.onlyMember(tg, pc.cls) {
			continue
		}
		switch {
		// Node inclusion policies (filterTerms, honorTaints) do not matter
		// here: the class is the group's only member and owns it, so its
		// pods land only on nodes that match its own node affinity and
		// whose taints it tolerates, and every one of them counts; the
		// universe already holds only the zones such nodes can be in.
		case tg.kind == gSpread && (tg.kk == kindZone):
			m := tg.univZones.count()
			if m < 2 || int(tg.minDomains) > m {
				continue
			}
			lo := (count - int(tg.maxSkew)*(m-1) + m - 1) / m
			if lo <= 0 {
				continue
			}
			// Every universe zone must be allowed for the minimum to bind.
			zonesAllowed := zmask(0)
			for _, oi := range allowed {
				zonesAllowed |= 1 << uint(prob.Offerings[oi].Zone)
			}
			if tg.univZones&^zonesAllowed != 0 {
				continue
			}
			g.MinPerZone = map[int]int{}
			for z := range s.zones {
				if tg.univZones.has(z) {
					g.MinPerZone[z] = lo
				}
			}
		}
	}
}

// onlyMember reports whether the class is the group's only member: no
// other class, and no existing pod, matches its selector.
func (s *solver) onlyMember(g *tgroup, c *cclass) bool {
	for _, o := range s.classes {
		if o != c && slices.Contains(o.member, g.idx) {
			return false
		}
	}
	return true
}
