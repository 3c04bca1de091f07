package bound

import (
	"cmp"
	"math"
	"slices"
)

// solver runs column generation with row generation over the reduced
// problem.
//
// Rows. Every constraint of the LP is a "global row": one demand row per
// group, one per (group, zone) minimum, one presence row per group that needs
// one, and NumResources aggregated rows, the demand rows summed with weights
// Request[r] (scaled to at most 1 per pod). The master holds only the active
// rows. It starts with the aggregated ones alone, a relaxation whose duals
// are resource prices (group value = Request . prices); whenever the master
// is solved, the rows its primal solution violates are activated and the
// master is rebuilt. At the end every row is satisfied or the proof rests on
// the rows that were active, which is still a valid bound.
//
// Columns. A column is one node of an offering with a fractional load of
// pods per group, stored with its entries on every global row.
//
// Each round:
//
//  1. re-optimize the master and read its duals (clamped to >= 0), spread to
//     global rows (inactive rows have dual 0);
//  2. smooth: price at a point between the best proven dual (the stability
//     center) and the master's duals (Wentges);
//  3. price every offering: an upper bound F_o on the best value one node of
//     o can carry at those duals, cheap (from resource prices remembered per
//     offering) for most, exact (knap) for the ones that could be the
//     largest F_o/price_o or could yield a column;
//  4. prove a bound: the dual objective D scaled by 1/max(1, max_o F_o/p_o)
//     is dual feasible for the full LP (Farley); keep the best over rounds;
//  5. when no column prices out (or the master value and the bound meet
//     within the tolerance), activate violated rows or stop.
type solver struct {
	pr   *prep
	opts Options
	rmp  *rmp
	kn   knap

	// Global rows: [0, len(pr.b)) as numbered by assignRows, then the
	// aggregated rows of each cluster of groups, aggRow[k][r] (-1 for a
	// resource no pod of the cluster requests).
	gb        []float64 // right-hand side of every global row
	cluster   []int32   // per group
	aggRow    [][NumResources]int32
	aggScale  [][NumResources]float64
	aggTmp    [][NumResources]float64 // scratch per cluster
	aggTouch  []int32
	noDemand  []bool  // per global row: never activated (clustered mode)
	czRows    []int32 // cluster-zone rows
	maxRows   int     // rows the master may grow to
	clusterK  int
	clustered bool
	rowBig    []float64 // artificial cost of each global row in the master
	active    []bool
	local     []int32 // global row -> master row, -1 if inactive
	rows      []int32 // master row -> global row

	// Columns with entries on global rows (CSR).
	colCost  []float64
	colStart []int32
	colRow   []int32
	colVal   []float64

	best struct {
		lb    float64
		pi    []float64 // global duals that proved lb, before scaling
		scale float64
	}
	rounds    int
	converged bool
	hasFree   bool // some kept offering has price 0

	pi    []float64 // global duals priced at
	piRMP []float64 // the master's duals on global rows
	act   []float64 // scratch: row activities
	cand  candHeap
	eRows []int32
	eVals []float64
	lRows []int32
	lVals []float64
	xg    []float64 // per bucket group scratch: pods of the group in a column
	order []int

	// Tuning, set in newSolver; the values were chosen by measuring the
	// benchmarks (bench_test.go), where nearby values made no difference
	// beyond noise.
	perRnd      int     // columns (optima) added per round
	perBucket   int     // columns (optima) added per bucket and round
	maxSolves   int     // exact pricing solves per round once certified
	beta        float64 // Wentges smoothing weight of the stability center
	neighbors   int     // adjacent pricing vertices added per column
	roundPivots int     // master pivots per round: re-optimizing fully each
	// round was measured to cost more pivots in all than stopping early

	ik        intKnap // integral pricing
	intBudget int     // branch and bound nodes left

	solves  int    // exact pricing solves
	onRound func() // tests only: called after every round's proof
}

