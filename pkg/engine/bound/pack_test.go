package bound

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPackNeverExceedsBruteForceOptimum: on 1,500 seeded small problems the
// exact packing bound (and Floor with it) is at most the integral optimum
// found by enumeration; it counts how often max(Floor, Solve's bound)
// becomes exact with the packing, against without it.
func TestPackNeverExceedsBruteForceOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261201, 15))
	var n, exactBefore, exactAfter, raised, packExact int
	for i := range 1500 {
		p := genSmall(rng, 8)
		opt := bruteForceOptimum(&p)
		if math.IsInf(opt, 1) {
			t.Fatalf("instance %d: infeasible: %+v", i, p)
		}
		res, err := Solve(&p)
		if err != nil {
			t.Fatal(err)
		}
		before := math.Max(res.LowerBound, floorWith(&p, floorOff{pack: true}))
		fl := Floor(&p)
		pk := packOnly(&p)
		if pk > opt*(1+1e-9)+1e-12 || fl > opt*(1+1e-9)+1e-12 {
			t.Fatalf("instance %d: packing %.12g, Floor %.12g > optimum %.12g\n%+v", i, pk, fl, opt, p)
		}
		after := math.Max(res.LowerBound, fl)
		if after < before*(1-1e-12) {
			t.Fatalf("instance %d: Floor with packing %.12g below without %.12g", i, after, before)
		}
		if before >= opt*(1-1e-6) {
			exactBefore++
		}
		if after >= opt*(1-1e-6) {
			exactAfter++
		}
		if after > before*(1+1e-6) {
			raised++
		}
		if pk >= opt*(1-1e-6) {
			packExact++
		}
		n++
	}
	t.Logf("%d instances: exact before %d, after %d; raised on %d; the packing alone exact on %d", n, exactBefore, exactAfter, raised, packExact)
	if raised == 0 {
		t.Errorf("the packing never raised the bound")
	}
}

// packOnly is the packing bound alone (with Floor's offering reduction).
func packOnly(p *Problem) float64 { return packOnlyWith(p, floorOff{}) }

// packOnlyWith is packOnly with parts of it turned off.
func packOnlyWith(p *Problem, off floorOff) float64 {
	if Validate(p) != nil {
		return 0
	}
	f := newFloorer(p)
	f.off = off
	f.reduceOfferings()
	return f.packMerged()
}

// TestPackJointZones: pods A (500m, 1 unit) and B (100m, 5 units) on
// nodes of 1 cpu and 10 units: a node holds a A and b B with
// 500a+100b <= 1000 and a+5b <= 10, so a+b <= 2, while each resource alone
// (and both jointly, as capacities) lets 3 nodes hold 4 A and 4 B (2.4 cpu,
// 24 units). So the packing is 4 nodes; with 2 A and 2 B forced into each
// of 2 zones, 2 per zone, 4 again.
func TestPackJointZones(t *testing.T) {
	var p Problem
	var all []int
	for z := range 2 {
		p.Offerings = append(p.Offerings, Offering{Price: 1, Alloc: [3]float64{1000, 10, 110}, Zone: z})
		all = append(all, z)
	}
	p.Groups = []Group{
		{Count: 4, Request: [3]float64{500, 1, 1}, Allowed: all},
		{Count: 4, Request: [3]float64{100, 5, 1}, Allowed: all},
	}
	if got := packOnly(&p); math.Abs(got-4) > 1e-9 {
		t.Errorf("no zones: packing %.9g, want 4", got)
	}
	p.Groups[0].MinPerZone = map[int]int{0: 2, 1: 2}
	p.Groups[1].MinPerZone = map[int]int{0: 2, 1: 2}
	p.Offerings[1].Price = 2 // zone 1 dearer: the global packing would take zone 0 only
	if got := packOnly(&p); math.Abs(got-6) > 1e-9 {
		t.Errorf("zones: packing %.9g, want 6 (2 nodes in each zone)", got)
	}
	if got := Floor(&p); math.Abs(got-6) > 1e-6 {
		t.Errorf("Floor %.9g, want 6", got)
	}
}

