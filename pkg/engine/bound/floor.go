package bound

import (
	"math"
	"math/bits"
	"slices"
)

// Floor is a second lower bound on the cost of any plan for p, from whole
// nodes, which the linear relaxation of Solve misses when a few nodes hold
// everything: it pays fractions of nodes, while a plan buys whole ones, and
// a node of some type may hold much less of the pods than its allocatable
// (7.5 cpu of 750m and 500m pods on a node with 7.74). Solve's bound and
// Floor are both valid; the larger of the two bounds the plan. It returns 0
// when p is invalid or too large to be worth it (integrality is negligible
// over hundreds of nodes).
//
// For a set S of groups and one resource r, write s_g = R_g[r]. Any node
// of offering o holds pods of S whose summed s is at most c_o, the largest
// sum of a multiset of S's pods allowed on o within A_o[r] (at most C_g of
// g, fewer when D_g forces g's pods apart: cap_g as in the package
// documentation), found by a subset sum. The plan's nodes hold all of S's
// pods, so
//
//	sum_o k_o c_o >= sum_{g in S} C_g s_g        (k_o the plan's nodes of o)
//
// and the plan costs at least the cheapest k >= 0 integral meeting it (an
// unbounded covering knapsack, solved exactly by dynamic programming; when
// the demand is too long for the table, the capacities are rounded up and
// the demand kept, which only relaxes). Zonal version: the pods of S that
// zone minimums force into zone z (M_gz of g) lie on nodes in z, which hold
// at most c_o^z of them (the subset sum with counts M_gz), so the plan's
// nodes in z cost at least the covering optimum for that zone's forced
// demand; nodes in different zones are distinct, so the zones' optima add
// up. Floor is the largest of these over S (all groups, and every group
// alone) and r, and of the joint cpu-and-memory covering for all groups
// (jointBound, below).
func Floor(p *Problem) float64 { return floorWith(p, floorOff{}) }

// floorOff turns parts of Floor off, for the tests that compare a part
// with its absence; the zero value is Floor as it runs.
type floorOff struct {
	joint bool // the joint cpu-and-memory covering
	pack  bool // the exact packing
	merge bool // identical groups merged before packing
	prune bool // packing branches that cannot win skipped
}

func floorWith(p *Problem, off floorOff) float64 {
	pods := 0
	for _, g := range p.Groups {
		pods += g.Count
	}
	if pods == 0 || pods > floorMaxPods || len(p.Groups) > floorMaxGroups || Validate(p) != nil {
		return 0
	}
	f := newFloorer(p)
	f.off = off
	f.offMask = make([]uint64, len(p.Offerings))
	for oi, gs := range f.allowedBy {
		for _, gi := range gs {
			f.offMask[oi] |= 1 << uint(gi)
		}
	}
	f.reduceOfferings()
	best := 0.0
	sets := [][]int{allIndices(len(p.Groups))}
	if len(p.Groups) > 1 {
		for gi := range p.Groups {
			sets = append(sets, []int{gi})
		}
	}
	// The work is counted (table cells and words touched) and capped, so
	// that Floor costs a few milliseconds at most; every covering is a bound
	// by itself, so stopping early only loses tightness.
	if !f.off.joint {
		best = max(best, f.jointBound(sets[0]))
	}
	if !f.off.pack {
		best = max(best, f.packMerged())
	}
	for _, set := range sets {
		for r := range NumResources {
			if f.work > floorMaxWork {
				return best * (1 - 1e-9)
			}
			best = max(best, f.global(set, r), f.zonal(set, r))
		}
	}
	return best * (1 - 1e-9)
}

const (
	// floorMaxPods and floorMaxGroups: above these Floor returns 0.
	floorMaxPods   = 500
	floorMaxGroups = 24
	// floorSubsetUnits caps the subset-sum table (units of the resource's
	// gcd); past it a node's capacity is its allocatable.
	floorSubsetUnits = 1 << 14
	// floorCoverUnits caps the covering table; past it units are coarsened.
	floorCoverUnits = 4096
	// floorMaxWork caps the work, in table cells and bitset words.
	floorMaxWork = 1_500_000
)

type floorer struct {
	p         *Problem
	off       floorOff
	perNode   []int64
	allowedBy [][]int
	cache     map[capKey]int64
	// kept lists the offerings not dominated by another one of the same
	// zone allowed to the same groups (no dearer, at least its allocatable
	// in every resource): a plan's nodes can be swapped for their
	// dominators, so the coverings need only the kept ones.
	kept []int
	// work counts what capacity and cover did.
	work int
	// packWork counts the loads the exact packing enumerated.
	packWork int
	// packCap is the cap on packWork (packBound sets it).
	packCap int
	// offMask is, per offering, the groups allowed on it (bit gi).
	offMask []uint64
}

