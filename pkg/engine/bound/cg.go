package bound

import (
	"container/heap"
	"math"
)

// solver runs column generation over the reduced problem. Each round:
//
//  1. re-optimize the restricted master, read its duals (clamped to >= 0);
//  2. price every offering: an upper bound F_o on the best value one node of
//     o can carry at those duals, cheap (from resource prices remembered per
//     offering) for most, exact (knap) for the ones that could be the
//     largest F_o/price_o or could yield a column;
//  3. prove a bound: the dual objective D scaled by 1/max(1, max_o F_o/p_o)
//     is dual feasible for the full LP (Farley); keep the best over rounds;
//  4. stop when no column prices out or the master value and the bound meet
//     within the tolerance; otherwise add the best new columns.
type solver struct {
	pr   *prep
	opts Options
	rmp  *rmp
	kn   knap

	best struct {
		lb    float64
		pi    []float64
		scale float64
	}
	rounds    int
	converged bool
	hasFree   bool // some kept offering has price 0

	cand    candHeap
	colRows []int32
	colVals []float64
	xg      []float64 // per bucket group scratch: pods of the group in a column
	perRnd    int
	perBucket int
	maxSolves int
	beta      float64 // Wentges smoothing weight of the stability center
	neighbors int     // adjacent pricing vertices added per column
	order     []int
	pi        []float64
	piRMP     []float64
	trace     func(format string, args ...any) // tests only
	statSolves, statIters int
}

func newSolver(pr *prep, opts Options) *solver {
	s := &solver{pr: pr, opts: opts}
	// Perturb the master's right-hand sides up by a tiny deterministic amount
	// against degenerate cycling. The proof uses the true b, so this only
	// shifts the master's value by ~1e-8 relative.
	b := make([]float64, len(pr.b))
	for i, v := range pr.b {
		b[i] = v * (1 + 1e-9*float64(1+(i*7919)%97))
	}
	big := 2*pr.maxCost + 1e-9
	s.rmp = newRMP(b, big, pr.maxCost)
	s.best.pi = make([]float64, len(pr.b))
	s.pi = make([]float64, len(pr.b))
	s.piRMP = make([]float64, len(pr.b))
	s.perBucket = 1
	s.maxSolves = 4 * len(pr.buckets)
	s.beta = 0.5
	s.neighbors = 8
	for oi := range pr.offers {
		if pr.offers[oi].price == 0 {
			s.hasFree = true
		}
	}
	s.perRnd = max(4, min(32, len(pr.b)/8))
	return s
}

func (s *solver) run() {
	s.initialColumns()
	for s.rounds < s.opts.MaxRounds {
		s.rounds++
		s.rmp.optimize(50*s.rmp.m + 1000)
		for i, v := range s.rmp.pi {
			s.piRMP[i] = max(v, 0)
		}
		// Price at a point between the stability center (the best proven
		// dual, scaled to feasibility) and the master's duals.
		beta := s.beta
		if s.best.lb <= 0 || s.rmp.artificialsLeft() {
			beta = 0
		}
		for {
			for i, v := range s.piRMP {
				s.pi[i] = beta*s.best.pi[i]*s.best.scale + (1-beta)*v
			}
			s.setValues(s.pi)
			ratio, excess, added := s.price(s.piRMP)
			s.prove(ratio, excess)
			if s.trace != nil {
				s.trace("round %d beta %.2f pivots %d cols %d obj %.6g ratio %.6f best %.6g added %d",
					s.rounds, beta, s.rmp.pivots, s.rmp.ncols(), s.rmp.objective(), ratio, s.best.lb, added)
			}
			if added > 0 {
				break
			}
			if beta == 0 {
				// No column prices out at the master's own duals: the master
				// is optimal for the full LP, its duals prove its value.
				s.converged = true
				return
			}
			beta = 0 // mispricing: retry at the master's duals
		}
		if !s.rmp.artificialsLeft() {
			obj := s.rmp.objective()
			if obj-s.best.lb <= s.opts.Tolerance*obj {
				s.converged = true
				return
			}
		}
	}
}

