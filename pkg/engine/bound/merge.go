package bound

import "slices"

// Identical groups (same request, same allowed offerings, no pods that
// must be apart) are one group to the exact packing: it counts pods per
// group, and groups whose pods no node can tell apart only multiply its
// count vectors. mergeIdentical returns the problem with each set of
// identical groups made one (its count and zone minimums summed), or nil
// when no two groups are identical. The merged problem has the same
// optimum as p: a plan for p is one for it (a zone holds at least the sum
// of the members' minimums), and a plan for it is one for p after
// relabelling its pods: in each zone z, M_zg of the merged pods there take
// each member g's label, and the rest (n_z - sum_g M_zg, summing over the
// zones to sum_g F_g with F_g = C_g - sum_z M_zg) take the labels of the
// members' free pods in any order; nothing else tells the members apart.
func mergeIdentical(p *Problem) *Problem {
	var sets [][]int
	canon := make([][]int, len(p.Groups))
	merged := false
	for gi := range p.Groups {
		g := &p.Groups[gi]
		if g.Count <= 0 {
			continue
		}
		canon[gi] = canonical(g.Allowed)
		if g.DistinctNodes >= 2 {
			sets = append(sets, []int{gi})
			continue
		}
		placed := false
		for k, members := range sets {
			h := members[0]
			if p.Groups[h].DistinctNodes < 2 && p.Groups[h].Request == g.Request && slices.Equal(canon[h], canon[gi]) {
				sets[k] = append(sets[k], gi)
				placed, merged = true, true
				break
			}
		}
		if !placed {
			sets = append(sets, []int{gi})
		}
	}
	if !merged {
		return nil
	}
	q := &Problem{Offerings: p.Offerings}
	for _, members := range sets {
		first := &p.Groups[members[0]]
		g := Group{Request: first.Request, Allowed: canon[members[0]], DistinctNodes: first.DistinctNodes}
		if len(members) > 1 {
			g.DistinctNodes = 0
		}
		for _, gi := range members {
			src := &p.Groups[gi]
			g.Count += src.Count
			for z, n := range src.MinPerZone {
				if n > 0 {
					if g.MinPerZone == nil {
						g.MinPerZone = map[int]int{}
					}
					g.MinPerZone[z] += n
				}
			}
		}
		q.Groups = append(q.Groups, g)
	}
	return q
}

// packMerged is packBound on f's problem with identical groups merged (f
// itself when there are none; f's offerings must be reduced).
func (f *floorer) packMerged() float64 {
	var q *Problem
	if !f.off.merge {
		q = mergeIdentical(f.p)
	}
	if q == nil {
		return f.packBound()
	}
	fq := newFloorer(q)
	fq.off = f.off
	fq.reduceOfferings()
	return fq.packBound()
}
