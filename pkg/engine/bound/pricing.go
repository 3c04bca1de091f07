package bound

import (
	"container/heap"
	"math"
)

// cheapBound bounds F_o with the resource prices alpha (unscaled):
// F_o <= alpha.alloc + sum_g [(w1 - req.alpha)^+ + (m-1)(w2 - req.alpha)^+].
func (s *solver) cheapBound(o *ioffer, alpha *[NumResources]float64) float64 {
	bk := &s.pr.buckets[o.bucket]
	f := alpha[0]*o.alloc[0] + alpha[1]*o.alloc[1] + alpha[2]*o.alloc[2]
	for j, gi := range bk.groups {
		req := &s.pr.groups[gi].req
		ra := req[0]*alpha[0] + req[1]*alpha[1] + req[2]*alpha[2]
		if t := bk.w1[j] - ra; t > 0 {
			f += t
		}
		if m := o.caps[j]; m > 1 {
			if t := bk.w2[j] - ra; t > 0 {
				f += (m - 1) * t
			}
		}
	}
	return f
}

// exact solves o's pricing LP, remembers its resource prices and returns the
// proven upper bound on F_o, leaving the primal solution in s.kn.
func (s *solver) exact(o *ioffer) float64 {
	bk := &s.pr.buckets[o.bucket]
	var scale [NumResources]float64
	for r := range NumResources {
		scale[r] = o.alloc[r]
		if scale[r] <= 0 {
			scale[r] = 1
		}
	}
	k := &s.kn
	k.reset()
	for j, gi := range bk.groups {
		req := &s.pr.groups[gi].req
		a := [NumResources]float64{req[0] / scale[0], req[1] / scale[1], req[2] / scale[2]}
		w1, w2, m := bk.w1[j], bk.w2[j], o.caps[j]
		if w1 <= 0 {
			continue
		}

		if w1 == w2 || m == 1 {
			// One item: no presence premium, or only a first pod fits.
			k.add(w1, m, a, int32(j))
			continue
		}
		k.add(w1, 1, a, int32(j))
		if w2 > 0 {
			k.add(w2, m-1, a, int32(j))
		}
	}
	if len(k.w) == 0 {
		o.alpha, o.hasAlpha = [NumResources]float64{}, true
		return 0
	}
	k.solve()
	// Proven bound from the duals y, in scaled units.
	f := k.y[0] + k.y[1] + k.y[2]
	for j := range k.w {
		a := &k.a[j]
		if t := k.w[j] - (a[0]*k.y[0] + a[1]*k.y[1] + a[2]*k.y[2]); t > 0 {
			f += k.u[j] * t
		}
	}
	for r := range NumResources {
		if o.alloc[r] > 0 {
			o.alpha[r] = k.y[r] / o.alloc[r]
		} else {
			o.alpha[r] = 0
		}
	}
	o.hasAlpha = true
	return f
}

type cand struct {
	ratio float64
	off   int32
	tried int16 // fresh prices of the bucket already tried
	exact bool
}

type candHeap []cand

func (h candHeap) Len() int { return len(h) }

func (h candHeap) Less(i, j int) bool {
	if h[i].ratio != h[j].ratio {
		return h[i].ratio > h[j].ratio
	}
	return h[i].off < h[j].off
}

func (h candHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *candHeap) Push(x any) { *h = append(*h, x.(cand)) }