// prove turns the duals in s.pi and the pricing's bounds into a lower bound
// and keeps the best.
func (s *solver) prove(ratio, excess float64) {
	var d float64
	for i, v := range s.pr.b {
		d += v * s.pi[i]
	}
	lb, scale := 0.0, 0.0
	if !math.IsInf(ratio, 1) {
		scale = 1 / max(1, ratio)
		lb = d * scale
	}
	if s.hasFree {
		if lb2 := d - s.pr.pods*excess; lb2 > lb {
			lb, scale = lb2, 1
		}
	}
	if lb > s.best.lb {
		s.best.lb, s.best.scale = lb, scale
		copy(s.best.pi, s.pi)
	}
}

// setValues fills each bucket's per-group values for the duals pi.
func (s *solver) setValues(pi []float64) {
	pr := s.pr
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		for j, gi := range bk.groups {
			g := &pr.groups[gi]
			v := pi[g.row]
			if zr := bk.zoneRow[j]; zr >= 0 {
				v += pi[zr]
			}
			bk.w2[j] = v
			if g.presRow >= 0 {
				v += pi[g.presRow]
			}
			bk.w1[j] = v
		}
	}
}

// cheapBound bounds F_o with the resource prices alpha (unscaled):
// F_o <= alpha.alloc + sum_g [(w1 - req.alpha)^+ + (m-1)(w2 - req.alpha)^+].
func (s *solver) cheapBound(o *ioffer, alpha *[NumResources]float64) float64 {
	bk := &s.pr.buckets[o.bucket]
	f := alpha[0]*o.alloc[0] + alpha[1]*o.alloc[1] + alpha[2]*o.alloc[2]
	for j, gi := range bk.groups {
		req := &s.pr.groups[gi].req
		ra := req[0]*alpha[0] + req[1]*alpha[1] + req[2]*alpha[2]
		if t := bk.w1[j] - ra; t > 0 {
			f += t
		}
		if m := o.caps[j]; m > 1 {
			if t := bk.w2[j] - ra; t > 0 {
				f += (m - 1) * t
			}
		}
	}
	return f
}

// exact solves o's pricing LP, remembers its resource prices and returns the
// proven upper bound on F_o, leaving the primal solution in s.kn.
func (s *solver) exact(o *ioffer) float64 {
	bk := &s.pr.buckets[o.bucket]
	var scale [NumResources]float64
	for r := range NumResources {
		scale[r] = o.alloc[r]
		if scale[r] <= 0 {
			scale[r] = 1
		}
	}
	k := &s.kn
	k.reset()
	for j, gi := range bk.groups {
		req := &s.pr.groups[gi].req
		a := [NumResources]float64{req[0] / scale[0], req[1] / scale[1], req[2] / scale[2]}
		w1, w2, m := bk.w1[j], bk.w2[j], o.caps[j]
		if w1 <= 0 {
			continue
		}
		if w1 == w2 || m == 1 {
			// One item: no presence premium, or only a first pod fits.
			k.add(w1, m, a, int32(j))
			continue
		}
		k.add(w1, 1, a, int32(j))
		if w2 > 0 {
			k.add(w2, m-1, a, int32(j))
		}
	}
	if len(k.w) == 0 {
		o.alpha, o.hasAlpha = [NumResources]float64{}, true
		return 0
	}
	k.solve()
	// Proven bound from the duals y, in scaled units.
	f := k.y[0] + k.y[1] + k.y[2]
	for j := range k.w {
		a := &k.a[j]
		if t := k.w[j] - (a[0]*k.y[0] + a[1]*k.y[1] + a[2]*k.y[2]); t > 0 {
			f += k.u[j] * t
		}
	}
	for r := range NumResources {
		if o.alloc[r] > 0 {
			o.alpha[r] = k.y[r] / o.alloc[r]
		} else {
			o.alpha[r] = 0
		}
	}
	o.hasAlpha = true
	return f
}

type cand struct {
	ratio float64
	off   int32
	exact bool
}

type candHeap []cand