// tuning holds the mode limits. A master of m rows costs about m^2 per
// pivot and, with many distinct groups, needs many rounds; the reference
// and EC2-like workloads (60 merged groups, 200-300 rows) are solved exactly
// in 70-200 ms of CPU. Past exactGroups merged groups or exactRows rows, the
// solver switches to clustered mode: groups are clustered by shape into
// clusters whose demand rows and zone rows are only present summed per
// cluster (nonnegative combinations of the originals, so still a valid
// relaxation); presence and individual zone rows are activated when
// violated, up to clusteredRows rows. Measured on 100 random distinct groups
// with zone minimums in 6 zones: 0.6% below the exact relaxation in 60 ms,
// where the exact one takes 8 s.
type tuning struct {
	exactGroups, exactRows int
	clusters               int
	clusteredRows          int
	integral               bool // run the integral pricing phase (integral.go)
	cover                  bool // whole-node covering of the proof's dual value
	zoneCaps               bool // per-node caps from the zone minimums (reduce.go, zoneCap)
}

func defaultTuning() tuning {
	return tuning{exactGroups: 64, exactRows: 320, clusters: 8, clusteredRows: 150, integral: true, cover: true, zoneCaps: true}
}

// maxWork caps the master's work (sum of m^2 over pivots, about 1 ns each),
// a little over twice what the EC2-like benchmark needs.
const maxWork = 6e8

// makeClusters assigns groups to clusters of similar shape and adds each
// cluster's aggregated rows.
func (s *solver) makeClusters() {
	pr := s.pr
	ng := len(pr.groups)
	k := s.clusterK
	if k <= 0 || k > ng {
		k = 1
	}
	var scale [NumResources]float64
	for gi := range pr.groups {
		for r := range NumResources {
			scale[r] = max(scale[r], pr.groups[gi].req[r])
		}
	}
	order := make([]int, ng)
	key := make([]float64, ng)
	for gi := range order {
		order[gi] = gi
		g := &pr.groups[gi]
		c, m := 0.0, 0.0
		if scale[0] > 0 {
			c = g.req[0] / scale[0]
		}
		if scale[1] > 0 {
			m = g.req[1] / scale[1]
		}
		key[gi] = math.Atan2(m, c)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key[a], key[b]) })
	s.cluster = make([]int32, ng)
	for rank, gi := range order {
		s.cluster[gi] = int32(rank * k / ng)
	}
	s.aggRow = make([][NumResources]int32, k)
	s.aggScale = make([][NumResources]float64, k)
	s.aggTmp = make([][NumResources]float64, k)
	for gi := range pr.groups {
		c := s.cluster[gi]
		for r := range NumResources {
			s.aggScale[c][r] = max(s.aggScale[c][r], pr.groups[gi].req[r])
		}
	}
	for c := range k {
		for r := range NumResources {
			s.aggRow[c][r] = -1
			if s.aggScale[c][r] > 0 {
				var rhs float64
				for gi := range pr.groups {
					if s.cluster[gi] == int32(c) {
						g := &pr.groups[gi]
						rhs += float64(g.count) * g.req[r] / s.aggScale[c][r]
					}
				}
				s.aggRow[c][r] = int32(len(s.gb))
				s.gb = append(s.gb, rhs)
			}
		}
	}
	// Cluster-zone rows: the zone rows of a cluster's groups summed per
	// zone (only when clusters have several groups).
	if !s.clustered || k == ng {
		return
	}
	czRow := map[[2]int32]int32{}
	for gi := range pr.groups {
		g := &pr.groups[gi]
		for _, m := range g.mins {
			key := [2]int32{s.cluster[gi], m.zone}
			row, ok := czRow[key]
			if !ok {
				row = int32(len(s.gb))
				czRow[key] = row
				s.gb = append(s.gb, 0)
			}
			s.gb[row] += float64(m.min)
		}
	}
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		bk.czRow = make([]int32, len(bk.groups))
		for j, gi := range bk.groups {
			bk.czRow[j] = -1
			if bk.zoneRow[j] >= 0 {
				bk.czRow[j] = czRow[[2]int32{s.cluster[gi], bk.zone}]
			}
		}
	}
	s.czRows = make([]int32, 0, len(czRow))
	for _, row := range czRow {
		s.czRows = append(s.czRows, row)
	}
	slices.Sort(s.czRows)
}

