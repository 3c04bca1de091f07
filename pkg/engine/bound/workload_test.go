package bound

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Workload generators for the benchmarks and the large-scale tests. They
// build problems the way the engine is expected to: one group per class of
// identical pods, not merged (Solve does the merging).

const mib = 1 << 20

// nodeOverhead approximates what a node keeps back: kube-reserved cpu (6% of
// the first core, 1% of the second, 0.5% of the next two, 0.25% above four),
// kube-reserved memory (255Mi + 11Mi per pod slot), a 100Mi eviction
// threshold, plus a small daemonset (100m, 128Mi, 2 pods).
func nodeOverhead(vcpu, maxPods float64) [3]float64 {
	var cpu float64
	for c := 1.0; c <= vcpu; c++ {
		switch {
		case c == 1:
			cpu += 60
		case c == 2:
			cpu += 10
		case c <= 4:
			cpu += 5
		default:
			cpu += 2.5
		}
	}
	mem := float64(255*mib) + 11*mib*maxPods + 100*mib
	return [3]float64{cpu + 100, mem + 128*mib, 2}
}

func allocOf(vcpu, memBytes, maxPods float64) [3]float64 {
	o := nodeOverhead(vcpu, maxPods)
	return [3]float64{vcpu*1000 - o[0], memBytes - o[1], maxPods - o[2]}
}

// referenceOfferings: benchmark.md's 400 synthetic types, type i with i+1
// vCPU, 2(i+1) GiB, 10(i+1) pods at 0.1/vCPU + 0.1/GB; spot in zones 0 and 1,
// on-demand in zones 0, 1 and 2, same price.
func referenceOfferings() []Offering {
	var offs []Offering
	for i := range 400 {
		vcpu := float64(i + 1)
		mem := 2 * vcpu * gib
		pods := 10 * vcpu
		price := 0.1*vcpu + 0.1*mem/1e9
		alloc := allocOf(vcpu, mem, pods)
		for _, z := range []int{0, 1} { // spot
			offs = append(offs, Offering{Price: price, Alloc: alloc, Zone: z})
		}
		for _, z := range []int{0, 1, 2} { // on-demand
			offs = append(offs, Offering{Price: price, Alloc: alloc, Zone: z})
		}
	}
	return offs
}

// ec2LikeOfferings: about 800 types in 6 zones, spot and on-demand. Three
// memory ratios (2, 4, 8 GiB per vCPU), 27 family variants each with its own
// price factor, ten sizes from 2 to 192 vCPU; spot prices differ per zone.
func ec2LikeOfferings(rng *rand.Rand) []Offering {
	sizes := []float64{2, 4, 8, 16, 32, 48, 64, 96, 128, 192}
	ratios := []float64{2, 4, 8}
	perVCPU := []float64{0.0425, 0.048, 0.063}
	var offs []Offering
	for ri, ratio := range ratios {
		for range 27 {
			factor := 0.85 + 0.4*rng.Float64()
			for _, vcpu := range sizes {
				mem := vcpu * ratio * gib
				maxPods := math.Min(737, math.Floor(vcpu*14.5+0.5))
				alloc := allocOf(vcpu, mem*0.925, maxPods) // 7.5% VM overhead
				od := perVCPU[ri] * vcpu * factor
				for z := range 6 {
					offs = append(offs, Offering{Price: od, Alloc: alloc, Zone: z})
					spot := od * (0.3 + 0.4*rng.Float64())
					offs = append(offs, Offering{Price: spot, Alloc: alloc, Zone: z})
				}
			}
		}
	}
	return offs
}

