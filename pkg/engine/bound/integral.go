package bound

import (
	"cmp"
	"math"
	"slices"
)

// Integral pricing (the configuration LP). The Farley proof needs, per
// offering, F_o >= the dual value of any load one node of o can really
// carry, and a real node carries whole pods: x_g in {0, 1, ..., m_go} with
// sum_g x_g R_g <= A_o and y_g = [x_g >= 1]. The fractional pricing (knap)
// bounds the value of fractional loads, a superset, so F_o from an exact
// integer knapsack is smaller and proves more. With integral columns only,
// the master converges towards the Gilmore-Gomory configuration LP, which
// knows that a node cannot hold 7.74 cpu of 750m and 500m pods.
//
// The knapsack is solved by depth-first branch and bound over the groups,
// bounded at every node by weak duality at the resource prices y >= 0 of
// the fractional optimum at the root: for any completion fitting the
// remaining capacity Rem,
//
//	value <= y.Rem + sum_{remaining g} [(w1_g - R_g.y)^+ + (u_g - 1)(w2_g - R_g.y)^+]
//
// with u_g the pods of g that fit in Rem (and m_go). The search has a work
// budget (nodes visited); when it runs out, F_o falls back to the
// fractional bound, which is valid too.

// intLimits restricts the integral phase to small problems, where it is
// cheap and where whole pods matter most.
const (
	intMaxPods   = 500
	intMaxGroups = 24
	// intNodeBudget caps the branch and bound nodes of one knapsack;
	// intTotalBudget those of one Solve.
	intNodeBudget  = 4000
	intTotalBudget = 100000
	intMaxRounds   = 200
)

// intItem is one group of a bucket in the integer knapsack.
type intItem struct {
	j      int32 // bucket group index
	w1, w2 float64
	req    [NumResources]float64
	u      int64 // m_go
	key    float64
}

type intKnap struct {
	items []intItem
	y     [NumResources]float64
	alloc [NumResources]float64
	eps   [NumResources]float64
	x     []int64 // current assignment per item
	bestX []int64
	best  float64
	nodes int
	limit int
	// suffix[i] = sum over items >= i of their bound terms with the full
	// multiplicity, used only as a quick first check
}

// runIntegral continues column generation with integral pricing and
// integral columns until the master is optimal over integral columns (all
// active rows), or a budget runs out. Every proof is kept if better.
// integralEligible reports whether the integral phase runs: small
// problems in exact mode without zero-priced offerings.
func (s *solver) integralEligible() bool {
	pr := s.pr
	return !s.hasFree && !s.clustered && pr.pods <= intMaxPods && len(pr.groups) <= intMaxGroups
}

// runIntegral reports whether the master converged over integral columns.
func (s *solver) runIntegral() bool {
	s.intBudget = intTotalBudget
	s.dropFractionalColumns()
	// Prove at the phase's starting center first: integral pricing can
	// only lower max F_o/p_o at the same duals.
	if s.best.lb > 0 {
		for i := range s.pi {
			s.pi[i] = s.best.pi[i] * s.best.scale
		}
		clear(s.piRMP)
		s.setValues(s.pi)
		ratio, _ := s.priceIntegral(false)
		s.prove(ratio, 0)
	}
	for round := 0; round < intMaxRounds && s.intBudget > 0; round++ {
		s.rmp.optimize(10 * s.roundPivots)
		s.rounds++
		clear(s.piRMP)
		for i, v := range s.rmp.pi {
			s.piRMP[s.rows[i]] = max(v, 0)
		}
		beta := s.beta
		done := false
		for {
			for i, v := range s.piRMP {
				s.pi[i] = beta*s.best.pi[i]*s.best.scale + (1-beta)*v
			}
			s.setValues(s.pi)
			ratio, added := s.priceIntegral(true)
			s.prove(ratio, 0)
			if added > 0 {
				break
			}
			if beta == 0 {
				done = true
				break
			}
			beta = 0
		}
		if !done && !s.rmp.artificialsLeft() {
			obj := s.rmp.objective()
			done = obj-s.best.lb <= s.opts.Tolerance*obj
		}
		if done {
			if rows := s.violatedRows(false); len(rows) > 0 {
				s.activate(rows)
				continue
			}
			return true
		}
		if s.rmp.work >= maxWork {
			return false
		}
	}
	return false
}

