package bound

import "math"

// rmp is the restricted master LP of column generation:
//
//	min  sum_j cost_j theta_j + big * sum_i art_i
//	s.t. sum_j a_ij theta_j - surplus_i + art_i = b_i   (every row is a ">=" row)
//	     theta, surplus, art >= 0
//
// solved by a primal revised simplex with an explicit dense basis inverse.
// It starts from the all-artificial basis, which is feasible, and stays primal
// feasible as columns are added, so each round re-optimizes from the previous
// basis. The artificial cost big exceeds every dual value the real columns can
// support, so artificials leave the basis once real columns cover the rows.
//
// Nothing here has to be exact: the bound is proven from the duals by the
// pricing step (Farley's scaling), so a sloppy master only costs tightness or
// rounds, never validity.
//
// Variables are numbered: [0,m) artificial i, [m,2m) surplus i, then
// structural columns.
type rmp struct {
	m   int
	b   []float64
	big float64

	cost  []float64
	norm  []float64
	start []int32
	rows  []int32
	vals  []float64

	head []int32   // variable in each basis position
	pos  []int32   // basis position of each variable, -1 if nonbasic
	binv []float64 // m x m row-major basis inverse
	xb   []float64
	pi   []float64

	pivots int
	degen  int
	since  int // pivots since the last refactorization
	col    []float64
	nzIdx  []int32
	statRow, statCol int
	nzVal  []float64
	dtol   float64
}

const (
	rmpFeasTol  = 1e-9
	rmpPivotTol = 1e-9
)

func newRMP(b []float64, big, costScale float64) *rmp {
	m := len(b)
	r := &rmp{m: m, b: b, big: big, dtol: 1e-9 * math.Max(costScale, 1e-9)}
	r.head = make([]int32, m)
	r.pos = make([]int32, 2*m, 2*m+64)
	r.binv = make([]float64, m*m)
	r.xb = make([]float64, m)
	r.pi = make([]float64, m)
	r.col = make([]float64, m)
	r.start = []int32{0}
	for i := range m {
		r.head[i] = int32(i)
		r.pos[i] = int32(i)
		r.pos[m+i] = -1
		r.binv[i*m+i] = 1
		r.xb[i] = b[i]
		r.pi[i] = big
	}
	return r
}

func (r *rmp) ncols() int { return len(r.cost) }

// addColumn appends a structural column with the given cost and entries
// (rows must be distinct).
func (r *rmp) addColumn(cost float64, rows []int32, vals []float64) {
	r.cost = append(r.cost, cost)
	var n2 float64
	for _, v := range vals {
		n2 += v * v
	}
	r.norm = append(r.norm, math.Sqrt(1+n2))
	r.rows = append(r.rows, rows...)
	r.vals = append(r.vals, vals...)
	r.start = append(r.start, int32(len(r.rows)))
	r.pos = append(r.pos, -1)
}

func (r *rmp) varCost(v int) float64 {
	switch {
	case v < r.m:
		return r.big
	case v < 2*r.m:
		return 0
	default:
		return r.cost[v-2*r.m]
	}
}

// objective is the master's current value (artificials included).
func (r *rmp) objective() float64 {
	var s float64
	for i, v := range r.head {
		s += r.varCost(int(v)) * r.xb[i]
	}
	return s
}

// artificialsLeft reports whether an artificial still carries value.
func (r *rmp) artificialsLeft() bool {
	for i, v := range r.head {
		if int(v) < r.m && r.xb[i] > rmpFeasTol {
			return true
		}
	}
	return false
}

// loadColumn writes B^-1 a_v into r.col.
func (r *rmp) loadColumn(v int) {
	m := r.m
	clear(r.col)
	switch {
	case v < m:
		for i := range m {
			r.col[i] = r.binv[i*m+v]
		}
	case v < 2*m:
		c := v - m
		for i := range m {
			r.col[i] = -r.binv[i*m+c]
		}
	default:
		j := v - 2*m
		for k := r.start[j]; k < r.start[j+1]; k++ {
			c, a := int(r.rows[k]), r.vals[k]
			for i := range m {
				r.col[i] += r.binv[i*m+c] * a
			}
		}
	}
}

