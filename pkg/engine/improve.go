package engine

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// The improvement phase re-packs sets of new claims while that makes the
// plan cheaper. Each attempt is a trial: the claims' pods are taken off,
// offered first to the spare room of other claims (free: those keep their
// price), then re-packed into new claims by the construction's seed-and-
// fill; the trial is kept only if the claims it touched cost less
// afterwards, otherwise it is rolled back exactly (a journal restores every
// touched claim). Work is counted in placement checks against a budget that
// scales with the input, never in time, so plans are reproducible.

// DefaultImprovementBudget is the improvement work (placement checks) for
// a solve of the given number of pending pods when Options leave it 0.
func DefaultImprovementBudget(pods int) int {
	return 300_000 + 150*min(pods, 5000) + 10*max(pods-5000, 0)
}

// trial journals the changes of one improvement attempt.
type trial struct {
	gen int
	// fresh: seeding has begun; scans look only at the claims the trial
	// created.
	fresh   bool
	snaps   []nodeSnap
	moves   []move
	created []*snode
	limits  [][]int64
	// backLen is each class's number of waiting pods before the trial.
	backLen map[*cclass]int
}

type move struct {
	pod  int32
	pc   *pclass
	node *snode
	add  bool // placed onto node (false: taken off it)
}

// nodeSnap is what a trial may change on a node besides its pods.
type nodeSnap struct {
	n        *snode
	cost     float64
	types    bitset
	zones    zmask
	cts      ctmask
	zone     int
	ct       int
	free     requirements.Requirements
	pinned   map[string]string
	elig     map[int]bool
	target   *ctype
	alloc    rvec
	listed   bool
	removed  bool
	draining bool
	pods     []int32
	podPC    []*pclass
}

// touch snapshots a node the first time a trial changes it.
func (s *solver) touch(n *snode) {
	t := s.trial
	if t == nil || n.kind != nkNew || n.snapGen == t.gen {
		return
	}
	n.snapGen = t.gen
	t.snaps = append(t.snaps, nodeSnap{
		n: n, cost: s.claimCost(n), types: n.types.clone(), zones: n.zones, cts: n.cts, zone: n.zone, ct: n.ct,
		free: n.free, pinned: maps.Clone(n.pinned), elig: maps.Clone(n.elig), target: n.target, alloc: n.alloc,
		listed: n.listed, removed: n.removed, draining: n.draining, pods: slices.Clone(n.pods), podPC: slices.Clone(n.podPC),
	})
}

// claimCost is what a claim costs now: its cheapest option's price (0 when
// it holds no pod).
func (s *solver) claimCost(n *snode) float64 {
	if n.removed || len(n.pods) == 0 {
		return 0
	}
	if _, o, ok := s.rightSize(n); ok {
		return o.price
	}
	return math.Inf(1)
}

func (s *solver) beginTrial() {
	s.trialGen++
	t := &trial{gen: s.trialGen, backLen: map[*cclass]int{}}
	t.limits = make([][]int64, len(s.pools))
	for i, p := range s.pools {
		if len(p.limits) > 0 {
			t.limits[i] = make([]int64, len(p.limits))
			for j := range p.limits {
				t.limits[i][j] = p.limits[j].remaining
			}
		}
	}
	s.trial = t
}

// endTrial keeps the trial if it lowered the cost of the claims it touched
// (and placed every pod it took off); otherwise it rolls it back.
func (s *solver) endTrial(keepIfCheaper bool) bool {
	t := s.trial
	before, after := 0.0, 0.0
	for _, sn := range t.snaps {
		before += sn.cost
		after += s.claimCost(sn.n)
	}
	for _, n := range t.created {
		after += s.claimCost(n)
	}
	ok := keepIfCheaper && s.backEmpty() && after < before-1e-9 && s.trialValid(t) && s.trialKeepsWeights(t)
	s.trial = nil
	if ok {
		for _, sn := range t.snaps {
			s.settle(sn.n)
		}
		for _, n := range t.created {
			s.settle(n)
		}
		s.stats.ImproveAccepted++
		return true
	}
	s.rollback(t)
	return false
}