// dropFractionalColumns keeps only the columns that are integral loads
// (whole pods of every group) and rebuilds the master over them, so that
// it converges to the configuration LP instead of staying at the
// fractional relaxation's optimum. The initial columns (one pod, one full
// node) are integral, and the artificials keep the master feasible.
func (s *solver) dropFractionalColumns() {
	demand := make([]bool, len(s.gb))
	for gi := range s.pr.groups {
		demand[s.pr.groups[gi].row] = true
	}
	var cost []float64
	start := []int32{0}
	var rows []int32
	var vals []float64
	for j := range s.colCost {
		ok := true
		for k := s.colStart[j]; k < s.colStart[j+1]; k++ {
			if v := s.colVal[k]; demand[s.colRow[k]] && math.Abs(v-math.Round(v)) > 1e-9 {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		cost = append(cost, s.colCost[j])
		rows = append(rows, s.colRow[s.colStart[j]:s.colStart[j+1]]...)
		vals = append(vals, s.colVal[s.colStart[j]:s.colStart[j+1]]...)
		start = append(start, int32(len(rows)))
	}
	s.colCost, s.colStart, s.colRow, s.colVal = cost, start, rows, vals
	s.rebuild()
}

// priceIntegral bounds max_o F_o/p_o over integral loads at the values
// last given to setValues, and (if add) adds the integral loads that price
// out at the master's duals as columns. Offerings are visited in
// decreasing order of their fractional bound; once that bound is below
// the largest integral one found, the rest cannot change the maximum and
// cannot price out.
func (s *solver) priceIntegral(add bool) (maxRatio float64, added int) {
	pr := s.pr
	type cand struct {
		off   int32
		ratio float64
		f     float64
	}
	cands := make([]cand, 0, len(pr.offers))
	for oi := range pr.offers {
		o := &pr.offers[oi]
		f := s.exact(o)
		cands = append(cands, cand{int32(oi), ratioOf(f, o.price), f})
	}
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.ratio, a.ratio); c != 0 {
			return c
		}
		return cmp.Compare(a.off, b.off)
	})
	maxRatio = 0
	for i, c := range cands {
		if c.ratio <= max(maxRatio, 1)*(1+1e-12) {
			maxRatio = max(maxRatio, c.ratio)
			break
		}
		o := &pr.offers[c.off]
		f, xg := s.intPrice(o, c.f)
		r := ratioOf(f, o.price)
		maxRatio = max(maxRatio, r)
		if add && xg != nil && f > o.price*(1+1e-9) {
			if s.addNode(c.off, xg, true) {
				added++
			}
		}
		if i == len(cands)-1 {
			break
		}
	}
	return maxRatio, added
}

// intPrice returns a proven upper bound on the value of any integral load
// of one node of o at the bucket's current values (frac is the fractional
// bound, returned when the search's budget runs out), and the best
// integral load found (per bucket group, nil if none has positive value).
func (s *solver) intPrice(o *ioffer, frac float64) (float64, []float64) {
	bk := &s.pr.buckets[o.bucket]
	k := &s.ik
	k.items = k.items[:0]
	k.y = o.alpha // $ per unit of each resource, from the exact solve
	for r := range NumResources {
		k.alloc[r] = o.alloc[r]
		k.eps[r] = 1e-9 * math.Max(o.alloc[r], 1)
	}
	for j, gi := range bk.groups {
		w1, w2 := bk.w1[j], bk.w2[j]
		if w1 <= 0 {
			continue
		}
		g := &s.pr.groups[gi]
		u := int64(o.caps[j])
		if w2 <= 0 {
			u = min(u, 1)
		}
		if u <= 0 {
			continue
		}
		ry := g.req[0]*k.y[0] + g.req[1]*k.y[1] + g.req[2]*k.y[2]
		k.items = append(k.items, intItem{j: int32(j), w1: w1, w2: w2, req: g.req, u: u, key: w2 - ry})
	}
	if len(k.items) == 0 {
		return 0, nil
	}
	// Most profitable at the prices first: good loads are found early.
	slices.SortStableFunc(k.items, func(a, b intItem) int { return cmp.Compare(b.key, a.key) })
	n := len(k.items)
	if cap(k.x) < n {
		k.x = make([]int64, n)
		k.bestX = make([]int64, n)
	}
	k.x, k.bestX = k.x[:n], k.bestX[:n]
	clear(k.x)
	clear(k.bestX)
	k.best = 0
	k.nodes = 0
	k.limit = min(intNodeBudget, s.intBudget)
	complete := k.search(0, k.alloc, 0)
	s.intBudget -= k.nodes
	var xg []float64
	if k.best > 0 {
		xg = make([]float64, len(bk.groups))
		for i, it := range k.items {
			xg[it.j] = float64(k.bestX[i])
		}
	}
	if !complete {
		return frac, xg
	}
	// The search is exhaustive up to its pruning bound, which is exact
	// arithmetic on the same values; allow for rounding.
	return math.Min(frac, k.best*(1+1e-9)+1e-12), xg
}

