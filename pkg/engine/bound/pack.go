package bound

import (
	"math"
	"slices"
)

// Exact packing of small parts (the package documentation's section of
// that name is the proof). With zone minimums, zonalExact is the exact
// optimum of the model: every pod on a whole node of an allowed offering,
// n_zg >= M_zg of group g in zone z, the free pods split among the zones.
// When it is past its caps, the fallback is sum_z f_z (the pods forced into
// each zone alone, on that zone's nodes; zones are disjoint) and f (all the
// pods, zones ignored), each a bound. Without zone minimums it is f. It
// sees what no relaxation does: a few dozen pods packed jointly in cpu,
// memory and pod slots into one or two whole nodes.
//
// The packing model of one node of offering o: integral pods x_g of the
// groups allowed on o, sum_g x_g R_g[r] <= A_o[r] for every resource, and
// x_g <= cap_g (C_g - D_g + 1 when D_g >= 2: at most one of the D_g
// pairwise-apart pods, plus the others; 1 when all are apart). Every plan's
// node meets it, so f (the least cost of nodes meeting it and holding the
// pods) is at most the plan's cost.
//
// The recursion: for a count vector r (pods still to hold), with g* the
// first group with r_g* > 0,
//
//	f(0) = 0,   f(r) = min over o allowed to g*, x maximal on o within r with x_g* >= 1, of price_o + f(r - x).
//
// Some node of an optimal solution for r holds a pod of g*; its load x,
// raised to a maximal load x' within r (no group can take one more pod), is
// a load on the same node, and f(r - x') <= f(r - x) (fewer pods cost no
// more), so the minimum over maximal loads is f(r). Offerings dominated in
// their (zone, allowed groups) bucket are dropped first (Floor's kept).
//
// Work is capped (states, loads enumerated); a part past a cap contributes
// nothing (0 is a bound), never a number from an unfinished search.
const (
	// packMaxGroups and packMaxStates: parts with more groups, or whose
	// count vectors number more, are skipped.
	packMaxGroups = 8
	packMaxStates = 100_000
	// packMaxWork caps the load-search steps per Floor call with zone
	// minimums, packMaxWorkNoZones without (the exact packing gains least
	// there: the relaxations already see most of what whole nodes cost).
	// uneven-spread/2 of the engine's cost families needs about 3.0M with
	// its identical groups merged and the pruning.
	packMaxWork        = 3_500_000
	packMaxWorkNoZones = 300_000
)

// packing is one exact packing problem: groups (indices into the Problem),
// their counts, and the offerings that may serve them.
type packing struct {
	f      *floorer
	groups []int
	counts []int
	offs   []int
	// radix[i] is the stride of group i in the state index.
	radix []int
	memo  map[int]float64
	// per offering (index into offs): the groups (positions in groups)
	// allowed on it.
	allowed [][]int
	// scratch: the load being built, the loads of the states on the
	// search path (flat, len(groups) each) and the offsets of those kept.
	x     []int
	arena []int
	seen  []int
	// unit[q] is the least price per unit of resource q among offs: any
	// nodes holding a demand D of q cost at least D*unit[q].
	unit [NumResources]float64
}

// packBound is the exact packing with zones (zonalExact) when the part is
// small enough, else max(sum_z f_z of the forced pods, f of all pods).
func (f *floorer) packBound() float64 {
	zones := map[int]bool{}
	for _, g := range f.p.Groups {
		for z, m := range g.MinPerZone {
			if m > 0 {
				zones[z] = true
			}
		}
	}
	var groups, counts []int
	for gi, g := range f.p.Groups {
		if g.Count > 0 {
			groups = append(groups, gi)
			counts = append(counts, g.Count)
		}
	}
	f.packCap = packMaxWork
	if len(zones) == 0 {
		f.packCap = packMaxWorkNoZones
		v, _ := f.pack(groups, counts, -1)
		return v
	}
	if v, ok := f.zonalExact(groups); ok {
		return v
	}
	zoneTotal := 0.0
	for z := range zones {
		var groups, counts []int
		for gi, g := range f.p.Groups {
			if m := g.MinPerZone[z]; m > 0 {
				groups = append(groups, gi)
				counts = append(counts, m)
			}
		}
		if v, ok := f.pack(groups, counts, z); ok {
			zoneTotal += v
		}
	}
	global, _ := f.pack(groups, counts, -1)
	return max(zoneTotal, global)
}