// capKey identifies a capacity computation: the allocatable in units, the
// resource and unit, the zone whose minimums bound the counts (-1: the
// groups' counts) and the groups that take part (bitmask).
type capKey struct {
	alloc, unit int64
	r, zone     int
	mask        uint64
}

// newFloorer sets up the per-group node caps (a node holds at most
// Count - DistinctNodes + 1 pods of a group that needs DistinctNodes
// nodes) and the groups each offering allows, for a valid p.
func newFloorer(p *Problem) *floorer {
	f := &floorer{p: p, cache: map[capKey]int64{}}
	f.perNode = make([]int64, len(p.Groups))
	f.allowedBy = make([][]int, len(p.Offerings)) // offering -> groups
	for gi, g := range p.Groups {
		f.perNode[gi] = int64(g.Count)
		if g.DistinctNodes >= 2 {
			f.perNode[gi] = int64(g.Count - g.DistinctNodes + 1)
		}
		for _, oi := range canonical(g.Allowed) {
			f.allowedBy[oi] = append(f.allowedBy[oi], gi)
		}
	}
	return f
}

// reduceOfferings fills kept.
func (f *floorer) reduceOfferings() {
	type sig struct {
		zone   int
		groups string
	}
	buckets := map[sig][]int{}
	var order []sig
	for oi, o := range f.p.Offerings {
		if len(f.allowedBy[oi]) == 0 {
			continue
		}
		b := make([]byte, 0, 4*len(f.allowedBy[oi]))
		for _, gi := range f.allowedBy[oi] {
			b = append(b, byte(gi), byte(gi>>8), byte(gi>>16), byte(gi>>24))
		}
		k := sig{o.Zone, string(b)}
		if _, ok := buckets[k]; !ok {
			order = append(order, k)
		}
		buckets[k] = append(buckets[k], oi)
	}
	offs := f.p.Offerings
	for _, k := range order {
		list := buckets[k]
		slices.SortStableFunc(list, func(a, b int) int {
			if offs[a].Price != offs[b].Price {
				if offs[a].Price < offs[b].Price {
					return -1
				}
				return 1
			}
			return 0
		})
		var kept []int
		for _, oi := range list {
			dominated := false
			for _, ki := range kept {
				if offs[ki].Price <= offs[oi].Price && offs[ki].Alloc[0] >= offs[oi].Alloc[0] && offs[ki].Alloc[1] >= offs[oi].Alloc[1] && offs[ki].Alloc[2] >= offs[oi].Alloc[2] {
					dominated = true
					break
				}
			}
			if !dominated {
				kept = append(kept, oi)
			}
		}
		f.kept = append(f.kept, kept...)
	}
}

