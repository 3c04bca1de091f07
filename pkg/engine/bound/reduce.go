package bound

import (
	"cmp"
	"math"
	"slices"
)

// This file turns a validated Problem into the reduced form the solver works
// on: merged groups (G'), buckets of offerings that allow the same groups with
// the same zone semantics, dominated offerings dropped, per-(group, offering)
// pod caps, node-presence requirements and the master's rows. Every step is a
// relaxation or keeps an optimal integral plan; the arguments are in doc.go.

// distinct kinds of a group, for merging.
const (
	kindFree    = iota // DistinctNodes <= 1
	kindAll            // DistinctNodes == Count >= 2
	kindPartial        // 1 < DistinctNodes < Count: never merged
)

type zoneMin struct {
	zone int32 // dense zone id
	min  int64
	row  int32 // master row, set by assignRows
}

// igroup is a merged group.
type igroup struct {
	count   int64
	req     [NumResources]float64
	allowed []int // original offering indices, sorted, unique
	mins    []zoneMin
	kind    int
	k0      int64 // nodes hosting the group known from DistinctNodes (>= 1)
	capBase int64 // max pods per node known from DistinctNodes (sum over members)
	members []int // indices into Problem.Groups

	fmax    int64 // max over kept offerings of pods fitting by resources
	k       int64 // proven lower bound on nodes hosting the group
	cap     int64 // proven upper bound on the group's pods on one node
	mmax    int64 // min(cap, fmax)
	idx     int   // index in prep.groups
	row     int32 // demand row
	presRow int32 // node-presence row, -1 if implied by the caps
}

// ioffer is a kept offering.
type ioffer struct {
	price  float64
	alloc  [NumResources]float64
	zone   int32
	orig   int
	bucket int32
	// caps[j] is m(g,o) for g = buckets[bucket].groups[j]: the most pods of
	// the group one node of this offering can hold.
	caps []float64
	// alpha holds resource prices ($/h per millicore, byte, slot) from the
	// last exact pricing of this offering, reused to bound it cheaply.
	alpha    [NumResources]float64
	hasAlpha bool
	ub       float64 // this round's best upper bound on F_o
}

// bucket is a set of kept offerings that allow the same merged groups and
// carry the same zone rows (zone = -1: none of its groups has a minimum in
// the zones of its offerings).
type bucket struct {
	groups  []int32
	zoneRow []int32 // per groups[j]: zone row of (group, zone) or -1
	czRow   []int32 // per groups[j]: cluster-zone row or -1 (nil: none)
	offers  []int32 // indices into prep.offers
	zone    int32
	// per-round pricing values per groups[j]: w1 = first pod on a node
	// (includes the presence dual), w2 = further pods.
	w1, w2 []float64
	added  int                     // columns added this round
	fresh  [][NumResources]float64 // resource prices from this round's exact solves
}

type prep struct {
	groups  []igroup
	offers  []ioffer
	buckets []bucket
	b       []float64 // master right-hand sides
	nzones  int
	pods    float64 // total pods: bounds the nodes of an optimal plan
	maxCost float64
}

func prepare(p *Problem, zoneCaps bool) *prep {
	pr := &prep{}
	zoneOf := compressZones(p, pr)
	mergeGroups(p, pr, zoneOf)
	mergeZonal(p, pr, zoneOf)
	if len(pr.groups) == 0 {
		return pr
	}
	buildBuckets(p, pr, zoneOf)
	deriveCaps(pr, zoneCaps)
	assignRows(pr)
	return pr
}

// compressZones maps the offerings' zone numbers to dense ids 0..nzones-1.
func compressZones(p *Problem, pr *prep) map[int]int32 {
	zs := make([]int, 0, 8)
	seen := map[int]bool{}
	for i := range p.Offerings {
		z := p.Offerings[i].Zone
		if !seen[z] {
			seen[z] = true
			zs = append(zs, z)
		}
	}
	slices.Sort(zs)
	zoneOf := make(map[int]int32, len(zs))
	for i, z := range zs {
		zoneOf[z] = int32(i)
	}
	pr.nzones = len(zs)
	return zoneOf
}