// referencePods builds benchmark.md's pod mix for n pods as groups over
// offs: five equal kinds (generic, zone spread, hostname spread, zone
// self-affinity, hostname anti-affinity), requests drawn from the
// benchmark's cpu x memory grid with seed 42.
func referencePods(n int, offs []Offering) []Group {
	rng := rand.New(rand.NewPCG(42, 42))
	cpus := []float64{100, 250, 500, 1000, 1500}
	mems := []float64{100 * mib, 256 * mib, 512 * mib, 1 * gib, 2 * gib, 4 * gib}
	nzones := 0
	for _, o := range offs {
		nzones = max(nzones, o.Zone+1)
	}
	all := make([]int, len(offs))
	for i := range all {
		all[i] = i
	}
	inZone := make([][]int, nzones)
	for i, o := range offs {
		inZone[o.Zone] = append(inZone[o.Zone], i)
	}
	type key struct {
		kind, c, m, label int
	}
	counts := map[key]int{}
	var order []key
	per := n / 5
	for kind := range 5 {
		cnt := per
		if kind == 0 {
			cnt = n - 4*per
		}
		for range cnt {
			k := key{kind: kind, c: rng.IntN(len(cpus)), m: rng.IntN(len(mems))}
			switch kind {
			case 1, 2, 3:
				k.label = rng.IntN(7)
			case 4:
				k.c, k.m = 2, 3 // one class: 500m, 1Gi
			}
			if counts[k] == 0 {
				order = append(order, k)
			}
			counts[k]++
		}
	}
	// Allowed lists hold the offerings one pod fits, as the engine filters
	// them; shared between groups with the same request and zone.
	type fitKey struct{ c, m, zone int }
	fitCache := map[fitKey][]int{}
	fitting := func(req [3]float64, fk fitKey) []int {
		if l, ok := fitCache[fk]; ok {
			return l
		}
		src := all
		if fk.zone >= 0 {
			src = inZone[fk.zone]
		}
		var l []int
		for _, i := range src {
			a := offs[i].Alloc
			if req[0] <= a[0] && req[1] <= a[1] && req[2] <= a[2] {
				l = append(l, i)
			}
		}
		fitCache[fk] = l
		return l
	}
	var groups []Group
	for _, k := range order {
		c := counts[k]
		req := [3]float64{cpus[k.c], mems[k.m], 1}
		g := Group{Count: c, Request: req, Allowed: fitting(req, fitKey{k.c, k.m, -1})}
		switch k.kind {
		case 1: // zone spread, maxSkew 1 over every zone
			g.MinPerZone = map[int]int{}
			for z := range nzones {
				g.MinPerZone[z] = c / nzones
			}
		case 2: // hostname spread, maxSkew 1: one pod per node
			g.DistinctNodes = c
		case 3: // zone self-affinity: all in the zone the engine picked
			g.Allowed = fitting(req, fitKey{k.c, k.m, k.label % nzones})
		case 4: // hostname anti-affinity
			g.DistinctNodes = c
		}
		groups = append(groups, g)
	}
	return groups
}

func referenceProblem(n int) *Problem {
	offs := referenceOfferings()
	return &Problem{Offerings: offs, Groups: referencePods(n, offs)}
}

func ec2LikeProblem(n int) *Problem {
	offs := ec2LikeOfferings(rand.New(rand.NewPCG(7, 7)))
	return &Problem{Offerings: offs, Groups: referencePods(n, offs)}
}

func describe(p *Problem) string {
	pods, allowed := 0, 0
	for _, g := range p.Groups {
		pods += g.Count
		allowed += len(g.Allowed)
	}
	return fmt.Sprintf("%d offerings, %d groups, %d pods, %d allowed pairs", len(p.Offerings), len(p.Groups), pods, allowed)
}

// distinctProblem: ng groups with random, mostly distinct requests (50m-4
// cpu, 64Mi-8Gi) on the EC2-like catalog; half of them spread over the 6
// zones (minimums of count/6 each), a quarter needing all-distinct nodes.
// Too many distinct groups for the exact mode: it exercises clustered mode.
func distinctProblem(ng int, seed uint64) *Problem {
	rng := rand.New(rand.NewPCG(seed, 1))
	offs := ec2LikeOfferings(rand.New(rand.NewPCG(7, 7)))
	p := &Problem{Offerings: offs}
	for range ng {
		req := [3]float64{float64(50 + rng.IntN(4000)), float64((64 + rng.IntN(8000)) << 20), 1}
		g := Group{Count: 1 + rng.IntN(200), Request: req}
		for i, o := range offs {
			if req[0] <= o.Alloc[0] && req[1] <= o.Alloc[1] {
				g.Allowed = append(g.Allowed, i)
			}
		}
		if rng.IntN(2) == 0 {
			g.MinPerZone = map[int]int{}
			for z := range 6 {
				g.MinPerZone[z] = g.Count / 6
			}
		}
		if rng.IntN(4) == 0 {
			g.DistinctNodes = g.Count
		}
		p.Groups = append(p.Groups, g)
	}
	return p
}
