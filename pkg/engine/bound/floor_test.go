package bound

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFloorNeverExceedsBruteForceOptimum: on a thousand seeded small
// problems Floor is at most the integral optimum found by enumeration, and
// it is strictly above Solve's bound on some of them (else it adds nothing).
func TestFloorNeverExceedsBruteForceOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261201, 14))
	var above, exact, n int
	for i := range 1000 {
		p := genSmall(rng, 8)
		opt := bruteForceOptimum(&p)
		if math.IsInf(opt, 1) {
			t.Fatalf("instance %d: infeasible: %+v", i, p)
		}
		fl := Floor(&p)
		if fl > opt+1e-9 {
			t.Fatalf("instance %d: Floor %.12g > optimum %.12g\n%+v", i, fl, opt, p)
		}
		res, err := Solve(&p)
		if err != nil {
			t.Fatal(err)
		}
		if fl > res.LowerBound*(1+1e-6) {
			above++
		}
		if math.Max(fl, res.LowerBound) >= opt*(1-1e-6) {
			exact++
		}
		n++
	}
	t.Logf("%d instances: Floor above Solve's bound on %d; max(Floor, bound) exact on %d", n, above, exact)
	if above == 0 {
		t.Errorf("Floor never beat Solve's bound")
	}
}

// TestFloorWholeNodes: pods that cannot fill a node's allocatable. 41 pods
// (9 of 750m, 32 of 500m: 22.75 cpu) on nodes of 7.74 cpu, which hold at
// most 7.5 of them: 3 nodes hold 22.5 < 22.75, so 4 are needed, where the
// relaxation pays 22.75/7.74 = 2.94. With a small node (1 cpu) on offer, 3
// big ones and a small one are the optimum.
func TestFloorWholeNodes(t *testing.T) {
	big := Offering{Price: 1, Alloc: [3]float64{7740, 64, 58}}
	small := Offering{Price: 0.2, Alloc: [3]float64{1000, 64, 58}}
	for _, tc := range []struct {
		offs []Offering
		want float64
	}{
		{[]Offering{big}, 4},
		{[]Offering{big, small}, 3.2},
	} {
		p := Problem{Offerings: tc.offs}
		all := []int{}
		for i := range tc.offs {
			all = append(all, i)
		}
		p.Groups = []Group{
			{Count: 9, Request: [3]float64{750, 1, 1}, Allowed: all},
			{Count: 32, Request: [3]float64{500, 1, 1}, Allowed: all},
		}
		got := Floor(&p)
		if math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%d offerings: Floor %.9g, want %.9g", len(tc.offs), got, tc.want)
		}
		res, err := solve(&p, Options{}, oldTuning())
		if err != nil {
			t.Fatal(err)
		}
		if res.LowerBound >= tc.want-1e-6 {
			t.Errorf("%d offerings: the fractional bound %.9g already reaches %.9g: the case does not show Floor", len(tc.offs), res.LowerBound, tc.want)
		}
		// Integral pricing and the whole-node covering see it too.
		if res, err = Solve(&p); err != nil || res.LowerBound < tc.want-1e-6 || res.LowerBound > tc.want+1e-9 {
			t.Errorf("%d offerings: Solve's bound %.9g (%v), want %.9g", len(tc.offs), res.LowerBound, err, tc.want)
		}
	}
}

// TestFloorZonal: 3 pods of 600m forced into each of 3 zones, on nodes of
// 1 cpu: 3 nodes per zone, 9 in all, where the relaxation's 5.4 nodes.
func TestFloorZonal(t *testing.T) {
	var p Problem
	var all []int
	for z := range 3 {
		p.Offerings = append(p.Offerings, Offering{Price: 1, Alloc: [3]float64{1000, 8, 10}, Zone: z})
		all = append(all, z)
	}
	p.Groups = []Group{{Count: 9, Request: [3]float64{600, 1, 1}, Allowed: all, MinPerZone: map[int]int{0: 3, 1: 3, 2: 3}}}
	if got := Floor(&p); math.Abs(got-9) > 1e-6 {
		t.Errorf("Floor %.9g, want 9", got)
	}
	// Without the zone minimums the global covering still needs 9 nodes
	// (one 600m pod per node); with 400m pods it needs ceil(9/2) = 5.
	p.Groups[0].Request[0] = 400
	p.Groups[0].MinPerZone = nil
	if got := Floor(&p); math.Abs(got-5) > 1e-6 {
		t.Errorf("400m pods, no zones: Floor %.9g, want 5", got)
	}
}

func TestFloorInvalidOrEmpty(t *testing.T) {
	for i, p := range []Problem{
		{},
		{Offerings: []Offering{{Price: 1, Alloc: [3]float64{1, 1, 1}}}, Groups: []Group{{Count: 1, Request: [3]float64{2, 1, 1}, Allowed: []int{0}}}},
		{Offerings: []Offering{{Price: 1, Alloc: [3]float64{1, 1, 1}}}, Groups: []Group{{Count: 1, Request: [3]float64{1, 1, 1}, Allowed: []int{3}}}},
	} {
		if got := Floor(&p); got != 0 {
			t.Errorf("case %d: Floor %g, want 0", i, got)
		}
	}
}