func (h *candHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func ratioOf(f, price float64) float64 {
	if price > 0 {
		return f / price
	}
	if f <= 1e-12 {
		return 0
	}
	return math.Inf(1)
}

// certifySlack is the relative slack up to which pricing accepts a cheap
// bound instead of an exact solve when it certifies max_o F_o/p_o: the
// reported maximum is then the cheap bound itself, still an upper bound, so
// the proof stays valid and loses at most this fraction.
const certifySlack = 1e-7

// price bounds every offering at the duals last given to setValues and adds
// improving columns, at most perBucket per bucket and perRnd in all: a column
// is added when its reduced cost at the master's own duals is negative.
// It returns a proven upper bound on max_o F_o/p_o, one on
// max_o (F_o - p_o)^+, and the number of columns added.
//
// Offerings are visited from the largest bound down (a heap). A stale bound
// (from resource prices of an earlier round) is first retried with the
// prices of offerings of the same bucket solved exactly this round, and only
// then solved exactly; once the largest remaining bound is exact, or within
// certifySlack of the largest exact one, the maximum is certified.
func (s *solver) price() (maxRatio, maxExcess float64, added int) {
	pr := s.pr
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		bk.added = 0
		bk.fresh = bk.fresh[:0]
		mid := &pr.offers[bk.offers[len(bk.offers)/2]]
		if !mid.hasAlpha {
			s.exact(mid)
		}
	}
	s.cand = s.cand[:0]
	for b := range pr.buckets {
		bk := &pr.buckets[b]
		mid := &pr.offers[bk.offers[len(bk.offers)/2]]
		for _, oi := range bk.offers {
			o := &pr.offers[oi]
			alpha := &mid.alpha
			if o.hasAlpha {
				alpha = &o.alpha
			}
			f := s.cheapBound(o, alpha)
			o.ub = f
			s.cand = append(s.cand, cand{ratio: ratioOf(f, o.price), off: oi})
		}
	}
	heap.Init(&s.cand)
	maxRatio = -1
	maxExact := -1.0
	solves := 0
	open := len(pr.buckets) // buckets with room for a column
	for s.cand.Len() > 0 {
		top := s.cand[0]
		o := &pr.offers[top.off]
		bk := &pr.buckets[o.bucket]
		if top.exact {
			if maxRatio < 0 {
				maxRatio = top.ratio
			}
			if top.ratio <= 1+1e-9 || added >= s.perRnd {
				break
			}
			heap.Pop(&s.cand)
			continue
		}
		if maxRatio < 0 {
			if int(top.tried) < len(bk.fresh) {
				// Retry with prices fresh from this round's exact solves.
				f := o.ub
				for _, a := range bk.fresh[top.tried:] {
					f = min(f, s.cheapBound(o, &a))
				}
				o.ub = f
				s.cand[0].ratio = ratioOf(f, o.price)
				s.cand[0].tried = int16(len(bk.fresh))
				heap.Fix(&s.cand, 0)
				continue
			}
			if maxExact >= 0 && top.ratio <= maxExact*(1+certifySlack) {
				maxRatio = top.ratio
			}
		}
		if maxRatio >= 0 && (open == 0 || solves >= s.maxSolves || added >= s.perRnd || top.ratio <= 1+1e-9) {
			break // certified, and no room for (or hope of) more columns
		}
		if maxRatio >= 0 && bk.added >= s.perBucket {
			// The maximum is certified already; this offering could only
			// give a column its bucket has no room for.
			heap.Pop(&s.cand)
			continue
		}
		f := s.exact(o)
		o.ub = f
		solves++
		s.solves++
		r := ratioOf(f, o.price)
		maxExact = max(maxExact, r)
		if len(bk.fresh) < maxFresh {
			bk.fresh = append(bk.fresh, o.alpha)
		}
		s.cand[0] = cand{ratio: r, off: top.off, exact: true}
		heap.Fix(&s.cand, 0)
		if f > o.price*(1+1e-9) && bk.added < s.perBucket && added < s.perRnd {
			if s.addColumn(top.off) {
				bk.added++
				added++
				if bk.added == s.perBucket {
					open--
				}
			}
		}
	}
	if maxRatio < 0 {
		maxRatio = max(maxExact, 0)
	}
	for oi := range pr.offers {
		maxExcess = max(maxExcess, pr.offers[oi].ub-pr.offers[oi].price)
	}
	return maxRatio, max(maxExcess, 0), added
}

// maxFresh caps the resource price vectors per bucket and round that stale
// bounds are retried with.
const maxFresh = 4
