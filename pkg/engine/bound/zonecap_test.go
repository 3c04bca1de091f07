package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// noZoneCaps is the default without the per-node caps from the zone
// minimums: the bound as it was before them.
func noZoneCaps() tuning {
	t := defaultTuning()
	t.zoneCaps = false
	return t
}

// TestZoneCapHandCase: two 3-cpu pods that a zone spread forces one into
// each of two zones, on 4-cpu nodes at 1 $/h or 8-cpu nodes at 1.5 $/h.
// Without the zone caps, half an 8-cpu node holding both pods in each zone
// meets both zone minimums (1.5 $/h); no plan puts two of them in one zone,
// so each node holds one pod and the optimum is two 4-cpu nodes, 2 $/h.
func TestZoneCapHandCase(t *testing.T) {
	var offs []Offering
	for z := range 2 {
		offs = append(offs,
			Offering{Price: 1, Alloc: [3]float64{4000, 16 * gib, 110}, Zone: z},
			Offering{Price: 1.5, Alloc: [3]float64{8000, 32 * gib, 110}, Zone: z})
	}
	p := Problem{Offerings: offs, Groups: []Group{{
		Count: 2, Request: [3]float64{3000, gib, 1}, Allowed: []int{0, 1, 2, 3}, MinPerZone: map[int]int{0: 1, 1: 1},
	}}}
	opt := bruteForceOptimum(&p)
	if math.Abs(opt-2) > 1e-9 {
		t.Fatalf("brute-force optimum %g, want 2", opt)
	}
	old, err := solve(&p, Options{}, noZoneCaps())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Solve(&p)
	if err != nil {
		t.Fatal(err)
	}
	if !(old.LowerBound < 1.9) {
		t.Errorf("without zone caps the bound is %.6g: the case no longer shows what they add", old.LowerBound)
	}
	if res.LowerBound > opt+1e-9 || res.LowerBound < opt*(1-1e-6) {
		t.Errorf("bound %.9g, want the optimum %g", res.LowerBound, opt)
	}
}

// TestZoneCapsNeverExceedBruteForceOptimum checks the zone caps against
// the brute-force optimum on 1,000 seeded small problems with zone
// minimums (a seed of their own): never above the optimum, and it reports
// on how many the caps tighten the bound.
func TestZoneCapsNeverExceedBruteForceOptimum(t *testing.T) {
	const instances = 1000
	rng := rand.New(rand.NewPCG(20261202, 18))
	beats, withMins := 0, 0
	var sumNew, sumOld float64
	for i := 0; withMins < instances; i++ {
		p := genSmall(rng, 8)
		mins := false
		for _, g := range p.Groups {
			mins = mins || len(g.MinPerZone) > 0
		}
		if !mins {
			continue
		}
		withMins++
		name := fmt.Sprintf("instance %d", i)
		opt, res, old := againstOptimum(t, name, &p, noZoneCaps(), "without zone caps")
		if res.LowerBound > old.LowerBound*(1+1e-6) {
			beats++
		}
		sumNew += opt / res.LowerBound
		sumOld += opt / old.LowerBound
	}
	t.Logf("%d instances with zone minimums: tighter on %d; mean optimum/bound %.4f (without zone caps %.4f)",
		instances, beats, sumNew/instances, sumOld/instances)
	if beats == 0 {
		t.Error("the zone caps never tightened the bound")
	}
}
