package bound

import "math"

// knap solves the pricing LP of one offering, the best fractional load of a
// single node:
//
//	max  sum_j w_j x_j
//	s.t. sum_j a_j[r] x_j <= 1   for each resource r (rows scaled by alloc)
//	     0 <= x_j <= u_j
//
// with a bounded primal simplex whose basis is NumResources x NumResources.
// Items are (group, segment) pairs: segment 1 is a group's first pod on the
// node (worth the presence dual too, u = 1), segment 2 the rest (u = m-1).
//
// The resource duals y (>= 0) it ends with give, by weak duality, the upper
// bound sum_r y_r + sum_j u_j (w_j - a_j.y)^+ on the optimum for any y >= 0;
// the solver computes that bound itself rather than trusting the primal
// objective, so an iteration cap or rounding can only loosen, never break, the
// proof.
type knap struct {
	w, u  []float64
	a     [][NumResources]float64
	group []int32 // bucket group index of each item
	state []int8
	x     []float64

	basic [NumResources]int // item index, or -1-r for the slack of row r
	binv  [NumResources][NumResources]float64
	xb    [NumResources]float64
	y     [NumResources]float64
	iters int
}

const (
	atLower int8 = iota
	atUpper
	isBasic
)

func (k *knap) reset() {
	k.w, k.u, k.a, k.group = k.w[:0], k.u[:0], k.a[:0], k.group[:0]
}

func (k *knap) add(w, u float64, a [NumResources]float64, group int32) {
	k.w = append(k.w, w)
	k.u = append(k.u, u)
	k.a = append(k.a, a)
	k.group = append(k.group, group)
}

// solve runs the simplex from the all-slack basis.
func (k *knap) solve() {
	n := len(k.w)
	if cap(k.state) < n {
		k.state = make([]int8, n)
		k.x = make([]float64, n)
	}
	k.state, k.x = k.state[:n], k.x[:n]
	clear(k.state)
	wmax := 0.0
	for _, w := range k.w {
		wmax = max(wmax, w)
	}
	dtol := 1e-11 * wmax
	const ptol = 1e-11
	for r := range NumResources {
		k.basic[r] = -1 - r
		k.xb[r] = 1
		k.binv[r] = [NumResources]float64{}
		k.binv[r][r] = 1
	}
	var col [NumResources]float64
	limit := 20*(n+NumResources) + 50
	for k.iters = 0; k.iters < limit; k.iters++ {
		k.duals()
		// Entering variable: largest reduced cost in the improving direction.
		q, dir, best := -1, 0.0, dtol
		slackIn := false
		for j := range n {
			st := k.state[j]
			if st == isBasic {
				continue
			}
			a := &k.a[j]
			d := k.w[j] - (a[0]*k.y[0] + a[1]*k.y[1] + a[2]*k.y[2])
			if st == atLower && d > best {
				q, dir, best = j, 1, d
			} else if st == atUpper && -d > best {
				q, dir, best = j, -1, -d
			}
		}
		for r := range NumResources {
			if k.basic[0] != -1-r && k.basic[1] != -1-r && k.basic[2] != -1-r && -k.y[r] > best {
				q, dir, best, slackIn = r, 1, -k.y[r], true
			}
		}
		if q < 0 {
			break
		}
		tmax := math.Inf(1)
		if slackIn {
			for i := range NumResources {
				col[i] = k.binv[i][q]
			}
		} else {
			a := &k.a[q]
			for i := range NumResources {
				col[i] = k.binv[i][0]*a[0] + k.binv[i][1]*a[1] + k.binv[i][2]*a[2]
			}
			tmax = k.u[q]
		}
		leave, toUpper, lim := -1, false, tmax
		for i := range NumResources {
			d := dir * col[i]
			var l float64
			var up bool
			switch {
			case d > ptol:
				l = k.xb[i] / d
			case d < -ptol:
				if k.basic[i] < 0 {
					continue // slacks have no upper bound
				}
				l = (k.u[k.basic[i]] - k.xb[i]) / -d
				up = true
			default:
				continue
			}
			if l < lim {
				leave, toUpper, lim = i, up, max(l, 0)
			}
		}
		if leave < 0 {
			if math.IsInf(tmax, 1) {
				break // unbounded slack direction cannot happen with y >= 0 rows; stop
			}
			// Bound flip of the entering item.
			for i := range NumResources {
				k.xb[i] -= dir * tmax * col[i]
			}
			if dir > 0 {
				k.state[q] = atUpper
			} else {
				k.state[q] = atLower
			}
			continue
		}
		t := lim
		for i := range NumResources {
			k.xb[i] -= dir * t * col[i]
		}
		enterVal := t
		if dir < 0 {
			enterVal = k.u[q] - t
		}
		if out := k.basic[leave]; out >= 0 {
			if toUpper {
				k.state[out] = atUpper
			} else {
				k.state[out] = atLower
			}
		}
		k.xb[leave] = enterVal
		if slackIn {
			k.basic[leave] = -1 - q
		} else {
			k.basic[leave] = q
			k.state[q] = isBasic
		}
		p := col[leave]
		for c := range NumResources {
			k.binv[leave][c] /= p
		}
		for i := range NumResources {
			if i != leave && col[i] != 0 {
				f := col[i]
				for c := range NumResources {
					k.binv[i][c] -= f * k.binv[leave][c]
				}
			}
		}
	}
	for j := range n {
		switch k.state[j] {
		case atLower:
			k.x[j] = 0
		case atUpper:
			k.x[j] = k.u[j]
		}
	}
	for i, v := range k.basic {
		if v >= 0 {
			k.x[v] = min(max(k.xb[i], 0), k.u[v])
		}
	}
	for r := range NumResources {
		k.y[r] = max(k.y[r], 0)
	}
}

