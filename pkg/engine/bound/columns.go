package bound

import "math"

// addColumn turns the primal solution left in s.kn for offering oi into a
// column, and adds up to s.neighbors adjacent vertices as well; only columns
// with negative reduced cost at the master's duals are kept. It reports
// whether the optimum itself was added.
func (s *solver) addColumn(oi int32) bool {
	k := &s.kn
	ok := s.addLoad(oi, true, func(j int) float64 { return k.x[j] })
	if !ok || s.neighbors == 0 {
		return ok
	}
	var basicItem [NumResources]int
	k.neighbors(s.neighbors, s.order, func(moved int, xm float64, xb *[NumResources]float64) {
		basicItem = k.basic
		s.addLoad(oi, true, func(j int) float64 {
			if j == moved {
				return xm
			}
			for i, v := range basicItem {
				if v == j {
					return min(max(xb[i], 0), k.u[j])
				}
			}
			return k.x[j]
		})
	})
	return ok
}

// addLoad builds the column of one node of offering oi loaded with x(item)
// pods for every pricing item in s.kn, and adds it if check is false or its
// reduced cost at the master's duals is negative.
func (s *solver) addLoad(oi int32, check bool, x func(j int) float64) bool {
	o := &s.pr.offers[oi]
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
	return s.addNode(oi, xg, check)
}

// addNode adds the column of one node of offering oi holding xg[j] pods of
// bucket group j, unless check is set and the column does not price out at
// the master's duals.
func (s *solver) addNode(oi int32, xg []float64, check bool) bool {
	o := &s.pr.offers[oi]
	bk := &s.pr.buckets[o.bucket]
	s.eRows, s.eVals = s.eRows[:0], s.eVals[:0]
	for _, c := range s.aggTouch {
		s.aggTmp[c] = [NumResources]float64{}
	}
	s.aggTouch = s.aggTouch[:0]
	for j, v := range xg {
		if v <= 1e-12 {
			continue
		}
		g := &s.pr.groups[bk.groups[j]]
		s.eRows = append(s.eRows, g.row)
		s.eVals = append(s.eVals, v)
		if zr := bk.zoneRow[j]; zr >= 0 {
			s.eRows = append(s.eRows, zr)
			s.eVals = append(s.eVals, v)
			if bk.czRow != nil {
				// Distinct groups of one cluster share the row: merge.
				s.addEntry(bk.czRow[j], v)
			}
		}
		if g.presRow >= 0 {
			s.eRows = append(s.eRows, g.presRow)
			s.eVals = append(s.eVals, min(v, 1))
		}
		c := s.cluster[bk.groups[j]]
		t := &s.aggTmp[c]
		if *t == ([NumResources]float64{}) {
			s.aggTouch = append(s.aggTouch, c)
		}
		for r := range NumResources {
			if s.aggRow[c][r] >= 0 {
				t[r] += v * g.req[r] / s.aggScale[c][r]
			}
		}
	}
	if len(s.eRows) == 0 {
		return false
	}
	for _, c := range s.aggTouch {
		for r := range NumResources {
			if a := s.aggTmp[c][r]; s.aggRow[c][r] >= 0 && a > 0 {
				s.eRows = append(s.eRows, s.aggRow[c][r])
				s.eVals = append(s.eVals, a)
			}
		}
	}
	if check {
		rc := o.price
		for i, r := range s.eRows {
			rc -= s.piRMP[r] * s.eVals[i]
		}
		if rc >= -1e-9*o.price {
			return false
		}
	}
	s.colCost = append(s.colCost, o.price)
	s.colRow = append(s.colRow, s.eRows...)
	s.colVal = append(s.colVal, s.eVals...)
	s.colStart = append(s.colStart, int32(len(s.colRow)))
	if s.rmp != nil {
		s.lRows, s.lVals = s.lRows[:0], s.lVals[:0]
		for i, r := range s.eRows {
			if l := s.local[r]; l >= 0 {
				s.lRows = append(s.lRows, l)
				s.lVals = append(s.lVals, s.eVals[i])
			}
		}
		s.rmp.addColumn(o.price, s.lRows, s.lVals)
	}
	return true
}

// addEntry adds v to the entry of row in the column being built.
func (s *solver) addEntry(row int32, v float64) {
	for i, r := range s.eRows {
		if r == row {
			s.eVals[i] += v
			return
		}
	}
	s.eRows = append(s.eRows, row)
	s.eVals = append(s.eVals, v)
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
	single := func(p pick, x float64) {
		if p.off < 0 {
			return
		}
		o := &pr.offers[p.off]
		xg := make([]float64, len(pr.buckets[o.bucket].groups))
		xg[p.j] = x
		s.addNode(p.off, xg, false)
	}
	// A row's dual never exceeds the cost of a column covering it with
	// coefficient 1 (all duals are >= 0 at the master's optimum), so twice
	// that cost is a safe artificial cost for the row.
	for gi := range pr.groups {
		g := &pr.groups[gi]
		c := 2*cheapest[gi].cost + 1e-9
		s.rowBig[g.row] = c
		if g.presRow >= 0 {
			s.rowBig[g.presRow] = c
		}
		for i, m := range g.mins {
			s.rowBig[m.row] = 2*zoneBest[gi][i].cost + 1e-9
		}
		for b := range pr.buckets {
			bk := &pr.buckets[b]
			if bk.czRow == nil {
				continue
			}
			for j, gj := range bk.groups {
				if int(gj) == gi && bk.czRow[j] >= 0 {
					for i, m := range g.mins {
						if m.zone == bk.zone {
							s.rowBig[bk.czRow[j]] = max(s.rowBig[bk.czRow[j]], 2*zoneBest[gi][i].cost+1e-9)
						}
					}
				}
			}
		}
		k := s.cluster[gi]
		for r := range NumResources {
			if ar := s.aggRow[k][r]; ar >= 0 && g.req[r] == s.aggScale[k][r] {
				s.rowBig[ar] = max(s.rowBig[ar], c)
			}
		}
	}
	for gi := range pr.groups {
		single(cheapest[gi], 1)
		for _, p := range zoneBest[gi] {
			single(p, 1)
		}
		if p := packed[gi]; p.off >= 0 {
			if m := pr.offers[p.off].caps[p.j]; m > 1 {
				single(p, m)
			}
		}
	}
}