// mergeGroups drops empty groups and merges groups with equal requests,
// equal allowed sets and the same distinct kind (see doc.go, "Merging").
func mergeGroups(p *Problem, pr *prep, zoneOf map[int]int32) {
	index := map[uint64][]int32{}
	for gi := range p.Groups {
		g := &p.Groups[gi]
		if g.Count == 0 {
			continue
		}
		allowed := canonical(g.Allowed)
		kind := kindFree
		switch {
		case g.DistinctNodes == g.Count && g.Count >= 2:
			kind = kindAll
		case g.DistinctNodes > 1:
			kind = kindPartial
		}
		k0 := int64(max(1, g.DistinctNodes))
		c := int64(g.Count)
		h := groupHash(g.Request, kind, allowed)
		var into *igroup
		if kind != kindPartial {
			for _, cand := range index[h] {
				q := &pr.groups[cand]
				if q.req == g.Request && q.kind == kind && sameList(q.allowed, allowed) {
					into = q
					break
				}
			}
		}
		if into == nil {
			pr.groups = append(pr.groups, igroup{req: g.Request, allowed: allowed, kind: kind, presRow: -1})
			if kind != kindPartial {
				index[h] = append(index[h], int32(len(pr.groups)-1))
			}
			into = &pr.groups[len(pr.groups)-1]
		}
		into.count += c
		into.k0 = max(into.k0, k0)
		into.capBase += c - k0 + 1
		into.members = append(into.members, gi)
		for z, n := range g.MinPerZone {
			if n > 0 {
				into.addMin(zoneOf[z], int64(n))
			}
		}
		pr.pods += float64(c)
	}
	for gi := range pr.groups {
		slices.SortFunc(pr.groups[gi].mins, func(a, b zoneMin) int { return cmp.Compare(a.zone, b.zone) })
	}
}

func (g *igroup) addMin(zone int32, n int64) {
	for i := range g.mins {
		if g.mins[i].zone == zone {
			g.mins[i].min += n
			return
		}
	}
	g.mins = append(g.mins, zoneMin{zone: zone, min: n, row: -1})
}

func (g *igroup) minIn(zone int32) int64 {
	for _, m := range g.mins {
		if m.zone == zone {
			return m.min
		}
	}
	return 0
}

// mergeZonal merges groups without distinct-node needs that have the same
// request, where each one's allowed set is either the union U of their
// allowed sets or U restricted to one zone: a group confined to zone z
// becomes a minimum of its count in zone z of the merged group (doc.go,
// "Merging"). Zone self-affinity produces such groups.
func mergeZonal(p *Problem, pr *prep, zoneOf map[int]int32) {
	byReq := map[[NumResources]float64][]int{}
	var reqs [][NumResources]float64
	for gi := range pr.groups {
		g := &pr.groups[gi]
		if g.kind != kindFree {
			continue
		}
		if _, ok := byReq[g.req]; !ok {
			reqs = append(reqs, g.req)
		}
		byReq[g.req] = append(byReq[g.req], gi)
	}
	drop := make([]bool, len(pr.groups))
	mark := make([]int32, len(p.Offerings))
	stamp := int32(0)
	for _, req := range reqs {
		cands := byReq[req]
		if len(cands) < 2 {
			continue
		}
		// Union of the allowed sets, in offering order, by stamping.
		stamp++
		for _, gi := range cands {
			for _, o := range pr.groups[gi].allowed {
				mark[o] = stamp
			}
		}
		var u []int
		for o, st := range mark {
			if st == stamp {
				u = append(u, o)
			}
		}
		inZone := map[int32]int{}
		for _, o := range u {
			inZone[zoneOf[p.Offerings[o].Zone]]++
		}
		var full []int
		type zonal struct {
			gi   int
			zone int32
		}
		var zs []zonal
		for _, gi := range cands {
			a := pr.groups[gi].allowed
			if len(a) == len(u) {
				full = append(full, gi) // a subset of u as long as u
				continue
			}
			z := zoneOf[p.Offerings[a[0]].Zone]
			ok := len(a) == inZone[z]
			for _, o := range a {
				if zoneOf[p.Offerings[o].Zone] != z {
					ok = false
					break
				}
			}
			if ok {
				zs = append(zs, zonal{gi, z})
			}
		}
		if len(full)+len(zs) < 2 || len(zs) == 0 {
			continue
		}
		var into *igroup
		if len(full) > 0 {
			into = &pr.groups[full[0]]
			for _, gi := range full[1:] {
				into.absorb(&pr.groups[gi])
				drop[gi] = true
			}
		} else {
			pr.groups = append(pr.groups, igroup{req: req, allowed: u, kind: kindFree, presRow: -1})
			drop = append(drop, false)
			into = &pr.groups[len(pr.groups)-1]
		}
		for _, z := range zs {
			// All of a confined group's pods are in its zone: its count
			// becomes a minimum there, which subsumes its own minimums (it
			// can have them only in that zone).
			g := &pr.groups[z.gi]
			g.mins = nil
			into.absorb(g)
			into.addMin(z.zone, g.count)
			drop[z.gi] = true
		}
		slices.SortFunc(into.mins, func(a, b zoneMin) int { return cmp.Compare(a.zone, b.zone) })
	}
	kept := pr.groups[:0]
	for gi := range pr.groups {
		if !drop[gi] {
			kept = append(kept, pr.groups[gi])
		}
	}
	pr.groups = kept
}