// fits is how many pods of it fit in rem, at most it.u.
func (k *intKnap) fits(it *intItem, rem *[NumResources]float64) int64 {
	t := it.u
	for r := range NumResources {
		if it.req[r] > 0 {
			t = min(t, int64(math.Floor((rem[r]+k.eps[r])/it.req[r])))
		}
	}
	return max(t, 0)
}

// bound is the weak-duality bound on what items i.. can add within rem.
func (k *intKnap) bound(i int, rem *[NumResources]float64) float64 {
	b := 0.0
	for r := range NumResources {
		b += k.y[r] * max(rem[r], 0)
	}
	for ; i < len(k.items); i++ {
		it := &k.items[i]
		t := k.fits(it, rem)
		if t == 0 {
			continue
		}
		ry := it.req[0]*k.y[0] + it.req[1]*k.y[1] + it.req[2]*k.y[2]
		if d := it.w1 - ry; d > 0 {
			b += d
		}
		if d := it.w2 - ry; d > 0 && t > 1 {
			b += float64(t-1) * d
		}
	}
	return b
}

// search explores items i.. with value val so far and capacity rem left;
// it reports false when the node budget ran out.
func (k *intKnap) search(i int, rem [NumResources]float64, val float64) bool {
	k.nodes++
	if val > k.best {
		k.best = val
		copy(k.bestX, k.x)
	}
	if i == len(k.items) {
		return true
	}
	if k.nodes > k.limit {
		return false
	}
	if val+k.bound(i, &rem) <= k.best*(1+1e-12) {
		return true
	}
	it := &k.items[i]
	t := k.fits(it, &rem)
	for c := t; c >= 0; c-- {
		next := rem
		for r := range NumResources {
			next[r] -= float64(c) * it.req[r]
		}
		v := val
		if c > 0 {
			v += it.w1 + float64(c-1)*it.w2
		}
		k.x[i] = c
		ok := k.search(i+1, next, v)
		k.x[i] = 0
		if !ok {
			return false
		}
	}
	return true
}

// Whole nodes at the proof's prices. For the best duals pi and the
// per-offering bounds F_o, every plan satisfies
// D(pi) <= sum_o F_o n_o with n_o whole numbers, so it costs at least
//
//	min sum_o p_o n_o  s.t.  sum_o F_o n_o >= D(pi),  n_o in {0, 1, ...}
//
// an unbounded covering knapsack in one dimension. Its linear relaxation
// is Farley's D / max_o(F_o/p_o); the integral one also knows that a
// fraction of a node is not for sale. It is solved exactly by dynamic
// programming over a grid of the dual value: each F_o is rounded up to the
// grid (a relaxation), so the optimum over rounded values is still a
// lower bound.
const coverGrid = 4096

func (s *solver) coverBound() float64 {
	if s.hasFree || s.best.lb <= 0 {
		return 0
	}
	pr := s.pr
	pi := make([]float64, len(s.best.pi))
	for i, v := range s.best.pi {
		pi[i] = v * s.best.scale
	}
	var d float64
	for i, v := range s.gb {
		d += v * pi[i]
	}
	if d <= 0 {
		return 0
	}
	s.setValues(pi)
	clear(s.piRMP)
	integral := s.integralEligible()
	step := d / coverGrid
	// cheapest[w]: the cheapest offering whose rounded value is w
	// (values above the target count as the target).
	cheapest := make([]float64, coverGrid+1)
	for i := range cheapest {
		cheapest[i] = math.Inf(1)
	}
	for oi := range pr.offers {
		o := &pr.offers[oi]
		f := s.exact(o)
		if integral && f > 0 {
			f, _ = s.intPrice(o, f)
		}
		if f <= 0 {
			continue
		}
		w := int(math.Ceil(f/step*(1+1e-9) + 1e-9))
		w = min(w, coverGrid)
		cheapest[w] = min(cheapest[w], o.price)
	}
	// Keep only weights not dominated by a larger, no costlier one.
	best := math.Inf(1)
	var ws []int
	var cs []float64
	for w := coverGrid; w >= 1; w-- {
		if cheapest[w] < best {
			best = cheapest[w]
			ws = append(ws, w)
			cs = append(cs, cheapest[w])
		}
	}
	// dp[v]: cheapest whole nodes of rounded value >= v.
	dp := make([]float64, coverGrid+1)
	for v := 1; v <= coverGrid; v++ {
		dp[v] = math.Inf(1)
		for i, w := range ws {
			c := cs[i]
			if w >= v {
				dp[v] = min(dp[v], c)
			} else {
				dp[v] = min(dp[v], c+dp[v-w])
			}
		}
	}
	if math.IsInf(dp[coverGrid], 1) {
		return 0
	}
	return dp[coverGrid]
}