// settle right-sizes a claim after a kept trial (empty claims go away).
func (s *solver) settle(n *snode) {
	n.draining = false
	if len(n.pods) == 0 {
		if !n.removed {
			n.removed = true
			for i := range n.pool.limits {
				n.pool.limits[i].remaining += n.reserved[i]
			}
		}
		return
	}
	n.removed = false
	s.renarrow(n)
	if t, _, ok := s.rightSize(n); ok {
		n.target, n.alloc = t, t.alloc
	}
}

// renarrow recomputes what a claim's remaining pods allow (options,
// zones, capacity types), since pods that left may have narrowed it. A
// zone or capacity type stays pinned while a pod that needs it remains;
// claims whose eligibility for filtered spreads was settled keep their
// options.
func (s *solver) renarrow(n *snode) {
	p := n.pool
	types := p.allTypes.clone()
	zones, cts := p.zones, p.cts
	var free requirements.Requirements
	zoneRel, ctRel := false, false
	seen := map[*pclass]bool{}
	for _, pc := range n.podPC {
		if seen[pc] {
			continue
		}
		seen[pc] = true
		a := findAlt(pc, n)
		if a == nil {
			return // cannot happen; keep the claim as it is
		}
		types.and(a.types)
		zones &= a.zones
		cts &= a.cts
		if a.free.Len() > 0 {
			free = free.Intersection(a.free)
		}
		zoneRel = zoneRel || pc.zoneRel
		ctRel = ctRel || pc.ctRel
		if len(pc.otherKeys) > 0 || len(pc.otherG) > 0 {
			return // pinned values of other keys: keep as is
		}
	}
	if len(n.elig) > 0 {
		return
	}
	if zoneRel && n.zone >= 0 {
		zones = 1 << uint(n.zone)
	}
	if ctRel && n.ct >= 0 {
		cts = 1 << uint(n.ct)
	}
	if !types.has(n.target.idx) || zones&n.zones != n.zones && zones&n.zones == 0 {
		return
	}
	n.types = types
	n.free = free
	n.cts = cts
	if c, ok := cts.only(); ok {
		n.ct = c
	} else {
		n.ct = -1
	}
	n.zones = zones
	if z, ok := zones.only(); ok {
		n.zone = z
	} else {
		n.zone = -1
	}
}

func (s *solver) backEmpty() bool {
	for c, n := range s.trial.backLen {
		if len(c.back) > n {
			return false
		}
	}
	return true
}

func (s *solver) rollback(t *trial) {
	// Pods still waiting go back where they were.
	for c, n := range t.backLen {
		c.back = c.back[:n]
	}
	// Undo the placements the trial made, newest first.
	for i := len(t.moves) - 1; i >= 0; i-- {
		m := t.moves[i]
		if m.add {
			s.unplace(m.pc, m.node, m.pod)
		}
	}
	for _, n := range t.created {
		n.removed = true
	}
	for i, p := range s.pools {
		for j := range p.limits {
			p.limits[j].remaining = t.limits[i][j]
		}
	}
	// Restore the claims, then put the pods taken off back in order.
	for _, sn := range t.snaps {
		n := sn.n
		n.types, n.zones, n.cts, n.zone, n.ct = sn.types, sn.zones, sn.cts, sn.zone, sn.ct
		n.free, n.pinned, n.elig, n.target, n.alloc = sn.free, sn.pinned, sn.elig, sn.target, sn.alloc
		n.listed, n.removed, n.draining = sn.listed, sn.removed, sn.draining
	}
	for _, sn := range t.snaps {
		n := sn.n
		for k, pod := range sn.pods {
			if slices.Contains(n.pods, pod) {
				continue
			}
			pc := sn.podPC[k]
			s.place(pc, n, decision{ok: true, alt: findAlt(pc, n), zone: -1, ct: -1}, pod)
		}
		n.pods = slices.Clone(sn.pods)
		n.podPC = slices.Clone(sn.podPC)
	}
}