// absorb adds group h's pods, minimums and members to g (both free).
func (g *igroup) absorb(h *igroup) {
	g.count += h.count
	g.capBase += h.capBase
	g.k0 = max(g.k0, h.k0)
	g.members = append(g.members, h.members...)
	for _, m := range h.mins {
		g.addMin(m.zone, m.min)
	}
}

// canonical returns the sorted, duplicate-free form of s, reusing s when it
// already is.
func canonical(s []int) []int {
	ok := true
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return slices.Compact(c)
}

// groupHash hashes a group's merge key from its request, kind and a cheap
// summary of the allowed list (its length and up to 16 sampled entries);
// candidates with equal hashes are compared exactly.
func groupHash(req [NumResources]float64, kind int, allowed []int) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(v uint64) { h = (h ^ v) * prime }
	for _, q := range req {
		mix(math.Float64bits(q))
	}
	mix(uint64(kind))
	mix(uint64(len(allowed)))
	step := max(1, len(allowed)/16)
	for i := 0; i < len(allowed); i += step {
		mix(uint64(allowed[i]))
	}
	return h
}

// sameList reports whether two sorted lists are equal, without reading them
// when they share their backing array.
func sameList(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return slices.Equal(a, b)
}

// buildBuckets partitions the offerings used by some group into classes with
// equal sets of allowed groups (partition refinement, linear in the size of
// the allowed lists), splits classes by zone where a group of the class has a
// minimum there, and keeps per bucket only the offerings no other offering of
// the bucket dominates (price <=, allocatable >= in every resource).
func buildBuckets(p *Problem, pr *prep, zoneOf map[int]int32) {
	n := len(p.Offerings)
	class := make([]int32, n)
	for i := range class {
		class[i] = -1
	}
	// Offerings no group allows stay in class -1; used ones start in class 0.
	for gi := range pr.groups {
		for _, o := range pr.groups[gi].allowed {
			class[o] = 0
		}
	}
	nclass := int32(1)
	stamp := []int32{-1}
	split := []int32{0}
	for gi := range pr.groups {
		for _, o := range pr.groups[gi].allowed {
			c := class[o]
			if stamp[c] != int32(gi) {
				stamp[c] = int32(gi)
				split[c] = nclass
				stamp = append(stamp, -1)
				split = append(split, 0)
				nclass++
			}
			class[o] = split[c]
		}
	}
	// Group lists per class, in group order.
	classGroups := make([][]int32, nclass)
	for i := range stamp {
		stamp[i] = -1
	}
	for gi := range pr.groups {
		for _, o := range pr.groups[gi].allowed {
			c := class[o]
			if stamp[c] != int32(gi) {
				stamp[c] = int32(gi)
				classGroups[c] = append(classGroups[c], int32(gi))
			}
		}
	}
	// Zones in which some group of the class has a minimum.
	nz := int32(pr.nzones)
	zoneHasMin := map[int64]bool{}
	for c, gs := range classGroups {
		for _, gi := range gs {
			for _, m := range pr.groups[gi].mins {
				zoneHasMin[int64(c)*int64(nz)+int64(m.zone)] = true
			}
		}
	}
	bucketOf := map[int64]int32{}
	var members [][]int32
	for o := range n {
		c := class[o]
		if c < 0 {
			continue
		}
		z := zoneOf[p.Offerings[o].Zone]
		zk := int32(-1)
		if zoneHasMin[int64(c)*int64(nz)+int64(z)] {
			zk = z
		}
		key := int64(c)*int64(nz+1) + int64(zk+1)
		b, ok := bucketOf[key]
		if !ok {
			b = int32(len(pr.buckets))
			bucketOf[key] = b
			pr.buckets = append(pr.buckets, bucket{groups: classGroups[c], zone: zk})
			members = append(members, nil)
		}
		members[b] = append(members[b], int32(o))
	}
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		ms := members[b]
		slices.SortFunc(ms, func(x, y int32) int {
			ox, oy := &p.Offerings[x], &p.Offerings[y]
			if c := cmp.Compare(ox.Price, oy.Price); c != 0 {
				return c
			}
			for r := range NumResources {
				if c := cmp.Compare(oy.Alloc[r], ox.Alloc[r]); c != 0 {
					return c
				}
			}
			return cmp.Compare(x, y)
		})
		start := len(pr.offers)
		for _, o := range ms {
			a := p.Offerings[o].Alloc
			dominated := false
			for k := start; k < len(pr.offers); k++ {
				ka := &pr.offers[k].alloc
				if ka[0] >= a[0] && ka[1] >= a[1] && ka[2] >= a[2] {
					dominated = true
					break
				}
			}
			if dominated {
				continue
			}
			bk.offers = append(bk.offers, int32(len(pr.offers)))
			pr.offers = append(pr.offers, ioffer{
				price: p.Offerings[o].Price, alloc: a, zone: zoneOf[p.Offerings[o].Zone],
				orig: int(o), bucket: int32(b),
			})
			pr.maxCost = max(pr.maxCost, p.Offerings[o].Price)
		}
	}
}