func allIndices(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// item is one group's pods in integer units of a resource.
type item struct {
	size, count int64
}

// units returns the gcd of set's requests in resource r, or ok false when
// a request is not integral (then no granularity is claimed) or none is
// positive.
func (f *floorer) units(set []int, r int) (unit int64, ok bool) {
	var gcd int64
	for _, gi := range set {
		v := f.p.Groups[gi].Request[r]
		if v <= 0 || f.p.Groups[gi].Count == 0 {
			continue
		}
		if v != math.Trunc(v) || v > 1<<52 {
			return 0, false
		}
		gcd = gcdInt(gcd, int64(v))
	}
	return gcd, gcd > 0
}

func gcdInt(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// capacity is the most one node of offering oi holds of set's pods in
// resource r, in units: a subset sum within its allocatable, with each
// group's count (zone < 0) or its minimum in zone, and at most perNode.
func (f *floorer) capacity(oi int, set []int, r int, unit int64, zone int) int64 {
	alloc := int64(math.Floor(f.p.Offerings[oi].Alloc[r]/float64(unit) + 1e-9))
	f.work += len(f.allowedBy[oi])
	var setMask uint64
	for _, gi := range set {
		setMask |= 1 << uint(gi)
	}
	mask := f.offMask[oi] & setMask
	key := capKey{alloc: alloc, unit: unit, r: r, zone: zone, mask: mask}
	if c, ok := f.cache[key]; ok {
		return c
	}
	var items []item
	var total int64
	for _, gi := range f.allowedBy[oi] {
		if mask&(1<<uint(gi)) == 0 {
			continue
		}
		s := int64(f.p.Groups[gi].Request[r]) / unit
		c := int64(f.p.Groups[gi].Count)
		if zone >= 0 {
			c = int64(f.p.Groups[gi].MinPerZone[zone])
		}
		c = min(c, f.perNode[gi])
		if s <= 0 || c <= 0 {
			continue
		}
		items = append(items, item{s, c})
		total += s * c
	}
	var c int64
	switch {
	case total <= alloc:
		c = total
	case len(items) == 1:
		c = min(items[0].count, alloc/items[0].size) * items[0].size
	case alloc > floorSubsetUnits:
		c = alloc
	default:
		f.work += int(alloc/64+1) * 8 * len(items)
		c = subsetSum(items, alloc)
	}
	f.cache[key] = c
	return c
}

// subsetSum is the largest sum <= limit of a multiset of the items.
func subsetSum(items []item, limit int64) int64 {
	words := int(limit/64) + 1
	reach := make([]uint64, words)
	reach[0] = 1
	for _, it := range items {
		// Binary splitting of the count: chunks 1, 2, 4, ..., rest.
		left := it.count
		for k := int64(1); left > 0; k *= 2 {
			c := min(k, left)
			left -= c
			shiftOr(reach, c*it.size)
		}
	}
	// Clear bits past limit, then take the highest set bit.
	if rem := (limit + 1) % 64; rem != 0 {
		reach[words-1] &= (1 << uint(rem)) - 1
	}
	for w := words - 1; w >= 0; w-- {
		if reach[w] != 0 {
			return int64(w*64 + 63 - bits.LeadingZeros64(reach[w]))
		}
	}
	return 0
}

// shiftOr sets reach |= reach << by.
func shiftOr(reach []uint64, by int64) {
	if by <= 0 {
		return
	}
	ws, bs := int(by/64), uint(by%64)
	for i := len(reach) - 1; i >= ws; i-- {
		v := reach[i-ws] << bs
		if bs != 0 && i-ws-1 >= 0 {
			v |= reach[i-ws-1] >> (64 - bs)
		}
		reach[i] |= v
	}
}

// offer is one usable node shape for a covering: capacity and price.
type offer struct {
	cap   int64
	price float64
}

// global is the covering bound for all of set's pods in resource r.
func (f *floorer) global(set []int, r int) float64 {
	unit, ok := f.units(set, r)
	if !ok {
		return 0
	}
	var demand int64
	for _, gi := range set {
		demand += int64(f.p.Groups[gi].Count) * (int64(f.p.Groups[gi].Request[r]) / unit)
	}
	if demand == 0 {
		return 0
	}
	var offs []offer
	for _, oi := range f.kept {
		if c := f.capacity(oi, set, r, unit, -1); c > 0 {
			offs = append(offs, offer{c, f.p.Offerings[oi].Price})
		}
	}
	return f.cover(offs, demand)
}

// zonal is the sum over zones of the covering bounds for the pods of set
// that zone minimums force into each zone, in resource r.
func (f *floorer) zonal(set []int, r int) float64 {
	unit, ok := f.units(set, r)
	if !ok {
		return 0
	}
	zones := map[int]int64{}
	for _, gi := range set {
		g := f.p.Groups[gi]
		for z, m := range g.MinPerZone {
			if m > 0 {
				zones[z] += int64(m) * (int64(g.Request[r]) / unit)
			}
		}
	}
	total := 0.0
	for z, demand := range zones {
		if demand == 0 {
			continue
		}
		var offs []offer
		for _, oi := range f.kept {
			o := f.p.Offerings[oi]
			if o.Zone != z {
				continue
			}
			if c := f.capacity(oi, set, r, unit, z); c > 0 {
				offs = append(offs, offer{c, o.Price})
			}
		}
		v := f.cover(offs, demand)
		if math.IsInf(v, 1) {
			return 0 // a minimum nothing serves: leave it to the relaxation
		}
		total += v
	}
	return total
}

// cover is the least cost of whole nodes whose capacities sum to at least
// demand (+Inf when no offer has capacity).
func (f *floorer) cover(offs []offer, demand int64) float64 {
	if len(offs) == 0 {
		return math.Inf(1)
	}
	// Coarsen: capacities rounded up to multiples of q, demand to
	// ceil(demand/q); sum k c >= d implies sum k ceil(c/q) >= ceil(d/q).
	q := (demand + floorCoverUnits - 1) / floorCoverUnits
	d := (demand + q - 1) / q
	// Keep, per capacity, the cheapest; then only offers that no cheaper
	// one matches in capacity.
	for i := range offs {
		offs[i].cap = min((offs[i].cap+q-1)/q, d)
	}
	slices.SortFunc(offs, func(a, b offer) int {
		if a.price != b.price {
			if a.price < b.price {
				return -1
			}
			return 1
		}
		return int(b.cap - a.cap)
	})
	var front []offer
	var bestCap int64
	for _, o := range offs {
		if o.cap > bestCap {
			front = append(front, o)
			bestCap = o.cap
		}
	}
	f.work += int(d) * len(front)
	g := make([]float64, d+1)
	for l := int64(1); l <= d; l++ {
		v := math.Inf(1)
		for _, o := range front {
			v = math.Min(v, o.price+g[max(0, l-o.cap)])
		}
		g[l] = v
	}
	return g[d]
}

// Joint cpu and memory. A node of o holds at most c_o[cpu] of S's cpu and
// c_o[mem] of S's memory (each a subset sum as above), so the plan's nodes
// meet both coverings at once:
//
//	sum_o k_o c_o[cpu] >= D[cpu]  and  sum_o k_o c_o[mem] >= D[mem]
//
// which costs more than either alone when no node shape matches the pods'
// mix (a plan of whole 2-cpu/16-GiB and 2-cpu/8-GiB nodes for 8.55 cpu and
// 40 GiB). The two-dimensional covering knapsack is solved by dynamic
// programming on a floorGrid x floorGrid table, capacities rounded up to
// its cells and demands kept (which only relaxes).
const floorGrid = 64

// offer2 is a node shape's capacities in both resources, in cells.
type offer2 struct {
	cap   [2]int64
	price float64
}

// joint is the joint covering bound for set's pods, over all zones
// (zone < 0) or for what minimums force into zone.
func (f *floorer) joint(set []int, zone int) float64 {
	var unit, demand [2]int64
	for r := range 2 {
		u, ok := f.units(set, r)
		if !ok {
			return 0
		}
		unit[r] = u
		for _, gi := range set {
			g := f.p.Groups[gi]
			c := int64(g.Count)
			if zone >= 0 {
				c = int64(g.MinPerZone[zone])
			}
			demand[r] += c * (int64(g.Request[r]) / u)
		}
		if demand[r] == 0 {
			return 0
		}
	}
	var q, d [2]int64
	for r := range 2 {
		q[r] = (demand[r] + floorGrid - 1) / floorGrid
		d[r] = (demand[r] + q[r] - 1) / q[r]
	}
	var offs []offer2
	for _, oi := range f.kept {
		o := f.p.Offerings[oi]
		if zone >= 0 && o.Zone != zone {
			continue
		}
		var c [2]int64
		for r := range 2 {
			v := f.capacity(oi, set, r, unit[r], zone)
			c[r] = min((v+q[r]-1)/q[r], d[r])
		}
		if c[0] > 0 || c[1] > 0 {
			offs = append(offs, offer2{c, o.Price})
		}
	}
	if len(offs) == 0 {
		return math.Inf(1)
	}
	// Drop offers another one matches in both capacities for no more.
	slices.SortStableFunc(offs, func(a, b offer2) int {
		if a.price != b.price {
			if a.price < b.price {
				return -1
			}
			return 1
		}
		return int((b.cap[0] + b.cap[1]) - (a.cap[0] + a.cap[1]))
	})
	var front []offer2
	for _, o := range offs {
		dom := false
		for _, k := range front {
			if k.cap[0] >= o.cap[0] && k.cap[1] >= o.cap[1] {
				dom = true
				break
			}
		}
		if !dom {
			front = append(front, o)
		}
	}
	cells := int((d[0] + 1) * (d[1] + 1))
	f.work += cells * len(front)
	w := d[1] + 1
	g := make([]float64, cells)
	for a := int64(0); a <= d[0]; a++ {
		for b := int64(0); b <= d[1]; b++ {
			if a == 0 && b == 0 {
				continue
			}
			v := math.Inf(1)
			for _, o := range front {
				v = math.Min(v, o.price+g[max(0, a-o.cap[0])*w+max(0, b-o.cap[1])])
			}
			g[a*w+b] = v
		}
	}
	return g[cells-1]
}

// jointBound is the largest joint covering: over all zones, and summed
// over the zones with minimums.
func (f *floorer) jointBound(set []int) float64 {
	best := f.joint(set, -1)
	if math.IsInf(best, 1) {
		best = 0
	}
	zones := map[int]bool{}
	for _, gi := range set {
		for z, m := range f.p.Groups[gi].MinPerZone {
			if m > 0 {
				zones[z] = true
			}
		}
	}
	if len(zones) == 0 {
		return best
	}
	total := 0.0
	for z := range zones {
		v := f.joint(set, z)
		if math.IsInf(v, 1) {
			return best
		}
		total += v
	}
	return max(best, total)
}
