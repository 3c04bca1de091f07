package bound

import "math"

// rmp is the restricted master LP of column generation:
//
//	min  sum_j cost_j theta_j + sum_i big_i art_i
//	s.t. sum_j a_ij theta_j - surplus_i + art_i = b_i   (every row is a ">=" row)
//	     theta, surplus, art >= 0
//
// solved by a primal revised simplex with an explicit dense basis inverse
// (the basis inverse of this master is dense in practice, so a sparse
// factorization would not pay). It starts from the all-artificial basis,
// which is feasible, and stays primal feasible as columns are added, so each
// round re-optimizes from the previous basis. Rows can be added too: each new
// row enters with its artificial (or, if already satisfied, its surplus)
// basic, which keeps the basis primal feasible. Each artificial cost big_i
// exceeds every dual value the real columns can support on its row (the
// caller passes twice the cost of the cheapest column covering the row with
// coefficient 1), so artificials leave the basis once real columns cover the
// rows.
//
// Nothing here has to be exact: the bound is proven from the duals by the
// pricing step (Farley's scaling), so a sloppy master only costs tightness or
// rounds, never validity.
//
// Variables: v >= 0 is structural column v; v < 0 encodes ^v = 2*row for the
// row's artificial and 2*row+1 for its surplus.
type rmp struct {
	m   int
	b   []float64
	big []float64 // artificial cost per row

	cost []float64
	norm []float64
	cols [][]entry

	head []int32   // variable in each basis position
	posC []int32   // basis position of each column, -1 if nonbasic
	posA []int32   // basis position of each row's artificial, -1 if nonbasic
	posS []int32   // basis position of each row's surplus, -1 if nonbasic
	binv []float64 // m x m row-major basis inverse
	xb   []float64
	pi   []float64

	pivots int
	work   float64 // sum over pivots of m^2, the cost of one pivot
	since  int     // pivots since the last refactorization
	cursor int     // partial pricing position
	col    []float64
	nzIdx  []int32
	nzVal  []float64
	dtol   float64
}

type entry struct {
	row int32
	val float64
}

const (
	rmpFeasTol  = 1e-9
	rmpPivotTol = 1e-9
)

func artVar(row int) int32 { return ^int32(2 * row) }
func surVar(row int) int32 { return ^int32(2*row + 1) }

func newRMP(b, big []float64, costScale float64) *rmp {
	r := &rmp{dtol: 1e-9 * math.Max(costScale, 1e-9)}
	r.growRows(b, big, nil)
	return r
}

func (r *rmp) ncols() int { return len(r.cost) }

// addColumn appends a structural column with the given cost and entries
// (rows must be distinct).
func (r *rmp) addColumn(cost float64, rows []int32, vals []float64) {
	es := make([]entry, len(rows))
	var n2 float64
	for i, row := range rows {
		es[i] = entry{row, vals[i]}
		n2 += vals[i] * vals[i]
	}
	r.cost = append(r.cost, cost)
	r.norm = append(r.norm, math.Sqrt(1+n2))
	r.cols = append(r.cols, es)
	r.posC = append(r.posC, -1)
}

// growRows appends rows with right-hand sides b and artificial costs big.
// entries, if not nil, is
// called with an emit function through which the caller gives the new rows'
// coefficients on existing columns (row numbers are the new local ones,
// starting at the old row count). Each new row's artificial becomes basic if
// the current solution leaves the row short, else its surplus.
func (r *rmp) growRows(b, big []float64, entries func(emit func(col int, row int32, val float64))) {
	m0, k := r.m, len(b)
	m := m0 + k
	if entries != nil {
		entries(func(col int, row int32, val float64) {
			r.cols[col] = append(r.cols[col], entry{row, val})
			r.norm[col] = math.Sqrt(r.norm[col]*r.norm[col] + val*val)
		})
	}
	// Coefficients of the new rows on the basic columns, and the new rows'
	// current activities.
	rcoef := make([]float64, k*m0)
	act := make([]float64, k)
	for p, v := range r.head {
		if v < 0 {
			continue
		}
		for _, e := range r.cols[v] {
			if t := int(e.row) - m0; t >= 0 {
				rcoef[t*m0+p] += e.val
				act[t] += e.val * r.xb[p]
			}
		}
	}
	binv := make([]float64, m*m)
	for i := range m0 {
		copy(binv[i*m:i*m+m0], r.binv[i*m0:i*m0+m0])
	}
	r.b = append(r.b, b...)
	r.big = append(r.big, big...)
	for t := range k {
		row := m0 + t
		sign := 1.0
		v := b[t] - act[t]
		basic := artVar(row)
		if v < 0 {
			sign, v, basic = -1, -v, surVar(row)
		}
		// Bottom-left block row t: -sign * (rcoef_t . B^-1); diagonal: sign.
		dst := binv[row*m : row*m+m0]
		for p := range m0 {
			if c := rcoef[t*m0+p]; c != 0 {
				src := r.binv[p*m0 : p*m0+m0]
				for q, s := range src {
					dst[q] -= sign * c * s
				}
			}
		}
		binv[row*m+row] = sign
		r.head = append(r.head, basic)
		r.xb = append(r.xb, v)
		if sign > 0 {
			r.posA = append(r.posA, int32(row))
			r.posS = append(r.posS, -1)
		} else {
			r.posA = append(r.posA, -1)
			r.posS = append(r.posS, int32(row))
		}
	}
	r.m = m
	r.binv = binv
	r.col = make([]float64, m)
	r.pi = make([]float64, m)
	r.recomputeDuals()
}

