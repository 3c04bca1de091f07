package bound

import (
	"errors"
	"math"
	"testing"
)

// decodeProblem turns fuzz bytes into a small problem: up to 6 offerings in
// up to 3 zones and up to 4 groups, each field read from the next byte (0
// once the bytes run out). Requests and allocatable are small integers so
// that most decoded problems are valid; some are not, on purpose.
func decodeProblem(data []byte) *Problem {
	i := 0
	next := func() int {
		if i >= len(data) {
			return 0
		}
		i++
		return int(data[i-1])
	}
	p := &Problem{}
	no := next() % 7
	for range no {
		p.Offerings = append(p.Offerings, Offering{
			Price: float64(next()) / 16,
			Alloc: [3]float64{float64(next()%16) * 250, float64(next() % 16), float64(next() % 8)},
			Zone:  next() % 3,
		})
	}
	ng := next() % 5
	for range ng {
		g := Group{
			Count:   next()%9 - 1, // -1 is invalid on purpose
			Request: [3]float64{float64(next()%8) * 250, float64(next() % 8), float64(next() % 2)},
		}
		mask := next()
		for o := range no {
			if mask&(1<<o) != 0 {
				g.Allowed = append(g.Allowed, o)
			}
		}
		if z := next(); z%4 != 3 {
			g.MinPerZone = map[int]int{z % 4: next() % 4}
		}
		g.DistinctNodes = next() % 5
		p.Groups = append(p.Groups, g)
	}
	return p
}

// FuzzSolve: Solve never panics; it either rejects the problem as invalid or
// returns a bound that is >= 0 and at most the cost of a simple feasible plan
// (every pod alone on the cheapest node it may use, zone minimums honoured).
func FuzzSolve(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{1, 16, 4, 4, 4, 0, 1, 3, 2, 2, 1, 1, 3, 1, 0})
	f.Add([]byte{3, 8, 8, 8, 4, 0, 16, 15, 15, 7, 1, 4, 4, 2, 2, 1, 7, 0, 2, 2, 4, 4, 3, 1, 7, 1, 1, 4})
	f.Add([]byte{2, 0, 8, 8, 4, 0, 32, 8, 8, 4, 2, 2, 8, 2, 2, 1, 3, 3, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := decodeProblem(data)
		res, err := Solve(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidProblem) {
				t.Fatalf("error %v does not wrap ErrInvalidProblem", err)
			}
			return
		}
		if !(res.LowerBound >= 0) || math.IsInf(res.LowerBound, 0) {
			t.Fatalf("bound %v", res.LowerBound)
		}
		if greedy := greedyPlanCost(p); res.LowerBound > greedy*(1+1e-9)+1e-12 {
			t.Fatalf("bound %.12g above the cost %.12g of a feasible plan for %+v", res.LowerBound, greedy, p)
		}
	})
}
