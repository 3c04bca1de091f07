package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// oldTuning is the default without the integral phase and the whole-node
// covering: the bound as it was before them.
// againstOptimum solves p with the default tuning and with other, and
// fails the test when it is infeasible or the default bound exceeds the
// brute-force optimum (what "other" lacks names it in the message).
func againstOptimum(t *testing.T, name string, p *Problem, other tuning, without string) (float64, Result, Result) {
	t.Helper()
	opt := bruteForceOptimum(p)
	if math.IsInf(opt, 1) {
		t.Fatalf("%s: infeasible: %+v", name, *p)
	}
	res, err := Solve(p)
	if err != nil {
		t.Fatal(err)
	}
	old, err := solve(p, Options{}, other)
	if err != nil {
		t.Fatal(err)
	}
	if res.LowerBound > opt+1e-9 {
		t.Fatalf("%s: bound %.12g > optimum %.12g (%s %.12g)\n%+v", name, res.LowerBound, opt, without, old.LowerBound, *p)
	}
	return opt, res, old
}

func oldTuning() tuning {
	t := defaultTuning()
	t.integral, t.cover = false, false
	return t
}

// TestIntegralBoundNeverExceedsBruteForceOptimum checks integral pricing
// and the whole-node covering against the brute-force optimum on 1,200
// seeded small problems (a seed of its own, not the main test's): never
// above the optimum, never below the bound without them, and it reports
// on how many it is tighter and on how many exact.
func TestIntegralBoundNeverExceedsBruteForceOptimum(t *testing.T) {
	const instances = 1200
	rng := rand.New(rand.NewPCG(20261201, 15))
	var beats, exactNew, exactOld int
	var sumNew, sumOld float64
	for i := range instances {
		p := genSmall(rng, 8)
		name := fmt.Sprintf("instance %d", i)
		opt, res, old := againstOptimum(t, name, &p, oldTuning(), "without the integral parts")
		if res.LowerBound < old.LowerBound*(1-1e-9) {
			t.Fatalf("%s: bound %.12g below the one without the integral parts %.12g", name, res.LowerBound, old.LowerBound)
		}
		if !res.Converged {
			t.Errorf("%s: not converged", name)
		}
		if res.LPValue < res.Relaxation*(1-1e-9) {
			t.Fatalf("%s: LPValue %.12g below the relaxation's bound %.12g", name, res.LPValue, res.Relaxation)
		}
		if res.LowerBound > old.LowerBound*(1+1e-6) {
			beats++
		}
		if opt <= res.LowerBound*(1+1e-6) {
			exactNew++
		}
		if opt <= old.LowerBound*(1+1e-6) {
			exactOld++
		}
		sumNew += opt / res.LowerBound
		sumOld += opt / old.LowerBound
	}
	t.Logf("%d instances: tighter on %d; exact on %d (before: %d); mean optimum/bound %.4f (before %.4f)",
		instances, beats, exactNew, exactOld, sumNew/instances, sumOld/instances)
	if beats == 0 {
		t.Error("the integral parts never tightened the bound")
	}
}

