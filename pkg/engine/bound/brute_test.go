package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestBoundNeverExceedsBruteForceOptimum is the main validity check: on
// hundreds of seeded random small problems the bound is at most the integral
// optimum found by enumeration, at least the plain (unstrengthened) LP, and
// its tightness is reported.
func TestBoundNeverExceedsBruteForceOptimum(t *testing.T) {
	const instances = 1000
	rng := rand.New(rand.NewPCG(20240601, 7))
	var sumRatio, sumPlainRatio, worst float64
	var n, exact, notConverged int
	for i := range instances {
		maxPods := 8
		p := genSmall(rng, maxPods)
		name := fmt.Sprintf("instance %d", i)
		opt := bruteForceOptimum(&p)
		if math.IsInf(opt, 1) {
			t.Fatalf("%s: generator produced an infeasible problem: %+v", name, p)
		}
		res, err := Solve(&p)
		if err != nil {
			t.Fatalf("%s: Solve: %v\n%+v", name, err, p)
		}
		if res.LowerBound > opt+1e-9 {
			t.Fatalf("%s: LowerBound %.12g > optimum %.12g\nproblem: %+v\nresult: %+v", name, res.LowerBound, opt, p, res)
		}
		plain := plainLP(&p)
		if plain > opt+1e-6 {
			t.Fatalf("%s: reference plain LP %.12g > optimum %.12g: the oracles disagree", name, plain, opt)
		}
		if !res.Converged {
			notConverged++
		} else if res.LowerBound < plain*(1-1e-6)-1e-9 {
			t.Fatalf("%s: converged bound %.12g below the plain LP %.12g\nproblem: %+v\nresult: %+v", name, res.LowerBound, plain, p, res)
		}
		if res.LowerBound <= 0 {
			t.Fatalf("%s: bound %g not positive for a non-empty problem", name, res.LowerBound)
		}
		// The proof prices pods; zone and presence terms only add to it, so
		// the priced pods are worth at most the bound.
		var worth float64
		for gi, g := range p.Groups {
			if res.PodPrices[gi] < 0 {
				t.Fatalf("%s: negative pod price %g", name, res.PodPrices[gi])
			}
			worth += float64(g.Count) * res.PodPrices[gi]
		}
		if worth > res.LowerBound*(1+1e-6)+1e-12 {
			t.Fatalf("%s: pods priced at %.12g in all, above the bound %.12g", name, worth, res.LowerBound)
		}
		r := opt / res.LowerBound
		sumRatio += r
		sumPlainRatio += opt / plain
		worst = max(worst, r)
		if r < 1+1e-6 {
			exact++
		}
		n++
	}
	if notConverged > 0 {
		t.Errorf("%d of %d small instances did not converge", notConverged, n)
	}
	t.Logf("%d instances: mean optimum/bound %.4f (plain LP %.4f), worst %.4f, bound exact on %d",
		n, sumRatio/float64(n), sumPlainRatio/float64(n), worst, exact)
	// The strengthened bound must be clearly tighter than the plain LP on
	// average; these thresholds sit well below what it reaches.
	if sumRatio/float64(n) > 1.15 {
		t.Errorf("mean optimum/bound %.4f: bound got looser", sumRatio/float64(n))
	}
}

// TestExactWhenPodsDivideNodes: one group, one offering, pods that fill a
// whole number of nodes exactly, with random sizes. The optimum is
// (count/perNode) nodes, computed here by integer arithmetic; the bound must
// equal it.
func TestExactWhenPodsDivideNodes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 100 {
		perNode := 1 + rng.IntN(12)
		nodes := 1 + rng.IntN(20)
		cpu := float64(100 * (1 + rng.IntN(20)))
		mem := float64((1 + rng.IntN(8)) << 28)
		price := 0.01 + rng.Float64()
		// Allocatable is exactly perNode pods in cpu; memory and slots have
		// room to spare, except in every third case where memory binds.
		alloc := [3]float64{cpu * float64(perNode), mem * float64(perNode+1), 110}
		if i%3 == 0 {
			alloc = [3]float64{cpu * float64(perNode+2), mem * float64(perNode), 110}
		}
		p := Problem{
			Offerings: []Offering{{Price: price, Alloc: alloc}},
			Groups:    []Group{{Count: perNode * nodes, Request: [3]float64{cpu, mem, 1}, Allowed: []int{0}}},
		}
		want := float64(nodes) * price
		res, err := Solve(&p)
		if err != nil {
			t.Fatal(err)
		}
		if res.LowerBound > want*(1+1e-9) || res.LowerBound < want*(1-1e-6) {
			t.Fatalf("case %d: bound %.12g, want %.12g (perNode %d, nodes %d)", i, res.LowerBound, want, perNode, nodes)
		}
	}
}

