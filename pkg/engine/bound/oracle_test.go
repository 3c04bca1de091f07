package bound

import (
	"math"
	"math/rand/v2"
	"slices"
)

// This file holds test oracles written without reference to the solver:
// a brute-force integral optimum, a greedy feasible plan, and a random
// instance generator.

// bruteForceOptimum enumerates every partition of the pods into nodes. Each
// node (block) gets, per zone, the cheapest offering that every pod of the
// block may use and that fits their summed requests; then a zone is picked
// per block so that every zone minimum is met, and a partition is kept only
// if every group with DistinctNodes k sits on at least k blocks. It returns
// +Inf if no plan exists.
func bruteForceOptimum(p *Problem) float64 {
	var pods []int
	for gi, g := range p.Groups {
		for range g.Count {
			pods = append(pods, gi)
		}
	}
	zones := map[int]bool{}
	for _, o := range p.Offerings {
		zones[o.Zone] = true
	}
	var zoneList []int
	for z := range zones {
		zoneList = append(zoneList, z)
	}
	slices.Sort(zoneList)
	allowed := make([]map[int]bool, len(p.Groups))
	for gi, g := range p.Groups {
		allowed[gi] = map[int]bool{}
		for _, o := range g.Allowed {
			allowed[gi][o] = true
		}
	}
	best := math.Inf(1)
	assign := make([]int, len(pods))
	var rec func(i, nblocks int)
	rec = func(i, nblocks int) {
		if i == len(pods) {
			if c := evalPartition(p, pods, assign, nblocks, zoneList, allowed); c < best {
				best = c
			}
			return
		}
		for b := 0; b <= nblocks; b++ {
			assign[i] = b
			nb := nblocks
			if b == nblocks {
				nb++
			}
			rec(i+1, nb)
		}
	}
	rec(0, 0)
	return best
}

func evalPartition(p *Problem, pods, assign []int, nblocks int, zoneList []int, allowed []map[int]bool) float64 {
	ng := len(p.Groups)
	// counts[b][g] = pods of group g on block b.
	counts := make([][]int, nblocks)
	for b := range counts {
		counts[b] = make([]int, ng)
	}
	for i, g := range pods {
		counts[assign[i]][g]++
	}
	for gi, g := range p.Groups {
		hosts := 0
		for b := range counts {
			if counts[b][gi] > 0 {
				hosts++
			}
		}
		if hosts < g.DistinctNodes {
			return math.Inf(1)
		}
	}
	// cost[b][zi]: cheapest offering in zone zoneList[zi] that can host block b.
	cost := make([][]float64, nblocks)
	for b := range cost {
		cost[b] = make([]float64, len(zoneList))
		var sum [NumResources]float64
		for gi, n := range counts[b] {
			for r := range NumResources {
				sum[r] += float64(n) * p.Groups[gi].Request[r]
			}
		}
		anyZone := false
		for zi, z := range zoneList {
			cost[b][zi] = math.Inf(1)
			for oi, o := range p.Offerings {
				if o.Zone != z || o.Price >= cost[b][zi] {
					continue
				}
				ok := sum[0] <= o.Alloc[0] && sum[1] <= o.Alloc[1] && sum[2] <= o.Alloc[2]
				for gi, n := range counts[b] {
					if n > 0 && !allowed[gi][oi] {
						ok = false
					}
				}
				if ok {
					cost[b][zi] = o.Price
					anyZone = true
				}
			}
		}
		if !anyZone {
			return math.Inf(1)
		}
	}
	hasMins := false
	for _, g := range p.Groups {
		for _, n := range g.MinPerZone {
			if n > 0 {
				hasMins = true
			}
		}
	}
	if !hasMins {
		var total float64
		for b := range cost {
			total += slices.Min(cost[b])
		}
		return total
	}
	// Pick a zone per block, depth first with cost pruning.
	best := math.Inf(1)
	inZone := make([][]int, ng) // inZone[g][zi]
	for gi := range inZone {
		inZone[gi] = make([]int, len(zoneList))
	}
	var rec func(b int, acc float64)
	rec = func(b int, acc float64) {
		if acc >= best {
			return
		}
		if b == nblocks {
			for gi, g := range p.Groups {
				for zi, z := range zoneList {
					if inZone[gi][zi] < g.MinPerZone[z] {
						return
					}
				}
			}
			best = acc
			return
		}
		for zi := range zoneList {
			if math.IsInf(cost[b][zi], 1) {
				continue
			}
			for gi, n := range counts[b] {
				inZone[gi][zi] += n
			}
			rec(b+1, acc+cost[b][zi])
			for gi, n := range counts[b] {
				inZone[gi][zi] -= n
			}
		}
	}
	rec(0, 0)
	return best
}