func newSolver(pr *prep, opts Options, tun tuning) *solver {
	s := &solver{pr: pr, opts: opts}
	n := len(pr.b)
	s.gb = append([]float64(nil), pr.b...)
	s.clusterK, s.maxRows = 1, math.MaxInt
	if len(pr.groups) > tun.exactGroups || len(pr.b) > tun.exactRows {
		s.clustered = true
		s.clusterK, s.maxRows = tun.clusters, tun.clusteredRows
	}
	s.makeClusters()
	ng := len(s.gb)
	if s.clustered {
		s.noDemand = make([]bool, ng)
		for gi := range pr.groups {
			s.noDemand[pr.groups[gi].row] = true
		}
	}
	s.active = make([]bool, ng)
	s.rowBig = make([]float64, ng)

	s.local = make([]int32, ng)
	s.best.pi = make([]float64, ng)
	s.pi = make([]float64, ng)
	s.piRMP = make([]float64, ng)
	s.act = make([]float64, ng)
	s.colStart = []int32{0}
	s.perBucket = 1
	s.maxSolves = 4 * len(pr.buckets)
	s.beta = 0.5
	s.neighbors = 8
	s.roundPivots = 60
	for oi := range pr.offers {
		if pr.offers[oi].price == 0 {
			s.hasFree = true
		}
	}
	s.perRnd = max(4, min(32, n/8))
	return s
}

func (s *solver) run() {
	s.initialColumns()
	for _, rows := range s.aggRow {
		for _, ar := range rows {
			if ar >= 0 {
				s.active[ar] = true
			}
		}
	}
	for _, row := range s.czRows {
		s.active[row] = true
	}
	s.rebuild()
	for s.rounds < s.opts.MaxRounds {
		s.rounds++
		s.rmp.optimize(s.roundPivots)
		clear(s.piRMP)
		for i, v := range s.rmp.pi {
			s.piRMP[s.rows[i]] = max(v, 0)
		}
		// Price at a point between the stability center (the best proven
		// dual, scaled to feasibility) and the master's duals.
		beta := s.beta
		if s.best.lb <= 0 || s.rmp.artificialsLeft() {
			beta = 0
		}
		done := false
		for {
			for i, v := range s.piRMP {
				s.pi[i] = beta*s.best.pi[i]*s.best.scale + (1-beta)*v
			}
			s.setValues(s.pi)
			ratio, excess, added := s.price()
			s.prove(ratio, excess)
			if s.onRound != nil {
				s.onRound()
			}
			if added > 0 {
				break
			}
			if beta == 0 {
				// No column prices out at the master's own duals: the master
				// is optimal over its rows.
				done = true
				break
			}
			beta = 0 // mispricing: retry at the master's duals
		}
		if !done && !s.rmp.artificialsLeft() {
			obj := s.rmp.objective()
			done = obj-s.best.lb <= s.opts.Tolerance*obj
		}
		if done {
			// Optimal over the active rows: activate every row the solution
			// violates (activating fewer at a time was measured to cost more
			// rounds than it saves), or stop.
			if rows := s.violatedRows(false); len(rows) > 0 {
				if room := s.maxRows - s.rmp.m; room > 0 {
					if len(rows) > room {
						rows = rows[:room] // most violated first
					}
					s.activate(rows)
					continue
				}
				return // violated rows left and no room: stop unconverged
			}
			// Clustered mode never activates some rows; the relaxation is
			// solved only if the solution meets those too.
			s.converged = !s.clustered || len(s.violatedRows(true)) == 0
			return
		}
		if s.rmp.pivots >= s.opts.MaxPivots || s.rmp.work >= maxWork {
			return
		}
	}
}