// improve runs the improvement phase within the work budget.
func (s *solver) improve() {
	budget := s.opts.ImprovementBudget
	if budget == 0 {
		budget = DefaultImprovementBudget(len(s.in.Pods))
	}
	if budget < 0 {
		return
	}
	claims := s.liveClaims()
	if len(claims) == 0 {
		return
	}
	s.improving = true
	defer func() { s.improving = false }()
	s.evals = 0
	for _, n := range claims {
		s.settle(n)
	}
	s.repackClasses = s.classes
	s.bigRepack(budget)
	s.localPasses(budget)
	s.poolRepack(budget)
	if s.zoneSwaps(budget) {
		s.localPasses(budget)
	}
	s.stats.ImproveEvaluations = s.evals
}

// localPasses re-packs single claims, pairs and complementary pairs, up
// to four passes while they gain. On large inputs (multiStartPods pending
// pods or more) a pair's pods are not first offered to the other claims'
// spare room: the singles just did that for each claim's pods, and the
// offer scans every claim of the pool for every pod, which spent most of
// the budget of such inputs on the first pass of pairs (many-spread/2:
// 410,000 of its 760,000 checks), where re-packing the pair into cheaper
// types is what gains.
func (s *solver) localPasses(budget int) {
	var claims []*snode
	absorbPairs := s.pendingPods() < multiStartPods
	for pass := 0; pass < 4 && s.evals < budget; pass++ {
		improved := false
		// Least efficient claims first.
		claims = s.rankClaims()
		for _, n := range claims {
			if s.evals >= budget {
				break
			}
			if n.removed || len(n.pods) == 0 {
				continue
			}
			if s.repack([]*snode{n}) {
				improved = true
			}
		}
		claims = s.rankClaims()
		for i, a := range claims {
			if s.evals >= budget {
				break
			}
			if a.removed || len(a.pods) == 0 {
				continue
			}
			tries := 0
			for _, b := range claims[i+1:] {
				if tries >= 3 || s.evals >= budget {
					break
				}
				if b.removed || len(b.pods) == 0 || b.pool != a.pool {
					continue
				}
				if a.zone >= 0 && b.zone >= 0 && a.zone != b.zone {
					continue
				}
				tries++
				if s.repackWith([]*snode{a, b}, absorbPairs) {
					improved = true
					break
				}
			}
		}
		// Complementary pairs: claims left with spare cpu next to claims
		// left with spare memory, re-packed together, can both fit cheaper
		// types.
		if s.pairComplements(budget) {
			improved = true
		}
		if !improved {
			break
		}
	}
}

// poolRepack re-packs all of a pool's claims at once, across zones, with
// each heuristic setting, keeping each result that is cheaper, while the
// budget allows another whole construction's worth of work. The (pool,
// zone) re-packs keep every pod in its claim's zone; pods whose zone does
// not matter may be better off in another zone, beside the pods a zone
// spread forces there (a claim half filled by its zone's quota).
func (s *solver) poolRepack(budget int) {
	base := s.knobs
	for _, k := range knobVariants(s.opts.Seed, len(s.in.Pods) >= pricedVariants) {
		k.zoneShift = base.zoneShift
		s.knobs = k
		for _, p := range s.pools {
			if s.evals+s.constructEvals > budget {
				s.knobs = base
				return
			}
			var set []*snode
			zones := zmask(0)
			for _, n := range s.liveClaims() {
				if n.pool == p {
					set = append(set, n)
					if n.zone >= 0 {
						zones |= 1 << uint(n.zone)
					}
				}
			}
			// Only across zones: one zone's claims bigRepack has tried.
			if len(set) >= 2 && zones.count() >= 2 {
				s.repackWith(set, false)
			}
		}
	}
	s.knobs = base
}