func (h candHeap) Len() int { return len(h) }
func (h candHeap) Less(i, j int) bool {
	if h[i].ratio != h[j].ratio {
		return h[i].ratio > h[j].ratio
	}
	return h[i].off < h[j].off
}
func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *candHeap) Push(x any)   { *h = append(*h, x.(cand)) }
func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func ratioOf(f, price float64) float64 {
	if price > 0 {
		return f / price
	}
	if f <= 1e-12 {
		return 0
	}
	return math.Inf(1)
}

// price bounds every offering at the duals last given to setValues and adds
// improving columns, at most perBucket per bucket and perRnd in all: a column
// is added when its reduced cost at the master's own duals piRMP is negative.
// It returns a proven upper bound on max_o F_o/p_o, one on
// max_o (F_o - p_o)^+, and the number of columns added.
func (s *solver) price(piRMP []float64) (maxRatio, maxExcess float64, added int) {
	pr := s.pr
	// Offerings without remembered prices borrow them from one exactly
	// priced offering of their bucket (the middle one by price).
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		bk.added = 0
		mid := &pr.offers[bk.offers[len(bk.offers)/2]]
		if !mid.hasAlpha {
			s.exact(mid)
		}
	}
	s.cand = s.cand[:0]
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		mid := &pr.offers[bk.offers[len(bk.offers)/2]]
		for _, oi := range bk.offers {
			o := &pr.offers[oi]
			alpha := &mid.alpha
			if o.hasAlpha {
				alpha = &o.alpha
			}
			f := s.cheapBound(o, alpha)
			maxExcess = max(maxExcess, f-o.price)
			s.cand = append(s.cand, cand{ratio: ratioOf(f, o.price), off: oi})
		}
	}
	heap.Init(&s.cand)
	maxRatio = -1
	solves := 0
	for s.cand.Len() > 0 {
		top := s.cand[0]
		o := &pr.offers[top.off]
		bk := &pr.buckets[o.bucket]
		if !top.exact {
			if maxRatio >= 0 && (bk.added >= s.perBucket || solves >= s.maxSolves) {
				// The maximum is certified already; this offering could only
				// give a column its bucket has no room for.
				heap.Pop(&s.cand)
				continue
			}
			f := s.exact(o)
			solves++
			s.statSolves++
			s.statIters += s.kn.iters
			s.cand[0] = cand{ratio: ratioOf(f, o.price), off: top.off, exact: true}
			heap.Fix(&s.cand, 0)
			if f > o.price*(1+1e-9) && bk.added < s.perBucket && added < s.perRnd {
				if s.addColumn(top.off, piRMP) {
					bk.added++
					added++
				}
			}
			continue
		}
		if maxRatio < 0 {
			maxRatio = top.ratio
		}
		if top.ratio <= 1+1e-9 || added >= s.perRnd {
			break
		}
		heap.Pop(&s.cand)
	}
	if maxRatio < 0 {
		maxRatio = 0
	}
	// maxExcess from cheap bounds is already an upper bound for every
	// offering; exact ones can only be lower.
	return maxRatio, max(maxExcess, 0), added
}

// addColumn turns the primal solution left in s.kn for offering oi into a
// master column, and adds up to s.neighbors adjacent vertices as well; only
// columns with negative reduced cost at piRMP are kept. It reports whether
// the optimum itself was added.
func (s *solver) addColumn(oi int32, piRMP []float64) bool {
	o := &s.pr.offers[oi]
	k := &s.kn
	ok := s.addLoad(o, piRMP, func(j int) float64 { return k.x[j] })
	if !ok || s.neighbors == 0 {
		return ok
	}
	basicPos := [NumResources]int{-1, -1, -1}
	k.neighbors(s.neighbors, s.order, func(moved int, xm float64, xb *[NumResources]float64) {
		for i, v := range k.basic {
			basicPos[i] = v
		}
		s.addLoad(o, piRMP, func(j int) float64 {
			if j == moved {
				return xm
			}
			for i, v := range basicPos {
				if v == j {
					return min(max(xb[i], 0), k.u[j])
				}
			}
			return k.x[j]
		})
	})
	return ok
}