// prove turns the duals in s.pi and the pricing's bounds into a lower bound
// and keeps the best.
func (s *solver) prove(ratio, excess float64) {
	var d float64
	for i, v := range s.gb {
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

// groupValue is the dual value of one pod of group g on its demand row and
// the aggregated rows (zone and presence duals excluded).
func (s *solver) groupValue(g *igroup, pi []float64) float64 {
	v := pi[g.row]
	c := s.cluster[g.idx]
	for r := range NumResources {
		if ar := s.aggRow[c][r]; ar >= 0 {
			v += pi[ar] * g.req[r] / s.aggScale[c][r]
		}
	}
	return v
}

// setValues fills each bucket's per-group values for the global duals pi.
func (s *solver) setValues(pi []float64) {
	pr := s.pr
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		for j, gi := range bk.groups {
			g := &pr.groups[gi]
			v := s.groupValue(g, pi)
			if zr := bk.zoneRow[j]; zr >= 0 {
				v += pi[zr]
				if bk.czRow != nil {
					v += pi[bk.czRow[j]]
				}
			}
			bk.w2[j] = v
			if g.presRow >= 0 {
				v += pi[g.presRow]
			}
			bk.w1[j] = v
		}
	}
}

// rebuild makes a fresh master over the active rows holding every column.
func (s *solver) rebuild() {
	s.rows = s.rows[:0]
	for i := range s.local {
		s.local[i] = -1
		if s.active[i] {
			s.local[i] = int32(len(s.rows))
			s.rows = append(s.rows, int32(i))
		}
	}
	b := make([]float64, len(s.rows))
	big := make([]float64, len(s.rows))
	for i, gr := range s.rows {
		b[i] = s.perturbed(gr)
		big[i] = s.rowBig[gr]
	}
	s.rmp = newRMP(b, big, s.pr.maxCost)
	for j := range s.colCost {
		s.lRows, s.lVals = s.lRows[:0], s.lVals[:0]
		for k := s.colStart[j]; k < s.colStart[j+1]; k++ {
			if l := s.local[s.colRow[k]]; l >= 0 {
				s.lRows = append(s.lRows, l)
				s.lVals = append(s.lVals, s.colVal[k])
			}
		}
		s.rmp.addColumn(s.colCost[j], s.lRows, s.lVals)
	}
}

// perturbed is the master's right-hand side for global row gr: the true one
// raised by a tiny deterministic amount against degenerate cycling. The
// proof uses the true ones, so this only shifts the master's value by ~1e-7
// relative.
func (s *solver) perturbed(gr int32) float64 {
	return s.gb[gr] * (1 + 1e-9*float64(1+(int(gr)*7919)%97))
}

// activate adds global rows to the master, keeping its basis.
func (s *solver) activate(rows []int32) {
	base := int32(len(s.rows))
	b := make([]float64, len(rows))
	big := make([]float64, len(rows))
	for t, gr := range rows {
		s.active[gr] = true
		s.local[gr] = base + int32(t)
		s.rows = append(s.rows, gr)
		b[t] = s.perturbed(gr)
		big[t] = s.rowBig[gr]
	}
	s.rmp.growRows(b, big, func(emit func(col int, row int32, val float64)) {
		for j := range s.colCost {
			for k := s.colStart[j]; k < s.colStart[j+1]; k++ {
				if l := s.local[s.colRow[k]]; l >= base {
					emit(j, l, s.colVal[k])
				}
			}
		}
	})
}

// violatedRows computes every global row's activity in the master's primal
// solution and returns the inactive rows it leaves short, most violated
// first; unless all is set, rows clustered mode never activates are left
// out.
func (s *solver) violatedRows(all bool) []int32 {
	clear(s.act)
	for j := range s.colCost {
		th := s.rmp.primal(j)
		if th <= 0 {
			continue
		}
		for k := s.colStart[j]; k < s.colStart[j+1]; k++ {
			s.act[s.colRow[k]] += th * s.colVal[k]
		}
	}
	type viol struct {
		row int32
		rel float64
	}
	var vs []viol
	for i, b := range s.gb {
		if s.active[i] || b <= 0 || (!all && s.noDemand != nil && s.noDemand[i]) {
			continue
		}
		if rel := (b - s.act[i]) / b; rel > 1e-7 {
			vs = append(vs, viol{int32(i), rel})
		}
	}
	slices.SortFunc(vs, func(a, b viol) int {
		if c := cmp.Compare(b.rel, a.rel); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	rows := make([]int32, len(vs))
	for i, v := range vs {
		rows[i] = v.row
	}
	return rows
}