func (r *rmp) varCost(v int32) float64 {
	if v >= 0 {
		return r.cost[v]
	}
	if (^v)&1 == 0 {
		return r.big[(^v)>>1]
	}
	return 0
}

func (r *rmp) setPos(v, p int32) {
	switch {
	case v >= 0:
		r.posC[v] = p
	case (^v)&1 == 0:
		r.posA[(^v)>>1] = p
	default:
		r.posS[(^v)>>1] = p
	}
}

// objective is the master's current value (artificials included).
func (r *rmp) objective() float64 {
	var s float64
	for i, v := range r.head {
		s += r.varCost(v) * r.xb[i]
	}
	return s
}

// artificialsLeft reports whether an artificial still carries value.
func (r *rmp) artificialsLeft() bool {
	for i, v := range r.head {
		if v < 0 && (^v)&1 == 0 && r.xb[i] > rmpFeasTol {
			return true
		}
	}
	return false
}

// loadColumn writes B^-1 a_v into r.col.
func (r *rmp) loadColumn(v int32) {
	m := r.m
	clear(r.col)
	if v < 0 {
		c := int((^v) >> 1)
		sign := 1.0
		if (^v)&1 == 1 {
			sign = -1
		}
		for i := range m {
			r.col[i] = sign * r.binv[i*m+c]
		}
		return
	}
	for _, e := range r.cols[v] {
		c, a := int(e.row), e.val
		for i := range m {
			r.col[i] += r.binv[i*m+c] * a
		}
	}
}

// optimize runs primal simplex pivots until no variable prices out or the
// pivot budget is spent. Artificials that left the basis are never priced
// again.
func (r *rmp) optimize(budget int) {
	m := r.m
	for it := 0; it < budget; it++ {
		// Pricing: most negative reduced cost per unit column norm. Partial:
		// columns are scanned in chunks from a rotating cursor, stopping
		// after the first chunk that offers a candidate.
		q, dq, best := int32(0), 0.0, 0.0
		found := false
		for i := range m {
			if r.posS[i] < 0 && r.pi[i] < -r.dtol {
				if s := r.pi[i]; s < best {
					q, dq, best, found = surVar(i), r.pi[i], s, true
				}
			}
		}
		n := len(r.cols)
		chunk := max(128, n/8)
		for scanned := 0; scanned < n; {
			end := min(scanned+chunk, n)
			for ; scanned < end; scanned++ {
				j := r.cursor
				r.cursor++
				if r.cursor >= n {
					r.cursor = 0
				}
				if r.posC[j] >= 0 {
					continue
				}
				d := r.cost[j]
				for _, e := range r.cols[j] {
					d -= r.pi[e.row] * e.val
				}
				if d < -r.dtol {
					if s := d / r.norm[j]; s < best {
						q, dq, best, found = int32(j), d, s, true
					}
				}
			}
			if found {
				break
			}
		}
		if !found {
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
		for i := range m {
			if c := r.col[i]; c != 0 {
				r.xb[i] = max(0, r.xb[i]-t*c)
			}
		}
		r.xb[leave] = t
		// Update the inverse: row leave /= pivot; others -= col_i * row
		// leave, over the nonzeros of row leave only.
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
		dense := 2*len(r.nzIdx) > m
		for i := range m {
			if c := r.col[i]; c != 0 && i != leave {
				row := r.binv[i*m : i*m+m]
				if dense {
					axpy(row, rowL, -c)
					continue
				}
				for t, k := range r.nzIdx {
					row[k] -= c * r.nzVal[t]
				}
			}
		}
		// Duals: pi += d_q * (new row leave of B^-1).
		for t, k := range r.nzIdx {
			r.pi[k] += dq * r.nzVal[t]
		}
		r.setPos(r.head[leave], -1)
		r.head[leave] = q
		r.setPos(q, int32(leave))
		r.pivots++
		r.work += float64(m) * float64(m)
		r.since++
		if r.since >= 8*m+100 {
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
		if v >= 0 {
			for _, e := range r.cols[v] {
				a[int(e.row)*m+p] = e.val
			}
			continue
		}
		row := int((^v) >> 1)
		if (^v)&1 == 0 {
			a[row*m+p] = 1
		} else {
			a[row*m+p] = -1
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
		c := r.varCost(v)
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
	if p := r.posC[j]; p >= 0 {
		return r.xb[p]
	}
	return 0
}

// axpy sets y += a*x (len(y) == len(x)), four at a time.
func axpy(y, x []float64, a float64) {
	n := len(x)
	y = y[:n]
	k := 0
	for ; k+4 <= n; k += 4 {
		y[k] += a * x[k]
		y[k+1] += a * x[k+1]
		y[k+2] += a * x[k+2]
		y[k+3] += a * x[k+3]
	}
	for ; k < n; k++ {
		y[k] += a * x[k]
	}
}