// optimize runs primal simplex pivots until no variable prices out or the
// pivot budget is spent.
func (r *rmp) optimize(budget int) {
	m := r.m
	for it := 0; it < budget; it++ {
		// Pricing: most negative reduced cost per unit column norm.
		q, dq, best := -1, 0.0, 0.0
		for i := range m {
			if r.pos[m+i] < 0 && r.pi[i] < -r.dtol {
				if s := r.pi[i]; s < best {
					q, dq, best = m+i, r.pi[i], s
				}
			}
		}
		for j := range r.cost {
			v := 2*m + j
			if r.pos[v] >= 0 {
				continue
			}
			d := r.cost[j]
			for k := r.start[j]; k < r.start[j+1]; k++ {
				d -= r.pi[r.rows[k]] * r.vals[k]
			}
			if d < -r.dtol {
				if s := d / r.norm[j]; s < best {
					q, dq, best = v, d, s
				}
			}
		}
		if q < 0 {
			return
		}
		r.loadColumn(q)
		// Harris ratio test.
		tmax := math.Inf(1)
		for i := range m {
			if c := r.col[i]; c > rmpPivotTol {
				tmax = min(tmax, (r.xb[i]+rmpFeasTol)/c)
			}
		}
		if math.IsInf(tmax, 1) {
			// Unbounded ray: impossible with nonnegative costs; stop.
			return
		}
		leave, pivot := -1, 0.0
		for i := range m {
			if c := r.col[i]; c > rmpPivotTol && r.xb[i]/c <= tmax && c > pivot {
				leave, pivot = i, c
			}
		}
		t := max(0, r.xb[leave]/pivot)
		if t < 1e-9 {
			r.degen++
		}
		for i := range m {
			if c := r.col[i]; c != 0 {
				r.xb[i] = max(0, r.xb[i]-t*c)
			}
		}
		r.xb[leave] = t
		// Update the inverse: row leave /= pivot; others -= col_i * row
		// leave, over the nonzeros of row leave only (B^-1 stays sparse: most
		// basic variables are surplus or artificial unit columns).
		rowL := r.binv[leave*m : leave*m+m]
		inv := 1 / pivot
		r.nzIdx, r.nzVal = r.nzIdx[:0], r.nzVal[:0]
		for c, v := range rowL {
			if v != 0 {
				v *= inv
				rowL[c] = v
				r.nzIdx = append(r.nzIdx, int32(c))
				r.nzVal = append(r.nzVal, v)
			}
		}
		r.statRow += len(r.nzIdx)
		for i := range m {
			if c := r.col[i]; c != 0 {
				r.statCol++
			}
			if c := r.col[i]; c != 0 && i != leave {
				row := r.binv[i*m : i*m+m]
				for t, k := range r.nzIdx {
					row[k] -= c * r.nzVal[t]
				}
			}
		}
		// Duals: pi += d_q * (new row leave of B^-1).
		for t, k := range r.nzIdx {
			r.pi[k] += dq * r.nzVal[t]
		}
		// A leaving artificial is never priced again (pricing skips them).
		r.pos[r.head[leave]] = -1
		r.head[leave] = int32(q)
		r.pos[q] = int32(leave)
		r.pivots++
		r.since++
		if r.since >= 4*m+50 {
			r.refactor()
		}
	}
}

// refactor recomputes the basis inverse from scratch (Gauss-Jordan with
// partial pivoting), then the primal values and duals, to shed the rounding
// the product updates accumulate. If the basis turned out singular the
// previous inverse is kept.
func (r *rmp) refactor() {
	m := r.m
	r.since = 0
	a := make([]float64, m*m) // a = B, column p is the variable in head[p]
	for p, v := range r.head {
		switch {
		case int(v) < m:
			a[int(v)*m+p] = 1
		case int(v) < 2*m:
			a[(int(v)-m)*m+p] = -1
		default:
			j := int(v) - 2*m
			for k := r.start[j]; k < r.start[j+1]; k++ {
				a[int(r.rows[k])*m+p] = r.vals[k]
			}
		}
	}
	inv := make([]float64, m*m)
	for i := range m {
		inv[i*m+i] = 1
	}
	for c := range m {
		pr, pv := -1, 0.0
		for i := c; i < m; i++ {
			if v := math.Abs(a[i*m+c]); v > pv {
				pr, pv = i, v
			}
		}
		if pv < 1e-12 {
			return
		}
		if pr != c {
			swapRows(a, m, pr, c)
			swapRows(inv, m, pr, c)
		}
		f := 1 / a[c*m+c]
		for k := range m {
			a[c*m+k] *= f
			inv[c*m+k] *= f
		}
		for i := range m {
			if i == c {
				continue
			}
			if g := a[i*m+c]; g != 0 {
				for k := range m {
					a[i*m+k] -= g * a[c*m+k]
					inv[i*m+k] -= g * inv[c*m+k]
				}
			}
		}
	}
	// inv = B^-1 with rows in basis-position order.
	r.binv = inv
	for i := range m {
		var s float64
		row := inv[i*m : i*m+m]
		for c, v := range row {
			s += v * r.b[c]
		}
		r.xb[i] = max(0, s)
	}
	r.recomputeDuals()
}

func swapRows(a []float64, m, i, j int) {
	ri, rj := a[i*m:i*m+m], a[j*m:j*m+m]
	for k := range ri {
		ri[k], rj[k] = rj[k], ri[k]
	}
}

// recomputeDuals sets pi = c_B B^-1.
func (r *rmp) recomputeDuals() {
	m := r.m
	clear(r.pi)
	for i, v := range r.head {
		c := r.varCost(int(v))
		if c == 0 {
			continue
		}
		row := r.binv[i*m : i*m+m]
		for k, bv := range row {
			r.pi[k] += c * bv
		}
	}
}

// primal returns the value of structural column j (0 if nonbasic).
func (r *rmp) primal(j int) float64 {
	if p := r.pos[2*r.m+j]; p >= 0 {
		return r.xb[p]
	}
	return 0
}