// TestConvergesToLP: on larger random problems (too big to enumerate) the
// converged bound is never below the plain LP and never above the greedy
// one-pod-per-node plan.
func TestConvergesToLP(t *testing.T) {
	rng := rand.New(rand.NewPCG(99, 1))
	for i := range 30 {
		p := genMedium(rng)
		res, err := Solve(&p)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		plain := plainLP(&p)
		greedy := greedyPlanCost(&p)
		if !res.Converged {
			t.Fatalf("case %d: not converged: %+v", i, res)
		}
		if res.LowerBound < plain*(1-1e-6) {
			t.Fatalf("case %d: bound %.10g below plain LP %.10g; %+v", i, res.LowerBound, plain, res)
		}
		if res.LowerBound > greedy*(1+1e-9) {
			t.Fatalf("case %d: bound %.10g above a feasible plan %.10g", i, res.LowerBound, greedy)
		}
		if res.LPValue < res.Relaxation*(1-1e-9) {
			t.Fatalf("case %d: LPValue %.10g below LowerBound %.10g", i, res.LPValue, res.LowerBound)
		}
	}
}

// genMedium draws problems of 5-12 groups with up to 60 pods each and up to
// 12 offerings in 3 zones.
func genMedium(rng *rand.Rand) Problem {
	var p Problem
	no := 3 + rng.IntN(10)
	for range no {
		size := float64(1 + rng.IntN(16))
		shape := []float64{2, 4, 8}[rng.IntN(3)]
		alloc := [3]float64{size * 1000 * 0.95, size * shape * gib * 0.9, 10 + 5*size}
		price := size*(0.02+0.01*shape) + 0.01*rng.Float64()
		p.Offerings = append(p.Offerings, Offering{Price: price, Alloc: alloc, Zone: rng.IntN(3)})
	}
	ng := 5 + rng.IntN(8)
	for range ng {
		g := Group{Count: 1 + rng.IntN(60)}
		g.Request = [3]float64{float64(1+rng.IntN(15)) * 100, float64((1 + rng.IntN(16)) * 256 << 20), 1}
		for oi, o := range p.Offerings {
			if g.Request[0] <= o.Alloc[0] && g.Request[1] <= o.Alloc[1] && rng.IntN(5) != 0 {
				g.Allowed = append(g.Allowed, oi)
			}
		}
		if len(g.Allowed) == 0 {
			continue
		}
		if rng.IntN(3) == 0 {
			zs := map[int]bool{}
			for _, oi := range g.Allowed {
				zs[p.Offerings[oi].Zone] = true
			}
			g.MinPerZone = map[int]int{}
			for z := range 3 {
				if zs[z] {
					g.MinPerZone[z] = g.Count / 4
				}
			}
		}
		if rng.IntN(4) == 0 {
			g.DistinctNodes = rng.IntN(g.Count + 1)
		}
		p.Groups = append(p.Groups, g)
	}
	return p
}

// TestClusteredModeIsValid forces clustered mode (two clusters, and a row
// cap from tiny to unlimited) on the brute-force instances: its bound must
// stay below the optimum too, and below the exact mode's converged bound,
// since it relaxes the same LP further.
func TestClusteredModeIsValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 3))
	for i := range 600 {
		p := genSmall(rng, 8)
		opt := bruteForceOptimum(&p)
		tun := tuning{exactGroups: 0, exactRows: 0, clusters: 1 + i%3, clusteredRows: []int{3, 6, 1 << 30}[i%3]}
		res, err := solve(&p, Options{}, tun)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		if res.LowerBound > opt+1e-9 {
			t.Fatalf("instance %d (%+v): clustered bound %.12g > optimum %.12g\n%+v", i, tun, res.LowerBound, opt, p)
		}
		exact, err := Solve(&p)
		if err != nil {
			t.Fatal(err)
		}
		if exact.Converged && res.LowerBound > exact.LowerBound*(1+1e-6)+1e-12 {
			t.Fatalf("instance %d: clustered bound %.12g above the exact relaxation's %.12g", i, res.LowerBound, exact.LowerBound)
		}
	}
}