// podsPerNode is the most pods with request req one node with allocatable
// alloc can hold, at most limit and at least 1 (Validate made sure one fits).
// The quotient is nudged up by a relative 1e-9 before flooring so that
// rounding can only overestimate it, which keeps the cap a valid one.
func podsPerNode(req, alloc [NumResources]float64, limit int64) int64 {
	m := float64(limit)
	for r := range NumResources {
		if req[r] > 0 {
			q := math.Floor(alloc[r] / req[r] * (1 + 1e-9))
			m = min(m, q)
		}
	}
	return max(1, int64(m))
}

// deriveCaps computes m(g,o), the proven per-node caps and the presence
// requirements (doc.go, "Pod caps" and "Node presence"); with zoneCaps, a
// node's cap is also at most what the zone minimums leave for its zone.
func deriveCaps(pr *prep, zoneCaps bool) {
	for gi := range pr.groups {
		pr.groups[gi].fmax = 1
	}
	for oi := range pr.offers {
		o := &pr.offers[oi]
		gs := pr.buckets[o.bucket].groups
		o.caps = make([]float64, len(gs))
		for j, gi := range gs {
			g := &pr.groups[gi]
			f := podsPerNode(g.req, o.alloc, g.count)
			o.caps[j] = float64(f)
			g.fmax = max(g.fmax, f)
		}
	}
	for gi := range pr.groups {
		g := &pr.groups[gi]
		g.k = g.k0
		g.cap = min(g.capBase, g.count-g.k+1)
		for range 8 {
			g.mmax = max(1, min(g.cap, g.fmax))
			k := max(g.k, ceilDiv(g.count, g.mmax))
			c := min(g.cap, g.count-k+1)
			if k == g.k && c == g.cap {
				break
			}
			g.k, g.cap = k, c
		}
		g.mmax = max(1, min(g.cap, g.fmax))
	}
	for oi := range pr.offers {
		o := &pr.offers[oi]
		for j, gi := range pr.buckets[o.bucket].groups {
			g := &pr.groups[gi]
			o.caps[j] = min(o.caps[j], float64(g.cap))
			if zoneCaps {
				o.caps[j] = min(o.caps[j], float64(max(1, g.zoneCap(o.zone))))
			}
		}
	}
}

// zoneCap is the most pods of g any plan puts in zone z: a plan places
// exactly count pods, at least each minimum in its zone, so at most count
// minus the other zones' minimums in z (the free pods plus z's minimum).
// A node in z holds no more than that.
func (g *igroup) zoneCap(z int32) int64 {
	c := g.count
	for _, m := range g.mins {
		if m.zone != z {
			c -= m.min
		}
	}
	return c
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// assignRows numbers the master's rows: one demand row per group, one row per
// (group, zone) minimum, and a presence row for each group whose presence
// requirement the caps do not already imply (k > count/mmax).
func assignRows(pr *prep) {
	for gi := range pr.groups {
		g := &pr.groups[gi]
		g.idx = gi
		g.row = int32(len(pr.b))
		pr.b = append(pr.b, float64(g.count))
	}
	for gi := range pr.groups {
		g := &pr.groups[gi]
		for i := range g.mins {
			g.mins[i].row = int32(len(pr.b))
			pr.b = append(pr.b, float64(g.mins[i].min))
		}
	}
	for gi := range pr.groups {
		g := &pr.groups[gi]
		if g.k*g.mmax > g.count {
			g.presRow = int32(len(pr.b))
			pr.b = append(pr.b, float64(g.k))
		}
	}
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		bk.zoneRow = make([]int32, len(bk.groups))
		bk.w1 = make([]float64, len(bk.groups))
		bk.w2 = make([]float64, len(bk.groups))
		for j, gi := range bk.groups {
			bk.zoneRow[j] = -1
			if bk.zone < 0 {
				continue
			}
			for _, m := range pr.groups[gi].mins {
				if m.zone == bk.zone {
					bk.zoneRow[j] = m.row
				}
			}
		}
	}
}
