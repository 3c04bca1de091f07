package engine

import (
	"cmp"
	"math"
	"slices"
)

// Resource prices. For each pool the engine solves the fractional problem
// "buy cpu and memory for the pool's pending demand from its instance types
// at their cheapest prices" in its dual form: prices λ (per millicore and
// per byte) as high as possible while no type is worth more than it costs
// (λ·allocatable ≤ price). A pod is then worth λ·request: what the pool's
// cheapest mix of types pays for its resources. A node of a type on that
// mix, filled full, is worth its price; any other type, or a full node of a
// lopsided mix, is worth less. Targets and fills are judged by that worth.

// computeLambdas sets each pool's resource prices from its pending demand.
// Each zone gets its own prices too (the types at their prices in that
// zone), for claims pinned to one zone: spot prices differ by zone, so the
// cheapest mix does.
func (s *solver) computeLambdas() {
	s.lambda = make([][2]float64, len(s.pools))
	s.lambdaZ = make([][][2]float64, len(s.pools))
	for _, p := range s.pools {
		s.lambda[p.idx] = poolLambda(p, s.demand[p.idx], func(t *ctype) float64 { return t.minPrice })
		s.lambdaZ[p.idx] = make([][2]float64, len(s.zones))
		for z := range s.zones {
			zm := zmask(1) << uint(z)
			s.lambdaZ[p.idx][z] = poolLambda(p, s.demand[p.idx], func(t *ctype) float64 { return t.priceIn(zm, p.cts) })
		}
	}
}

type rpoint struct{ x, y float64 } // cpu and memory per dollar

// poolLambda solves the two-resource dual over the pool's types.
func poolLambda(p *cpool, d rvec, price func(*ctype) float64) [2]float64 {
	dc, dm := float64(max(d[rCPU], 0)), float64(max(d[rMem], 0))
	if dc == 0 && dm == 0 {
		return [2]float64{}
	}
	pts := make([]rpoint, 0, len(p.types))
	for _, t := range p.types {
		pr := price(t)
		if !(pr > 0) || math.IsInf(pr, 1) || t.alloc[rCPU] <= 0 || t.alloc[rMem] <= 0 {
			continue
		}
		pts = append(pts, rpoint{float64(t.alloc[rCPU]) / pr, float64(t.alloc[rMem]) / pr})
	}
	if len(pts) == 0 {
		return [2]float64{}
	}
	// Upper hull by x (monotone chain): the types on it are the only ones a
	// cheapest mix uses.
	slices.SortFunc(pts, func(a, b rpoint) int {
		if c := cmp.Compare(a.x, b.x); c != 0 {
			return c
		}
		return cmp.Compare(a.y, b.y)
	})
	var hull []rpoint
	for _, q := range pts {
		for len(hull) >= 2 {
			a, b := hull[len(hull)-2], hull[len(hull)-1]
			if (b.x-a.x)*(q.y-a.y)-(b.y-a.y)*(q.x-a.x) >= 0 {
				hull = hull[:len(hull)-1]
				continue
			}
			break
		}
		hull = append(hull, q)
	}
	feasible := func(l [2]float64) bool {
		if l[0] < 0 || l[1] < 0 {
			return false
		}
		for _, q := range pts {
			if l[0]*q.x+l[1]*q.y > 1+1e-9 {
				return false
			}
		}
		return true
	}
	best, bestObj := [2]float64{}, -1.0
	try := func(l [2]float64) {
		if !feasible(l) {
			return
		}
		if obj := l[0]*dc + l[1]*dm; obj > bestObj {
			best, bestObj = l, obj
		}
	}
	xmax, ymax := 0.0, 0.0
	for _, q := range pts {
		xmax = math.Max(xmax, q.x)
		ymax = math.Max(ymax, q.y)
	}
	try([2]float64{1 / xmax, 0})
	try([2]float64{0, 1 / ymax})
	for i := 0; i+1 < len(hull); i++ {
		a, b := hull[i], hull[i+1]
		det := a.x*b.y - a.y*b.x
		if det == 0 {
			continue
		}
		// λ·a = 1 and λ·b = 1.
		try([2]float64{(b.y - a.y) / det, (a.x - b.x) / det})
	}
	// λ is per unit of allocatable (millicores, bytes) per dollar's worth:
	// λ·a_t ≤ price_t becomes (λ/price)... the points were a_t/price_t, so
	// λ·(a_t/price_t) ≤ 1 means λ·a_t ≤ price_t: λ is in $ per unit.
	return best
}

// lambdaValue is a pod's worth in its pool at the pool's resource prices.
// With one zone in zones, the zone's prices.
func (s *solver) lambdaValue(req rvec, p *cpool, zones zmask) float64 {
	l := s.lambda[p.idx]
	if z, ok := zones.only(); ok && s.lambdaZ != nil && z < len(s.lambdaZ[p.idx]) {
		l = s.lambdaZ[p.idx][z]
	}
	return l[0]*float64(req[rCPU]) + l[1]*float64(req[rMem])
}