// duals sets y = c_B B^-1.
func (k *knap) duals() {
	k.y = [NumResources]float64{}
	for i, v := range k.basic {
		if v < 0 {
			continue
		}
		c := k.w[v]
		for r := range NumResources {
			k.y[r] += c * k.binv[i][r]
		}
	}
}

// neighbors calls emit with up to limit vertices adjacent to the optimum
// found by solve: each moves one nonbasic item off its bound (the ones whose
// move costs least first) as far as the basis allows. At near-optimal duals
// these are optimal or nearly optimal loads too, and the master needs many
// of them; the last argument of emit is the moved item, its new value and the
// basic values (x is left unchanged).
func (k *knap) neighbors(limit int, order []int, emit func(j int, xj float64, xb *[NumResources]float64)) {
	n := len(k.w)
	order = order[:0]
	for j := range n {
		if k.state[j] != isBasic {
			order = append(order, j)
		}
	}
	cost := func(j int) float64 {
		a := &k.a[j]
		d := k.w[j] - (a[0]*k.y[0] + a[1]*k.y[1] + a[2]*k.y[2])
		return math.Abs(d)
	}
	// Partial selection of the cheapest moves.
	if len(order) > limit {
		for i := range limit {
			best := i
			for j := i + 1; j < len(order); j++ {
				if cost(order[j]) < cost(order[best]) {
					best = j
				}
			}
			order[i], order[best] = order[best], order[i]
		}
		order = order[:limit]
	}
	var col [NumResources]float64
	for _, j := range order {
		dir := 1.0
		if k.state[j] == atUpper {
			dir = -1
		}
		a := &k.a[j]
		for i := range NumResources {
			col[i] = k.binv[i][0]*a[0] + k.binv[i][1]*a[1] + k.binv[i][2]*a[2]
		}
		t := k.u[j]
		for i := range NumResources {
			d := dir * col[i]
			switch {
			case d > 1e-11:
				t = min(t, max(k.xb[i], 0)/d)
			case d < -1e-11 && k.basic[i] >= 0:
				t = min(t, (k.u[k.basic[i]]-k.xb[i])/-d)
			}
		}
		if t <= 1e-9 {
			continue
		}
		var xb [NumResources]float64
		for i := range NumResources {
			xb[i] = k.xb[i] - dir*t*col[i]
		}
		xj := t
		if dir < 0 {
			xj = k.u[j] - t
		}
		emit(j, xj, &xb)
	}
}