// addLoad adds the column of one node of o loaded with x(item) of every
// pricing item, if its reduced cost at piRMP is negative.
func (s *solver) addLoad(o *ioffer, piRMP []float64, x func(j int) float64) bool {
	bk := &s.pr.buckets[o.bucket]
	if cap(s.xg) < len(bk.groups) {
		s.xg = make([]float64, len(bk.groups))
	}
	xg := s.xg[:len(bk.groups)]
	clear(xg)
	k := &s.kn
	for j := range k.w {
		xg[k.group[j]] += x(j)
	}
	s.colRows, s.colVals = s.colRows[:0], s.colVals[:0]
	for j, v := range xg {
		if v <= 1e-12 {
			continue
		}
		s.appendEntries(&s.pr.groups[bk.groups[j]], bk.zoneRow[j], v)
	}
	if len(s.colRows) == 0 {
		return false
	}
	rc := o.price
	for i, r := range s.colRows {
		rc -= piRMP[r] * s.colVals[i]
	}
	if rc >= -1e-9*o.price {
		return false
	}
	s.rmp.addColumn(o.price, s.colRows, s.colVals)
	return true
}

func (s *solver) appendEntries(g *igroup, zoneRow int32, x float64) {
	s.colRows = append(s.colRows, g.row)
	s.colVals = append(s.colVals, x)
	if zoneRow >= 0 {
		s.colRows = append(s.colRows, zoneRow)
		s.colVals = append(s.colVals, x)
	}
	if g.presRow >= 0 {
		s.colRows = append(s.colRows, g.presRow)
		s.colVals = append(s.colVals, min(x, 1))
	}
}

// initialColumns seeds the master with, per group: one pod alone on the
// cheapest offering overall and in every zone with a minimum (these bound
// every dual by the largest price, which makes the big-M artificials safe),
// and a node full of the group on the offering cheapest per pod.
func (s *solver) initialColumns() {
	pr := s.pr
	ng := len(pr.groups)
	type pick struct {
		off  int32
		j    int32
		cost float64
	}
	cheapest := make([]pick, ng)
	packed := make([]pick, ng)
	zoneBest := make([][]pick, ng)
	for gi := range pr.groups {
		cheapest[gi] = pick{off: -1, cost: math.Inf(1)}
		packed[gi] = pick{off: -1, cost: math.Inf(1)}
		zoneBest[gi] = make([]pick, len(pr.groups[gi].mins))
		for i := range zoneBest[gi] {
			zoneBest[gi][i] = pick{off: -1, cost: math.Inf(1)}
		}
	}
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		for _, oi := range bk.offers {
			o := &pr.offers[oi]
			for j, gi := range bk.groups {
				if o.price < cheapest[gi].cost {
					cheapest[gi] = pick{oi, int32(j), o.price}
				}
				if c := o.price / o.caps[j]; c < packed[gi].cost {
					packed[gi] = pick{oi, int32(j), c}
				}
				if bk.zoneRow[j] >= 0 {
					g := &pr.groups[gi]
					for i := range g.mins {
						if g.mins[i].zone == o.zone && o.price < zoneBest[gi][i].cost {
							zoneBest[gi][i] = pick{oi, int32(j), o.price}
						}
					}
				}
			}
		}
	}
	single := func(gi int, p pick, x float64) {
		if p.off < 0 {
			return
		}
		o := &pr.offers[p.off]
		s.colRows, s.colVals = s.colRows[:0], s.colVals[:0]
		s.appendEntries(&pr.groups[gi], pr.buckets[o.bucket].zoneRow[p.j], x)
		s.rmp.addColumn(o.price, s.colRows, s.colVals)
	}
	for gi := range pr.groups {
		single(gi, cheapest[gi], 1)
		for _, p := range zoneBest[gi] {
			single(gi, p, 1)
		}
		if p := packed[gi]; p.off >= 0 {
			if m := pr.offers[p.off].caps[p.j]; m > 1 {
				single(gi, p, m)
			}
		}
	}
}