// packMaxFree caps the free count vectors zonalExact combines.
const packMaxFree = 4000

// zonalExact is the exact packing of all the pods with their zone
// minimums: a plan puts n_zg >= M_zg of g's pods in zone z, sum_z n_zg =
// C_g, so with u_z = n_z - M_z (the free pods F = C - sum_z M_z, split
// among the zones) it costs at least sum_z f_z(M_z + u_z) >= G(F), where G
// is the min-plus combination over the zones of the offerings,
//
//	G_1(u) = f_1(M_1 + u),   G_k(u) = min_{v <= u} G_{k-1}(u - v) + f_k(M_k + v),
//
// and f_z is the exact packing in zone z (+Inf when a pod is not allowed
// there). ok is false when a cap was hit.
func (f *floorer) zonalExact(groups []int) (float64, bool) {
	if len(groups) > packMaxGroups {
		return 0, false
	}
	free := make([]int, len(groups))
	nfree := 1
	for i, gi := range groups {
		g := f.p.Groups[gi]
		free[i] = g.Count
		for _, m := range g.MinPerZone {
			free[i] -= m
		}
		if free[i] < 0 {
			return 0, false
		}
		nfree *= free[i] + 1
		if nfree > packMaxFree {
			return 0, false
		}
	}
	zoneSet := map[int]bool{}
	for _, oi := range f.kept {
		zoneSet[f.p.Offerings[oi].Zone] = true
	}
	var zones []int
	for z := range zoneSet {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	// u as a mixed-radix index over free.
	decode := func(k int, u []int) {
		for i := range free {
			u[i] = k % (free[i] + 1)
			k /= free[i] + 1
		}
	}
	var comb []float64
	u, v, r := make([]int, len(groups)), make([]int, len(groups)), make([]int, len(groups))
	for _, z := range zones {
		counts := make([]int, len(groups))
		for i, gi := range groups {
			counts[i] = f.p.Groups[gi].MinPerZone[z] + free[i]
		}
		pk, ok := f.newPacking(groups, counts, z)
		if !ok {
			return 0, false
		}
		fz := make([]float64, nfree)
		for k := range nfree {
			decode(k, u)
			for i, gi := range groups {
				r[i] = f.p.Groups[gi].MinPerZone[z] + u[i]
			}
			fz[k] = pk.solve(r)
			if f.packWork > f.packCap {
				return 0, false
			}
		}
		if comb == nil {
			comb = fz
			continue
		}
		next := make([]float64, nfree)
		for k := range nfree {
			decode(k, u)
			best := math.Inf(1)
			// Every v <= u, by an odometer; j and kr index v and u - v.
			for i := range v {
				v[i] = 0
			}
			j, kr := 0, k
			for {
				best = math.Min(best, comb[kr]+fz[j])
				f.packWork++
				i, stride := 0, 1
				for ; i < len(v); i++ {
					if v[i] < u[i] {
						v[i]++
						j += stride
						kr -= stride
						break
					}
					j -= v[i] * stride
					kr += v[i] * stride
					v[i] = 0
					stride *= free[i] + 1
				}
				if i == len(v) {
					break
				}
			}
			next[k] = best
		}
		comb = next
		if f.packWork > f.packCap {
			return 0, false
		}
	}
	if comb == nil || math.IsInf(comb[nfree-1], 1) {
		return 0, false
	}
	return comb[nfree-1], true
}

// pack is the exact least cost of whole nodes (of zone, or any zone when
// zone < 0) holding counts[i] pods of groups[i], and ok false when the part
// is too large or a cap was hit.
func (f *floorer) pack(groups, counts []int, zone int) (float64, bool) {
	if len(groups) == 0 {
		return 0, true
	}
	pk, ok := f.newPacking(groups, counts, zone)
	if !ok {
		return 0, false
	}
	r := make([]int, len(groups))
	copy(r, counts)
	v := pk.solve(r)
	if f.packWork > f.packCap || math.IsInf(v, 1) {
		return 0, false
	}
	return v, true
}

// newPacking sets up the search for counts of groups in zone (any when
// zone < 0); ok false past the group or state caps.
func (f *floorer) newPacking(groups, counts []int, zone int) (*packing, bool) {
	if len(groups) > packMaxGroups || f.packWork > f.packCap {
		return nil, false
	}
	states := 1
	radix := make([]int, len(groups))
	for i, c := range counts {
		radix[i] = states
		states *= c + 1
		if states > packMaxStates {
			return nil, false
		}
	}
	pk := &packing{f: f, groups: groups, counts: counts, radix: radix, memo: map[int]float64{}, x: make([]int, len(groups))}
	pos := map[int]int{}
	for i, gi := range groups {
		pos[gi] = i
	}
	for _, oi := range f.kept {
		if zone >= 0 && f.p.Offerings[oi].Zone != zone {
			continue
		}
		var al []int
		for _, gi := range f.allowedBy[oi] {
			if i, ok := pos[gi]; ok {
				al = append(al, i)
			}
		}
		if len(al) > 0 {
			pk.offs = append(pk.offs, oi)
			pk.allowed = append(pk.allowed, al)
		}
	}
	idx := make([]int, len(pk.offs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		pa, pb := f.p.Offerings[pk.offs[a]].Price, f.p.Offerings[pk.offs[b]].Price
		switch {
		case pa < pb:
			return -1
		case pa > pb:
			return 1
		}
		return 0
	})
	offs, allowed := make([]int, len(idx)), make([][]int, len(idx))
	for i, j := range idx {
		offs[i], allowed[i] = pk.offs[j], pk.allowed[j]
	}
	pk.offs, pk.allowed = offs, allowed
	for q := range NumResources {
		pk.unit[q] = math.Inf(1)
		for _, oi := range pk.offs {
			o := &f.p.Offerings[oi]
			if o.Alloc[q] > 0 {
				pk.unit[q] = math.Min(pk.unit[q], o.Price/o.Alloc[q])
			}
		}
		if math.IsInf(pk.unit[q], 1) {
			pk.unit[q] = 0
		}
	}
	return pk, true
}

// floorOf is a lower bound on f(r) (on f(r') for any r' whose demand is
// that of r less minus) from the demand of each resource alone at its
// least unit price, shrunk well past what packSlack lets loads exceed an
// allocatable by.
func (pk *packing) floorOf(r []int, minus *[NumResources]float64) float64 {
	lb := 0.0
	for q := range NumResources {
		d := 0.0
		for i, c := range r {
			d += float64(c) * pk.f.p.Groups[pk.groups[i]].Request[q]
		}
		if minus != nil {
			d -= minus[q]
		}
		lb = math.Max(lb, d*pk.unit[q])
	}
	return lb * (1 - 1e-6)
}

func (pk *packing) index(r []int) int {
	k := 0
	for i, c := range r {
		k += c * pk.radix[i]
	}
	return k
}

// solve is f(r); +Inf when no node can hold the first pod, or when the work
// cap was hit (the caller then discards the whole search).
func (pk *packing) solve(r []int) float64 {
	first := -1
	for i, c := range r {
		if c > 0 {
			first = i
			break
		}
	}
	if first < 0 {
		return 0
	}
	key := pk.index(r)
	if v, ok := pk.memo[key]; ok {
		return v
	}
	if pk.f.packWork > pk.f.packCap {
		return math.Inf(1)
	}
	// Offerings in price order; a load that one of a cheaper (or as cheap)
	// offering already holds at least as much of is skipped.
	best := math.Inf(1)
	rest := make([]int, len(r))
	// The loads of this state live in pk.arena from base on (one stride of
	// len(r) each) and the kept ones' offsets in pk.seen from seenBase on;
	// deeper calls append past them and cut back to where they started,
	// so offsets stay valid (the arena is always indexed afresh, never
	// held across a call that may grow it). Both are cut back on return.
	stride := len(r)
	base, seenBase := len(pk.arena), len(pk.seen)
	defer func() { pk.arena, pk.seen = pk.arena[:base], pk.seen[:seenBase] }()
	for j, oi := range pk.offs {
		o := &pk.f.p.Offerings[oi]
		if o.Price >= best {
			break
		}
		al := pk.allowed[j]
		if !slices.Contains(al, first) {
			continue
		}
		// Whatever this node holds, the rest needs at least the demand
		// beyond its allocatable: a branch that cannot beat best is
		// skipped (best, and so the memo, stay exact).
		if !pk.f.off.prune && o.Price+pk.floorOf(r, &o.Alloc) >= best {
			continue
		}
		start := len(pk.arena)
		pk.loads(o, al, first, r, 0, o.Alloc)
		end := len(pk.arena)
		n := len(pk.seen)
		for at := start; at < end; at += stride {
			dom := false
			for _, d := range pk.seen[seenBase:n] {
				ge := true
				for i := range stride {
					if pk.arena[d+i] < pk.arena[at+i] {
						ge = false
						break
					}
				}
				if ge {
					dom = true
					break
				}
			}
			if dom {
				continue
			}
			pk.seen = append(pk.seen, at)
			for i := range r {
				rest[i] = r[i] - pk.arena[at+i]
			}
			if !pk.f.off.prune && o.Price+pk.floorOf(rest, nil) >= best {
				continue
			}
			best = math.Min(best, o.Price+pk.solve(rest))
		}
	}
	pk.memo[key] = best
	return best
}

// loads appends to pk.arena every maximal load on o within r (groups al,
// positions into groups) with at least one pod of first; k is the position
// in al.
func (pk *packing) loads(o *Offering, al []int, first int, r []int, k int, left [NumResources]float64) {
	pk.f.packWork++
	if pk.f.packWork > pk.f.packCap {
		return
	}
	if k == len(al) {
		if pk.x[first] == 0 {
			return
		}
		// Maximal: no group can take one more pod.
		for _, i := range al {
			if pk.x[i] < pk.limit(i, r) && fits(&pk.f.p.Groups[pk.groups[i]].Request, &left) {
				return
			}
		}
		pk.arena = append(pk.arena, pk.x...)
		return
	}
	i := al[k]
	req := &pk.f.p.Groups[pk.groups[i]].Request
	hi := pk.limit(i, r)
	for q := range NumResources {
		if req[q] > 0 {
			hi = min(hi, int(math.Floor((left[q]+packSlack*math.Max(1, req[q]))/req[q])))
		}
	}
	hi = max(hi, 0)
	lo := 0
	if k == len(al)-1 {
		lo = hi // the last group takes all it can, else the load is not maximal
	}
	for n := hi; n >= lo; n-- {
		pk.x[i] = n
		var l [NumResources]float64
		for q := range NumResources {
			l[q] = left[q] - req[q]*float64(n)
		}
		pk.loads(o, al, first, r, k+1, l)
	}
	pk.x[i] = 0
}

// limit is the most pods of group position i one node may take within r.
func (pk *packing) limit(i int, r []int) int {
	return min(r[i], int(pk.f.perNode[pk.groups[i]]))
}

// packSlack: sums of requests may exceed an allocatable by rounding only;
// accepting them relaxes (lower f), never the other way.
const packSlack = 1e-9

func fits(req, left *[NumResources]float64) bool {
	for q := range NumResources {
		if req[q] > left[q]+packSlack*math.Max(1, math.Abs(req[q])) {
			return false
		}
	}
	return true
}