// TestIntegralHandCases: whole pods and whole nodes the fractional
// relaxation misses.
func TestIntegralHandCases(t *testing.T) {
	tests := []struct {
		name string
		p    Problem
		want float64 // the optimum
	}{
		{
			// Two 1.5-cpu/1-GiB pods and one 1-cpu/3-GiB pod on 4-cpu/4-GiB
			// nodes: cpu and memory fit in one node only fractionally
			// (4 cpu, 5 GiB): two nodes.
			name: "cpu and memory jointly",
			p: Problem{
				Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 4 * gib, 110}}},
				Groups: []Group{
					{Count: 2, Request: [3]float64{1500, gib, 1}, Allowed: []int{0}},
					{Count: 1, Request: [3]float64{1000, 3 * gib, 1}, Allowed: []int{0}},
				},
			},
			want: 2,
		},
		{
			// Three 700m pods on 2-cpu nodes at 1 $/h, or a 4-cpu node at
			// 1.9 $/h: whole pods make the 2-cpu node hold two (1.4 of 2
			// cpu), so two small nodes or one big one; the optimum is 1.9.
			name: "whole pods per node",
			p: Problem{
				Offerings: []Offering{{Price: 1, Alloc: [3]float64{2000, 8 * gib, 110}}, {Price: 1.9, Alloc: [3]float64{4000, 16 * gib, 110}}},
				Groups:    []Group{{Count: 3, Request: [3]float64{700, gib, 1}, Allowed: []int{0, 1}}},
			},
			want: 1.9,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if opt := bruteForceOptimum(&tc.p); math.Abs(opt-tc.want) > 1e-9 {
				t.Fatalf("brute force says %.12g, the case says %.12g", opt, tc.want)
			}
			res, err := Solve(&tc.p)
			if err != nil {
				t.Fatal(err)
			}
			old, _ := solve(&tc.p, Options{}, oldTuning())
			if res.LowerBound > tc.want*(1+1e-9) {
				t.Fatalf("bound %.12g above the optimum %.12g", res.LowerBound, tc.want)
			}
			if res.LowerBound < tc.want*(1-1e-6) {
				t.Fatalf("bound %.12g, want the optimum %.12g (without the integral parts: %.12g)", res.LowerBound, tc.want, old.LowerBound)
			}
			if old.LowerBound >= tc.want*(1-1e-6) {
				t.Fatalf("the fractional bound %.12g is exact already: the case tests nothing", old.LowerBound)
			}
		})
	}
}

// TestJointFloorNeverExceedsBruteForceOptimum: Floor with the joint
// cpu-and-memory covering stays below the brute-force optimum on 1,000
// seeded small problems, never below Floor without it, and it reports how
// often the joint covering raised it.
func TestJointFloorNeverExceedsBruteForceOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261201, 16))
	// The exact packing (pack_test.go) would hide the covering: off here.
	raised := 0
	for i := range 1000 {
		p := genSmall(rng, 8)
		opt := bruteForceOptimum(&p)
		before := floorWith(&p, floorOff{pack: true, joint: true})
		fl := floorWith(&p, floorOff{pack: true})
		if fl > opt+1e-9 {
			t.Fatalf("instance %d: Floor %.12g > optimum %.12g\n%+v", i, fl, opt, p)
		}
		if fl < before {
			t.Fatalf("instance %d: Floor %.12g below %.12g without the joint covering", i, fl, before)
		}
		if fl > before*(1+1e-6) {
			raised++
		}
	}
	t.Logf("1000 instances: the joint covering raised Floor on %d", raised)
	if raised == 0 {
		t.Error("the joint covering never raised Floor")
	}
}

// TestJointFloorHandCase: 19 pods of 450m and 2 memory units (8.55 cpu,
// 38 units) on nodes of 2 cpu and 16 units ($1) or 8 cpu and 16 units
// ($2). Cpu alone is covered by a big node and a small one ($3), memory
// alone by three small ones ($3); both at once need a big node and two
// small ones ($4). (The optimum is $5: a node holds at most 4 or 8 whole
// pods.)
func TestJointFloorHandCase(t *testing.T) {
	p := Problem{
		Offerings: []Offering{{Price: 1, Alloc: [3]float64{2000, 16, 110}}, {Price: 2, Alloc: [3]float64{8000, 16, 110}}},
		Groups:    []Group{{Count: 19, Request: [3]float64{450, 2, 1}, Allowed: []int{0, 1}}},
	}
	// The exact packing (pack_test.go) would hide the covering: off here.
	before := floorWith(&p, floorOff{pack: true, joint: true})
	got := floorWith(&p, floorOff{pack: true})
	if exact := Floor(&p); math.Abs(exact-5) > 1e-6 {
		t.Errorf("Floor with the exact packing %.9g, want the optimum 5", exact)
	}
	if math.Abs(got-4) > 1e-6 {
		t.Fatalf("Floor %.9g, want 4 (without the joint covering %.9g)", got, before)
	}
	if before >= 4-1e-6 {
		t.Fatalf("Floor without the joint covering is %.9g already: the case tests nothing", before)
	}
	if res, err := Solve(&p); err != nil || res.LowerBound > 5+1e-9 {
		t.Fatalf("Solve %.9g (%v) above the optimum 5", res.LowerBound, err)
	}
}