// TestPackCaps: a part past the state cap contributes nothing (0, not a
// partial search's number).
func TestPackCaps(t *testing.T) {
	p := Problem{Offerings: []Offering{{Price: 1, Alloc: [3]float64{4000, 64, 110}}}}
	for i := range 9 {
		p.Groups = append(p.Groups, Group{Count: 3, Request: [3]float64{500 + float64(i), 1, 1}, Allowed: []int{0}})
	}
	if got := packOnly(&p); got != 0 {
		t.Errorf("9 groups: packing %g, want 0 (skipped)", got)
	}
	p.Groups = p.Groups[:2]
	p.Groups[0].Count, p.Groups[1].Count = 3, 4 // 7 pods of 500-501m: 1 node
	if got := packOnly(&p); math.Abs(got-1) > 1e-9 {
		t.Errorf("2 groups: packing %g, want 1", got)
	}
}

// TestPackMergeAndPruneExact: on seeded small problems with one group
// (without pods that must be apart) split into two identical ones, its
// pods and zone minimums shared out, the enumerated optimum is that of the
// unsplit problem (the relabelling argument of mergeIdentical), and the
// packing with identical groups merged is at most it and equals the
// packing of the unsplit problem; on every problem, split or not, the
// pruned search equals the unpruned one (pruning skips only branches that
// cannot win).
func TestPackMergeAndPruneExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261201, 16))
	var n, merged, exact int
	for i := range 1500 {
		p := genSmall(rng, 8)
		gi := rng.IntN(len(p.Groups))
		g := p.Groups[gi]
		if g.Count < 2 || g.DistinctNodes >= 2 {
			continue
		}
		a := 1 + rng.IntN(g.Count-1)
		h := Group{Count: g.Count - a, Request: g.Request, Allowed: slices.Clone(g.Allowed)}
		g.Count = a
		if len(g.MinPerZone) > 0 {
			g.MinPerZone, h.MinPerZone = map[int]int{}, map[int]int{}
			for z, m := range p.Groups[gi].MinPerZone {
				k := min(m, a)
				if m-k > h.Count {
					k = m - h.Count
				}
				g.MinPerZone[z], h.MinPerZone[z] = k, m-k
			}
		}
		split := Problem{Offerings: p.Offerings, Groups: append(slices.Clone(p.Groups), h)}
		split.Groups[gi] = g
		if Validate(&split) != nil {
			continue
		}
		opt := bruteForceOptimum(&split)
		if o := bruteForceOptimum(&p); math.Abs(o-opt) > 1e-9*math.Max(1, o) {
			t.Fatalf("instance %d: split optimum %.12g, unsplit %.12g\n%+v", i, opt, o, split)
		}
		whole := packOnly(&p)
		got := packOnly(&split)
		if got > opt*(1+1e-9)+1e-12 {
			t.Fatalf("instance %d: merged packing %.12g > optimum %.12g\n%+v", i, got, opt, split)
		}
		if math.Abs(got-whole) > 1e-9*math.Max(1, whole) {
			t.Fatalf("instance %d: merged packing %.12g, unsplit %.12g\n%+v", i, got, whole, split)
		}
		unmerged := packOnlyWith(&split, floorOff{merge: true})
		if unmerged > opt*(1+1e-9)+1e-12 {
			t.Fatalf("instance %d: unmerged packing %.12g > optimum %.12g", i, unmerged, opt)
		}
		if got > unmerged*(1+1e-9) {
			merged++
		}
		for _, q := range []*Problem{&p, &split} {
			pruned := packOnly(q)
			full := packOnlyWith(q, floorOff{prune: true})
			if math.Abs(pruned-full) > 1e-9*math.Max(1, full) {
				t.Fatalf("instance %d: pruned packing %.12g, unpruned %.12g\n%+v", i, pruned, full, *q)
			}
		}
		if got >= opt*(1-1e-6) {
			exact++
		}
		n++
	}
	t.Logf("%d split instances: merged packing exact on %d, above the unmerged one (capped) on %d", n, exact, merged)
	if n < 500 {
		t.Errorf("only %d instances", n)
	}
}