func (s *solver) liveClaims() []*snode {
	var out []*snode
	for _, n := range s.nodes[s.nExisting:] {
		if !n.removed && len(n.pods) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// rankClaims orders live claims by efficiency (value of their pods over
// their price), least efficient first; ties by creation.
func (s *solver) rankClaims() []*snode {
	claims := s.liveClaims()
	eff := make(map[*snode]float64, len(claims))
	for _, n := range claims {
		v := 0.0
		for _, pc := range n.podPC {
			v += s.podValue(pc, n.pool)
		}
		c := s.claimCost(n)
		if c > 0 {
			eff[n] = v / c
		}
	}
	slices.SortStableFunc(claims, func(a, b *snode) int { return cmp.Compare(eff[a], eff[b]) })
	return claims
}

// podValue is the cheapest fractional price of one pod of pc in a pool: a
// share of its best type by its dominant resource.
func (s *solver) podValue(pc *pclass, p *cpool) float64 {
	if pc.value == nil {
		pc.value = make([]float64, len(s.pools))
		for i := range pc.value {
			pc.value[i] = -1
		}
	}
	if v := pc.value[p.idx]; v >= 0 {
		return v
	}
	best := math.Inf(1)
	if pp := pc.poolEntry(p); pp != nil {
		for _, a := range pp.alts {
			a.types.each(func(i int) {
				t := p.types[i]
				if c := podShareCost(pc.req, t, a.zones, a.cts); c < best {
					best = c
				}
			})
		}
	}
	if math.IsInf(best, 1) {
		best = 0
	}
	pc.value[p.idx] = best
	return best
}

// takeOff begins a trial and takes the pods off set (back onto their
// classes, to be placed again); the claims of set are drained.
func (s *solver) takeOff(set []*snode) {
	s.beginTrial()
	for _, n := range set {
		s.touch(n)
		for i := len(n.pods) - 1; i >= 0; i-- {
			pod, pc := n.pods[i], n.podPC[i]
			s.unplace(pc, n, pod)
			if _, ok := s.trial.backLen[pc.cls]; !ok {
				s.trial.backLen[pc.cls] = len(pc.cls.back)
			}
			pc.cls.back = append(pc.cls.back, backPod{pod: pod, pc: pc})
		}
		n.draining = true
	}
	s.resetShapes()
}

// repack tries to re-pack the pods of a set of claims more cheaply. With
// absorb, the pods are first offered to the spare room of other claims.
func (s *solver) repack(set []*snode) bool { return s.repackWith(set, true) }

func (s *solver) repackWith(set []*snode, absorb bool) bool {
	s.takeOff(set)
	// Offer the pods to the spare room of other claims, largest first.
	t := s.trial
	for _, c := range s.classOrder {
		base, ok := t.backLen[c]
		for ok && absorb && len(c.back) > base {
			pc := s.curPC(c)
			if !s.absorb(pc) {
				break
			}
		}
	}
	// Re-pack the rest into new claims.
	s.trial.fresh = true
	return s.endTrial(s.seedBack(s.classOrder, false))
}

// absorb places one pod of pc into the spare room of a live claim of its
// first pool tier, without changing that claim's price.
func (s *solver) absorb(pc *pclass) bool {
	zp := s.zonePrefFor(pc)
	for _, pp := range pc.pools {
		if !pc.inFirstTier(pp.pool) {
			break
		}
		if s.scanClaims(pc, pp.pool, zp) {
			return true
		}
	}
	return false
}

// trialKeepsWeights reports whether a trial left every pod it moved on a
// pool of at least the weight it was taken from. Construction put each pod
// on the highest-weight pool that could take it, so a cheaper lower-weight
// pool is never a reason to move it down: while a trial runs, the claims
// it empties still hold their pool's limits, and a re-pack would otherwise
// read "the higher pool is at its limit" and trade weight for price.
func (s *solver) trialKeepsWeights(t *trial) bool {
	if s.weights == 0 {
		s.weights = 1
		for _, p := range s.pools {
			if p.weight != s.pools[0].weight {
				s.weights = 2
				break
			}
		}
		s.weightFrom, s.weightTo = map[int32]*snode{}, map[int32]*snode{}
	}
	if s.weights == 1 {
		return true
	}
	from, to := s.weightFrom, s.weightTo
	clear(from)
	clear(to)
	for _, m := range t.moves {
		if m.add {
			to[m.pod] = m.node
		} else if _, ok := from[m.pod]; !ok {
			from[m.pod] = m.node
		}
	}
	for pod, n := range to {
		o, ok := from[pod]
		if ok && o.pool != nil && n.kind == nkNew && n.pool != nil && n.pool.weight < o.pool.weight {
			return false
		}
	}
	return true
}

// trialValid checks what taking pods off claims could have broken, since
// placements check only the pod being placed: a zone (or other key)
// spread whose minimum dropped below a domain with owners, and required
// affinity owners left without a matching pod in their domain.
func (s *solver) trialValid(t *trial) bool {
	seen := map[int]bool{}
	var nodes []*snode
	for _, m := range t.moves {
		if !m.add {
			nodes = append(nodes, m.node)
		}
		for _, gi := range m.pc.cls.member {
			seen[gi] = true
		}
		for _, gi := range m.pc.sc.hard {
			seen[gi] = true
		}
	}
	for gi := range seen {
		g := s.groups[gi]
		switch {
		case g.kind == gSpread && g.kk != kindHostname:
			for d := range g.owners {
				if !g.spreadHolds(d) {
					return false
				}
			}
		case g.kind == gAffinity && g.kk == kindHostname:
			for _, n := range nodes {
				if !g.affinityHolds(n.id) {
					return false
				}
			}
		case g.kind == gAffinity:
			for d := range g.owners {
				if !g.affinityHolds(d) {
					return false
				}
			}
		}
	}
	return true
}

// slackTilt is how much more of its cpu than of its memory a claim leaves
// unused (relative to its current type): positive means spare cpu.
func (s *solver) slackTilt(n *snode) float64 {
	a := n.alloc
	if a[rCPU] <= 0 || a[rMem] <= 0 {
		return 0
	}
	fc := float64(a[rCPU]-n.used[rCPU]) / float64(a[rCPU])
	fm := float64(a[rMem]-n.used[rMem]) / float64(a[rMem])
	return fc - fm
}

// pairComplements re-packs claims with spare cpu together with claims with
// spare memory (same pool, compatible zones), most lopsided first.
func (s *solver) pairComplements(budget int) bool {
	improved := false
	for _, p := range s.pools {
		var claims []*snode
		for _, n := range s.liveClaims() {
			if n.pool == p {
				claims = append(claims, n)
			}
		}
		if len(claims) < 2 {
			continue
		}
		tilt := make(map[*snode]float64, len(claims))
		for _, n := range claims {
			tilt[n] = s.slackTilt(n)
		}
		slices.SortStableFunc(claims, func(a, b *snode) int { return cmp.Compare(tilt[b], tilt[a]) })
		lo, hi := 0, len(claims)-1
		for lo < hi && s.evals < budget {
			a := claims[lo]
			if a.removed || len(a.pods) == 0 || tilt[a] <= 0.02 {
				break
			}
			// Find the most memory-spare partner in a compatible zone.
			j := hi
			for j > lo {
				b := claims[j]
				if !b.removed && len(b.pods) > 0 && tilt[b] < -0.02 && (a.zone < 0 || b.zone < 0 || a.zone == b.zone) {
					break
				}
				j--
			}
			if j <= lo {
				lo++
				continue
			}
			if s.repack([]*snode{a, claims[j]}) {
				improved = true
			}
			claims = slices.Delete(claims, j, j+1)
			if j <= hi {
				hi--
			}
			lo++
		}
	}
	return improved
}

// bigRepack re-packs each (pool, zone) group of claims again with the
// other heuristic settings, keeping each result that is cheaper, while the
// budget allows another whole construction's worth of work.
func (s *solver) bigRepack(budget int) {
	base := s.knobs
	idle := 0
	for _, k := range knobVariants(s.opts.Seed, len(s.in.Pods) >= pricedVariants)[1:] {
		if s.evals+s.constructEvals > budget || idle >= 2 {
			break
		}
		before := s.totalPrice()
		s.knobs = k
		for _, p := range s.pools {
			for z := -1; z < len(s.zones); z++ {
				var set []*snode
				for _, n := range s.liveClaims() {
					if n.pool == p && n.zone == z {
						set = append(set, n)
					}
				}
				if len(set) >= 2 {
					s.repackWith(set, false)
				}
			}
		}
		// Two settings in a row that gain less than 0.1% end the search.
		if s.totalPrice() > before*(1-0.001) {
			idle++
		} else {
			idle = 0
		}
	}
	s.knobs = base
}

// pricedVariants is the size (pending pods) from which bigRepack tries the
// priced heuristic settings.
const pricedVariants = 500

// skel is an empty claim a skeleton re-pack opens before re-seeding: a
// type in a zone.
type skel struct {
	t    *ctype
	zone int
	cts  ctmask
}

// zoneSwaps moves a pool's large claims between zones: for each pair of
// zones X, Y holding claims of the pool, the pool's claims in both are
// re-packed around a skeleton, the type of X's dearest claim opened empty
// in Y (and, in a second try, Y's dearest claim's type in X), with the
// zone-constrained pods placed first, so each zone's spread pods settle
// there and the zone-free pods fill the room left. The construction puts
// its first large claim in the zone its tie-break prefers, and the local
// re-packs keep a claim's zone-free pods in its zone; zones differ in
// price, and where daemonsets make every node dear the cheapest zone
// should hold the big node. Small inputs only (as multiStart).
func (s *solver) zoneSwaps(budget int) bool {
	if !s.smallInput() {
		return false
	}
	improved := false
	base := s.knobs
	k := base
	k.zoneFirst = true
	s.knobs = k
	order := s.order()
	defer func() { s.knobs = base }()
	for _, p := range s.pools {
		for x := range s.zones {
			for y := range s.zones {
				if x == y || s.evals+s.constructEvals > budget {
					continue
				}
				var set []*snode
				var dx, dy *snode
				for _, n := range s.liveClaims() {
					if n.pool != p {
						continue
					}
					switch n.zone {
					case x:
						set = append(set, n)
						if dx == nil || s.claimCost(n) > s.claimCost(dx) {
							dx = n
						}
					case y:
						set = append(set, n)
						if dy == nil || s.claimCost(n) > s.claimCost(dy) {
							dy = n
						}
					}
				}
				if dx == nil || dy == nil {
					continue
				}
				if _, ok := dx.target.cheapest(1<<uint(y), dx.cts); !ok {
					continue
				}
				one := []skel{{dx.target, y, dx.cts}}
				if s.skeletonRepack(set, one, order) {
					improved = true
					continue
				}
				if _, ok := dy.target.cheapest(1<<uint(x), dy.cts); ok && x < y {
					if s.skeletonRepack(set, append(one, skel{dy.target, x, dy.cts}), order) {
						improved = true
					}
				}
			}
		}
	}
	return improved
}

// smallInput: under multiStartPods pending pods, no existing node or
// in-flight claim (what-ifs on a cluster are many).
func (s *solver) smallInput() bool {
	return s.pendingPods() < multiStartPods && s.nExisting == 0
}

// pendingPods is the number of pending pods of the input.
func (s *solver) pendingPods() int {
	pending := 0
	for _, c := range s.classes {
		pending += len(c.pods)
	}
	return pending
}

// skeletonRepack takes the pods off set, opens the skeleton's empty
// claims and re-seeds the pods in order (onto the skeleton first, then
// new claims); kept only if cheaper.
func (s *solver) skeletonRepack(set []*snode, sk []skel, order []*cclass) bool {
	s.takeOff(set)
	t := s.trial
	t.fresh = true
	p := set[0].pool
	for _, k := range sk {
		// The drained claims still hold their share of the limits, so
		// this is conservative.
		if !s.limitsAllow(p, k.t) {
			continue
		}
		s.registerClaim(s.newSnode(p, k.t, 1<<uint(k.zone), k.cts))
	}
	return s.endTrial(s.seedBack(order, true))
}

// seedBack seeds, class by class in order, the pods the trial took back
// onto their classes; with zoneNoFill a zone-constrained class's pods open
// claims without filling them. It reports whether every pod was placed.
func (s *solver) seedBack(order []*cclass, zoneNoFill bool) bool {
	t := s.trial
	defer func() { s.noFill = false }()
	for _, c := range order {
		base, touched := t.backLen[c]
		s.noFill = zoneNoFill && s.curPC(c).zoneRel
		for touched && len(c.back) > base {
			if !s.seed(s.curPC(c)) {
				return false
			}
		}
	}
	return true
}