// greedyPlanCost is the cost of a plan that is always feasible for a valid
// problem: every pod alone on a node; the pods a zone minimum names on the
// cheapest allowed offering in that zone, the rest on the cheapest allowed
// offering anywhere.
func greedyPlanCost(p *Problem) float64 {
	var total float64
	for _, g := range p.Groups {
		cheapest := math.Inf(1)
		inZone := map[int]float64{}
		for _, oi := range g.Allowed {
			o := p.Offerings[oi]
			cheapest = min(cheapest, o.Price)
			if c, ok := inZone[o.Zone]; !ok || o.Price < c {
				inZone[o.Zone] = o.Price
			}
		}
		rest := g.Count
		for z, n := range g.MinPerZone {
			total += float64(n) * inZone[z]
			rest -= n
		}
		total += float64(rest) * cheapest
	}
	return total
}

// genSmall draws a small random valid problem: 1-3 zones, 1-5 offerings,
// 1-3 groups, at most maxPods pods, random allowed sets, zone minimums and
// distinct-node counts. Resources are small integers (cpu in 250m steps,
// memory in abstract units) so that sums are exact.
func genSmall(rng *rand.Rand, maxPods int) Problem {
	var p Problem
	nz := 1 + rng.IntN(3)
	no := 1 + rng.IntN(5)
	for range no {
		cpu := float64(1+rng.IntN(8)) * 500
		mem := float64(1 + rng.IntN(8))
		slots := float64(1 + rng.IntN(6))
		price := 0.1*cpu/1000 + 0.05*mem + 0.01*slots + 0.3*rng.Float64()
		price = math.Round(price*1000) / 1000
		p.Offerings = append(p.Offerings, Offering{Price: price, Alloc: [3]float64{cpu, mem, slots}, Zone: rng.IntN(nz)})
	}
	left := 1 + rng.IntN(maxPods)
	ng := 1 + rng.IntN(3)
	for gi := 0; gi < ng && left > 0; gi++ {
		count := 1 + rng.IntN(min(4, left))
		if gi == ng-1 {
			count = min(left, 4)
		}
		left -= count
		g := Group{Count: count}
		for {
			g.Request = [3]float64{float64(1+rng.IntN(6)) * 250, float64(rng.IntN(4)), 1}
			if rng.IntN(8) == 0 {
				g.Request[2] = 0
			}
			g.Allowed = g.Allowed[:0]
			for oi, o := range p.Offerings {
				if g.Request[0] <= o.Alloc[0] && g.Request[1] <= o.Alloc[1] && g.Request[2] <= o.Alloc[2] && rng.IntN(4) != 0 {
					g.Allowed = append(g.Allowed, oi)
				}
			}
			if len(g.Allowed) > 0 {
				break
			}
		}
		if rng.IntN(3) == 0 {
			zs := map[int]bool{}
			for _, oi := range g.Allowed {
				zs[p.Offerings[oi].Zone] = true
			}
			g.MinPerZone = map[int]int{}
			rest := count
			for z := range nz {
				if zs[z] && rest > 0 && rng.IntN(2) == 0 {
					n := 1 + rng.IntN(rest)
					g.MinPerZone[z] = n
					rest -= n
				}
			}
		}
		if rng.IntN(3) == 0 {
			g.DistinctNodes = rng.IntN(count + 1)
		}
		// Sometimes copy an earlier group's request so that Solve's merges
		// are exercised: same allowed set (merged outright), or the earlier
		// set confined to one zone (merged into a zone minimum).
		if gi > 0 && rng.IntN(3) == 0 {
			prev := p.Groups[rng.IntN(gi)]
			g.Request = prev.Request
			g.Allowed = slices.Clone(prev.Allowed)
			g.MinPerZone = nil
			g.DistinctNodes = 0
			switch rng.IntN(3) {
			case 0: // identical
			case 1: // confined to the zone of one of prev's offerings
				z := p.Offerings[g.Allowed[rng.IntN(len(g.Allowed))]].Zone
				g.Allowed = slices.DeleteFunc(g.Allowed, func(o int) bool { return p.Offerings[o].Zone != z })
				if rng.IntN(2) == 0 {
					g.MinPerZone = map[int]int{z: 1 + rng.IntN(count)}
				}
			case 2: // all distinct, like prev possibly
				if count >= 2 {
					g.DistinctNodes = count
				}
			}
		}
		p.Groups = append(p.Groups, g)
	}
	return p
}
