package bound

import "math"

// plainLP solves, with a textbook dense two-phase tableau simplex (Bland's
// rule), the relaxation exactly as the task states it, without any of the
// solver's strengthening:
//
//	min  sum_o p_o n_o
//	s.t. sum_o x_go >= C_g                          (demand)
//	     sum_{o in z} x_go >= M_gz                  (zone minimum)
//	     sum_g R_g[r] x_go <= A_o[r] n_o            (capacity)
//	     y_go <= x_go, y_go <= n_o, sum_o y_go >= k_g  (distinct nodes, k_g > 1)
//	     n, x, y >= 0
//
// It shares no code with the solver. The solver's bound must never be below
// this value (its relaxation is at least as tight), which checks that column
// generation really reaches the optimum of its LP.
func plainLP(p *Problem) float64 {
	type term struct {
		v int
		c float64
	}
	nv := 0
	newVar := func() int { nv++; return nv - 1 }
	nVar := make([]int, len(p.Offerings))
	for o := range p.Offerings {
		nVar[o] = newVar()
	}
	xVar := make([]map[int]int, len(p.Groups))
	yVar := make([]map[int]int, len(p.Groups))
	for gi, g := range p.Groups {
		xVar[gi], yVar[gi] = map[int]int{}, map[int]int{}
		for _, o := range g.Allowed {
			if _, ok := xVar[gi][o]; !ok {
				xVar[gi][o] = newVar()
				if g.DistinctNodes > 1 {
					yVar[gi][o] = newVar()
				}
			}
		}
	}
	type row struct {
		terms []term
		sense int // +1: >=, -1: <=
		rhs   float64
	}
	var rows []row
	for gi, g := range p.Groups {
		var t []term
		for _, v := range xVar[gi] {
			t = append(t, term{v, 1})
		}
		rows = append(rows, row{t, 1, float64(g.Count)})
		for z, m := range g.MinPerZone {
			var tz []term
			for o, v := range xVar[gi] {
				if p.Offerings[o].Zone == z {
					tz = append(tz, term{v, 1})
				}
			}
			rows = append(rows, row{tz, 1, float64(m)})
		}
		if g.DistinctNodes > 1 {
			var ty []term
			for o, v := range yVar[gi] {
				ty = append(ty, term{v, 1})
				rows = append(rows, row{[]term{{v, 1}, {xVar[gi][o], -1}}, -1, 0})
				rows = append(rows, row{[]term{{v, 1}, {nVar[o], -1}}, -1, 0})
			}
			rows = append(rows, row{ty, 1, float64(g.DistinctNodes)})
		}
	}
	for o, off := range p.Offerings {
		for r := range NumResources {
			t := []term{{nVar[o], -off.Alloc[r]}}
			for gi, g := range p.Groups {
				if v, ok := xVar[gi][o]; ok && g.Request[r] != 0 {
					t = append(t, term{v, g.Request[r]})
				}
			}
			rows = append(rows, row{t, -1, 0})
		}
	}
	// Standard form: one slack per row (+1 for <=, -1 for >=), one artificial
	// per row. Rows with rhs >= 0 throughout.
	m := len(rows)
	ns := nv + m
	na := m
	width := ns + na + 1
	tab := make([][]float64, m+1)
	basis := make([]int, m)
	for i, rw := range rows {
		tab[i] = make([]float64, width)
		// Scale the row so its largest coefficient is 1 (memory is in bytes).
		scale := 0.0
		for _, t := range rw.terms {
			scale = max(scale, math.Abs(t.c))
		}
		if scale == 0 {
			scale = 1
		}
		for _, t := range rw.terms {
			tab[i][t.v] += t.c / scale
		}
		rw.rhs /= scale
		if rw.sense > 0 {
			tab[i][nv+i] = -1
		} else {
			tab[i][nv+i] = 1
		}
		tab[i][width-1] = rw.rhs
		tab[i][ns+i] = 1
		basis[i] = ns + i
	}
	tab[m] = make([]float64, width)
	pivot := func(r, c int) {
		f := tab[r][c]
		for k := range tab[r] {
			tab[r][k] /= f
		}
		for i := range tab {
			if i != r && tab[i][c] != 0 {
				g := tab[i][c]
				for k := range tab[i] {
					tab[i][k] -= g * tab[r][k]
				}
			}
		}
		basis[r] = c
	}
	// Dantzig's rule, switching to Bland's rule (smallest index, which
	// cannot cycle) after a run of degenerate pivots.
	run := func(allowed int) {
		degenerate := 0
		for iter := 0; ; iter++ {
			if iter > 200000 {
				panic("plainLP: iteration limit")
			}
			bland := degenerate > 50
			c, bestD := -1, -1e-9
			for k := 0; k < allowed; k++ {
				if d := tab[m][k]; d < bestD {
					c, bestD = k, d
					if bland {
						break
					}
				}
			}
			if c < 0 {
				return
			}
			r, best := -1, math.Inf(1)
			for i := range m {
				if tab[i][c] > 1e-9 {
					q := tab[i][width-1] / tab[i][c]
					if q < best-1e-12 || (q <= best+1e-12 && r >= 0 && basis[i] < basis[r]) {
						r, best = i, q
					}
				}
			}
			if r < 0 {
				panic("plainLP: unbounded")
			}
			if best < 1e-12 {
				degenerate++
			} else {
				degenerate = 0
			}
			pivot(r, c)
		}
	}
	// Phase 1: minimize the sum of artificials.
	for i := range m {
		for k := range tab[i] {
			tab[m][k] -= tab[i][k]
		}
	}
	for i := range m {
		tab[m][ns+i] = 0
	}
	run(ns)
	if -tab[m][width-1] > 1e-6 {
		panic("plainLP: infeasible")
	}
	// Drive remaining (zero) artificials out where possible.
	for i := range m {
		if basis[i] >= ns {
			for c := 0; c < ns; c++ {
				if math.Abs(tab[i][c]) > 1e-9 {
					pivot(i, c)
					break
				}
			}
		}
	}
	// Phase 2: real costs, artificials barred.
	clear(tab[m])
	for o, off := range p.Offerings {
		tab[m][nVar[o]] = off.Price
	}
	for i := range m {
		if c := tab[m][basis[i]]; c != 0 {
			for k := range tab[m] {
				tab[m][k] -= c * tab[i][k]
			}
		}
	}
	run(ns)
	return -tab[m][width-1]
}
