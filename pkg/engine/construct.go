package engine

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

var inf = math.Inf(1)

func trailing(w uint64) int { return bits.TrailingZeros64(w) }

// targetTolerance is the relative cost band within which chooseTarget
// prefers the larger instance type.
const targetTolerance = 0.002

// fitWindow is how many feasible open claims a pod compares before it
// picks one (the best fit by fitScore).
const fitWindow = 8

// maxRounds bounds the construction passes. Later passes retry only the
// pods that failed, while some progress is made: a pod may wait for pod
// affinity targets, or for other zones to catch up in a spread whose pods
// are pinned to zones by their volumes.
const maxRounds = 64

// List ids for placement cursors.
func (s *solver) lidExAll() int         { return 0 }
func (s *solver) lidExZone(z int) int   { return 1 + z }
func (s *solver) lidExNoZone() int      { return 1 + len(s.zones) }
func (s *solver) lidPoolBase(p int) int { return 2 + len(s.zones) + p*(len(s.zones)+2) }
func (s *solver) lidPoolAll(p int) int  { return s.lidPoolBase(p) }
func (s *solver) lidUnpinned(p int) int { return s.lidPoolBase(p) + 1 }
func (s *solver) lidZone(p, z int) int  { return s.lidPoolBase(p) + 2 + z }
func (s *solver) numLists() int         { return s.lidPoolBase(len(s.pools)) }

func (pc *pclass) cursor(s *solver, lid int) int {
	if pc.cursors == nil {
		pc.cursors = make([]int32, s.numLists())
	}
	return int(pc.cursors[lid])
}

// order returns the classes in placement order: higher priority first,
// then pods needing nodes of their own (so the nodes exist before other
// pods fill them), then larger pods first.
func (s *solver) order() []*cclass {
	out := slices.Clone(s.classes)
	size := func(c *cclass) float64 {
		r := c.sc.req
		return float64(r[rCPU])/1000 + float64(r[rMem])/(4<<30) + float64(r[rEph])/(100<<30)
	}
	type key struct {
		anchor, zone bool
		size, tie    float64
	}
	keys := make(map[*cclass]key, len(out))
	for _, c := range out {
		pc := s.pclassFor(c, c.sc.masks[0])
		k := key{anchor: pc.anchor, zone: pc.zoneRel, size: size(c)}
		if s.knobs.shuffle != 0 {
			// A seeded tie-break perturbs the order of similar sizes.
			h := splitmix(s.knobs.shuffle ^ uint64(c.id)*0x9e3779b97f4a7c15)
			k.tie = float64(h>>11) / (1 << 53)
			k.size = math.Round(k.size*4) / 4
		}
		keys[c] = k
	}
	slices.SortStableFunc(out, func(a, b *cclass) int {
		if c := cmp.Compare(b.sc.priority, a.sc.priority); c != 0 {
			return c
		}
		ka, kb := keys[a], keys[b]
		if ka.anchor != kb.anchor {
			if ka.anchor {
				return -1
			}
			return 1
		}
		if s.knobs.zoneFirst && ka.zone != kb.zone {
			if ka.zone {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(kb.size, ka.size); c != 0 {
			return c
		}
		if c := cmp.Compare(ka.tie, kb.tie); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out
}

// initDemand accounts every pending pod against the pool it would use
// first, and the anchors against their groups.
func (s *solver) initDemand() {
	s.demand = make([]rvec, len(s.pools))
	s.poolAnchors = make([][]*tgroup, len(s.pools))
	for _, c := range s.classes {
		pc := s.pclassFor(c, c.sc.masks[0])
		c.topPool = -1
		if len(pc.pools) > 0 {
			c.topPool = pc.pools[0].pool.idx
		}
		if c.topPool < 0 {
			continue
		}
		n := int64(len(c.pods))
		for d := range nres {
			s.demand[c.topPool][d] += c.sc.req[d] * n
		}
		for _, gi := range c.sc.hard {
			s.groups[gi].pendingOwners += len(c.pods)
		}
		for _, g := range pc.anchorGroups {
			if g.pendingAnchors == 0 {
				s.poolAnchors[c.topPool] = append(s.poolAnchors[c.topPool], g)
			}
			g.pendingAnchors += len(c.pods)
		}
	}
}

// zoneQuotas gives zone quotas to classes whose zone spread (maxSkew 1,
// no node filters) counts only their own pods (and existing ones): the
// final counts per zone of the spread's universe are fixed in advance as
// floor or ceil of the total over the zones, the extra pods rotating by
// class so zones fill evenly.
func (s *solver) zoneQuotas() {
	members := map[int]int{}
	for _, c := range s.classes {
		for _, gi := range c.member {
			members[gi]++
		}
	}
	nz := len(s.zones)
	for _, c := range s.classes {
		if c.sc.vol != allZones {
			continue
		}
		pc := s.pclassFor(c, c.sc.masks[0])
		var g *tgroup
		ok := true
		for _, r := range pc.zoneG {
			switch {
			case r.own && r.member && r.g.kind == gSpread && r.g.maxSkew == 1 && g == nil &&
				members[r.g.idx] == 1 && slices.Contains(c.sc.hard, r.g.idx):
				// Node inclusion policies do not matter: the class's pods
				// land only on nodes that match its own node affinity and
				// whose taints it tolerates, so every one of them counts.
				g = r.g
			default:
				ok = false
			}
		}
		if !ok || g == nil {
			continue
		}
		m := g.univZones.count()
		if m < int(g.minDomains) || m == 0 {
			continue
		}
		// Every zone of the universe must be one the class's first pools
		// can put new nodes in, or its quota might stay unfilled while the
		// other zones' filled quotas break the spread.
		var reach zmask
		for _, pp := range pc.pools {
			if pc.inFirstTier(pp.pool) {
				for _, a := range pp.alts {
					reach |= a.zones
				}
			}
		}
		if g.univZones&^reach != 0 {
			continue
		}
		// The pods that count are the class's and those already counted in
		// the universe's zones: g.total also holds member pods on nodes
		// the spread's node filters leave out (nodeAffinityPolicy Honor),
		// which must not raise the quotas.
		total := len(c.pods)
		var zones []int
		for z := 0; z < nz; z++ {
			if g.univZones.has(z) {
				zones = append(zones, z)
				total += int(g.cnt(z))
			}
		}
		base, extra := total/m, total%m
		// Zones already holding more existing pods take the extras first;
		// then rotate by class.
		rot := c.id % m
		slices.SortStableFunc(zones, func(a, b int) int {
			if c := cmp.Compare(g.cnt(b), g.cnt(a)); c != 0 {
				return c
			}
			return cmp.Compare((a+m-rot)%m, (b+m-rot)%m)
		})
		quota := make([]int32, nz)
		feasible := true
		for i, z := range zones {
			want := base
			if i < extra {
				want++
			}
			q := want - int(g.cnt(z))
			if q < 0 {
				feasible = false
			}
			quota[z] = int32(q)
		}
		if !feasible {
			continue
		}
		c.quotaG, c.quota, c.quotaUsed = g, quota, make([]int32, nz)
	}
}

// repairQuotas handles zone-quota classes that could not place every pod
// (limits, capacity): their placed pods may leave the spread unbalanced,
// so pods are taken back from the fullest zones until it balances; they
// join the class's unschedulable pods.
func (s *solver) repairQuotas() {
	for _, c := range s.classes {
		g := c.quotaG
		if g == nil || !s.pending(c) {
			continue
		}
		for {
			worst, excess := -1, int32(0)
			m := g.min()
			for d := range g.owners {
				if g.own(d) > 0 && g.cnt(d)-m > g.maxSkew && g.cnt(d)-m > excess {
					worst, excess = d, g.cnt(d)-m
				}
			}
			if worst < 0 || !s.takeBackOne(c, g, worst) {
				break
			}
		}
	}
}

// takeBackOne removes one pod of class c from a node in domain d of g.
func (s *solver) takeBackOne(c *cclass, g *tgroup, d int) bool {
	for i := len(s.nodes) - 1; i >= 0; i-- {
		n := s.nodes[i]
		if n.removed {
			continue
		}
		if dd, ok := s.domain(n, g); !ok || dd != d {
			continue
		}
		for j := len(n.pods) - 1; j >= 0; j-- {
			if pc := n.podPC[j]; pc.cls == c {
				pod := n.pods[j]
				s.unplace(pc, n, pod)
				c.back = append(c.back, backPod{pod: pod, pc: pc})
				return true
			}
		}
	}
	return false
}

// forcedNodes is how many more new nodes the pool's anchors need.
func (s *solver) forcedNodes(p *cpool) float64 {
	k := 0.0
	for _, g := range s.poolAnchors[p.idx] {
		per := 1.0
		if g.kind == gSpread {
			per = float64(g.maxSkew)
		}
		k = math.Max(k, math.Ceil(float64(max(g.pendingAnchors, 0))/per))
	}
	return k
}

// construct places every pod: existing capacity first, then new
// NodeClaims. A new claim is seeded by the next pod in placement order and
// then filled, node by node, with the pending pods that best complete it
// (so nodes end full in every resource at once). A pod that can be placed
// nowhere with its preferences relaxes them, lowest weight first.
func (s *solver) construct() {
	order := s.order()
	s.classOrder = order
	s.initDemand()
	if s.knobs.lambda {
		s.computeLambdas()
	}
	s.zoneQuotas()
	s.buildShapes(order)
	for round := 0; round < maxRounds; round++ {
		progress := false
		if s.nExisting > 0 {
			for _, c := range order {
				if !s.pending(c) {
					continue
				}
				pc := s.curPC(c)
				for c.next < len(c.pods) && s.scanExisting(pc, s.zonePrefFor(pc)) {
					progress = true
				}
			}
		}
		for _, c := range order {
			for s.pending(c) {
				pc := s.curPC(c)
				if s.seed(pc) {
					progress = true
					continue
				}
				c.lastPC = pc
				if c.maskIdx+1 >= len(c.sc.masks) {
					break
				}
				c.maskIdx++
				npc := s.curPC(c)
				for s.nExisting > 0 && c.next < len(c.pods) && s.scanExisting(npc, s.zonePrefFor(npc)) {
					progress = true
				}
			}
		}
		if !progress || round == maxRounds-1 {
			break
		}
		// Pods still pending start again from all their preferences: pods
		// placed meanwhile (affinity targets) may have opened new options.
		for _, c := range order {
			if s.pending(c) {
				c.maskIdx = 0
			}
		}
	}
}

// markFailed retires the classes construction could not place, so later
// phases leave them alone.
func (s *solver) markFailed() {
	for _, c := range s.classes {
		if s.pending(c) {
			c.failed = true
		}
	}
}

func (s *solver) pending(c *cclass) bool {
	if c.next >= len(c.pods) && len(c.back) == 0 || c.errCode != "" || c.failed {
		return false
	}
	if c.sc.unsupported != "" {
		c.errCode, c.errMsg = Unsupported, c.sc.unsupported
		return false
	}
	return true
}

func (s *solver) curPC(c *cclass) *pclass {
	if n := len(c.back); n > 0 {
		return c.back[n-1].pc
	}
	return s.pclassFor(c, c.sc.masks[c.maskIdx])
}

func (s *solver) zonePrefFor(pc *pclass) []int {
	if !pc.zoneRel {
		return nil
	}
	s.zpBuf = s.zonePref(pc, s.zpBuf)
	return s.zpBuf
}

// seed places the next pod of pc onto an open claim of its best pool tier,
// or onto a new claim that is then filled.
func (s *solver) seed(pc *pclass) bool {
	zp := s.zonePrefFor(pc)
	for i := 0; i < len(pc.pools); {
		// Pools of equal weight form a tier: their open claims first, then
		// the cheapest new claim among them.
		j := i + 1
		for j < len(pc.pools) && pc.pools[j].pool.weight == pc.pools[i].pool.weight {
			j++
		}
		tier := pc.pools[i:j]
		for _, pp := range tier {
			if s.scanClaims(pc, pp.pool, zp) {
				return true
			}
		}
		if n := s.createClaim(pc, tier, zp); n != nil {
			if !s.noFill {
				s.fill(n)
			}
			return true
		}
		i = j
	}
	return false
}

// shape is a request vector with the classes that have it.
type shape struct {
	req rvec
	// all lists every class of the shape; classes the ones that may still
	// have pending pods (fill drops exhausted ones; re-packs restore them).
	all []*cclass
	// hard shapes hold classes that own hostname-level spread or
	// anti-affinity: they fill claims first, since each needs room on many
	// different nodes.
	hard    bool
	classes []*cclass
	blocked int
}

func (s *solver) buildShapes(order []*cclass) {
	type key struct {
		req  rvec
		hard bool
	}
	idx := map[key]int{}
	for _, c := range order {
		pc := s.pclassFor(c, c.sc.masks[0])
		k := key{c.sc.req, false}
		for _, r := range pc.hostG {
			if r.own && r.g.kind != gAffinity {
				k.hard = true
			}
		}
		i, ok := idx[k]
		if !ok {
			i = len(s.shapes)
			idx[k] = i
			s.shapes = append(s.shapes, &shape{req: c.sc.req, hard: k.hard})
		}
		s.shapes[i].classes = append(s.shapes[i].classes, c)
		s.shapes[i].all = append(s.shapes[i].all, c)
	}
}

// fill adds pending pods to a new claim until none fits: each time the pod
// whose request leaves the smallest residual (relative to the claim's
// size), among the pods whose first pool tier holds the claim's pool.
func (s *solver) fill(n *snode) {
	s.fillGen++
	gen := s.fillGen
	var inv [nres]float64
	for d := range nres {
		if n.alloc[d] > 0 {
			inv[d] = 1 / float64(n.alloc[d])
		}
	}
	for {
		s.evals++
		var free rvec
		for d := range nres {
			free[d] = n.alloc[d] - n.used[d]
		}
		var best *shape
		bestScore := 0.0
		for _, sh := range s.shapes {
			if sh.blocked == gen || len(sh.classes) == 0 || !sh.req.fits(free) {
				continue
			}
			// Raise the least-used of cpu and memory the most (so the claim
			// fills evenly), larger pods first at equal balance.
			uc := float64(n.used[rCPU]+sh.req[rCPU]) * inv[rCPU]
			um := float64(n.used[rMem]+sh.req[rMem]) * inv[rMem]
			sc := -(min(uc, um) + s.knobs.fillAlpha*(uc+um))
			if best == nil || sh.hard && !best.hard || sh.hard == best.hard && sc < bestScore {
				best, bestScore = sh, sc
			}
		}
		if best == nil {
			return
		}
		unpinned := n.zone < 0
		if !s.fillFrom(n, best, gen) {
			best.blocked = gen
		}
		if unpinned && n.zone >= 0 {
			s.retarget(n)
			for d := range nres {
				if n.alloc[d] > 0 {
					inv[d] = 1 / float64(n.alloc[d])
				}
			}
		}
	}
}

// fillFrom places one pod of the shape's classes onto n, if any may go.
func (s *solver) fillFrom(n *snode, sh *shape, gen int) bool {
	k := 0
	placed := false
	for i, c := range sh.classes {
		if !s.pending(c) {
			continue // dropped from the shape
		}
		sh.classes[k] = c
		k++
		if placed || c.blocked == gen {
			continue
		}
		pc := s.curPC(c)
		if !pc.inFirstTier(n.pool) || !s.worthIt(pc, n) {
			c.blocked = gen
			continue
		}
		d := s.canPlace(pc, n, s.zonePrefFor(pc))
		if !d.ok {
			c.blocked = gen
			continue
		}
		s.place(pc, n, d, s.nextPod(c))
		placed = true
		if s.pending(c) {
			continue
		}
		k-- // exhausted: drop it
		_ = i
	}
	sh.classes = sh.classes[:k]
	return placed
}

// worthIt reports whether a pod belongs on a claim's target type at all:
// its share of the node's price (by its dominant resource there) must not
// exceed what it would cost on its cheapest type by more than the gate
// allows. It keeps, say, cpu-heavy pods off a memory-optimised node whose
// memory the fill could not use, so the node does not grow to a type
// whose price the pods cannot justify.
func (s *solver) worthIt(pc *pclass, n *snode) bool {
	if s.knobs.gate <= 0 {
		return true
	}
	v := s.podValue(pc, n.pool)
	if v <= 0 {
		return true
	}
	return v >= s.knobs.gate*podShareCost(pc.req, n.target, n.zones, n.cts)
}

// inFirstTier reports whether p is among the class's highest-weight pools.
func (pc *pclass) inFirstTier(p *cpool) bool {
	return pc.firstTier.has(p.idx)
}

func (s *solver) scanExisting(pc *pclass, zp []int) bool {
	if !pc.zoneRel {
		return s.scanList(pc, s.lidExAll(), s.exAll, nil, false)
	}
	for _, z := range zp {
		if len(s.exZone[z]) == 0 || s.zoneBlock(pc, z) != nil {
			continue
		}
		if s.scanList(pc, s.lidExZone(z), s.exZone[z], zp, false) {
			return true
		}
	}
	if !pc.needsZone && len(s.exNoZone) > 0 {
		return s.scanList(pc, s.lidExNoZone(), s.exNoZone, zp, false)
	}
	return false
}

func (s *solver) scanClaims(pc *pclass, p *cpool, zp []int) bool {
	if s.trial != nil && s.trial.fresh {
		// A re-pack already offered its pods to the other claims' spare
		// room; its seeds only look at the claims it made itself.
		var list []int32
		for _, n := range s.trial.created {
			if n.pool == p {
				list = append(list, int32(n.id))
			}
		}
		if pc.zoneRel {
			return s.scanList(pc, 0, list, zp, false)
		}
		return s.scanList(pc, 0, list, nil, false)
	}
	if !pc.zoneRel {
		return s.scanList(pc, s.lidPoolAll(p.idx), s.poolAll[p.idx], nil, false)
	}
	for _, z := range zp {
		if len(s.poolZone[p.idx][z]) == 0 || s.zoneBlock(pc, z) != nil {
			continue
		}
		if s.scanList(pc, s.lidZone(p.idx, z), s.poolZone[p.idx][z], zp, false) {
			return true
		}
	}
	return s.scanList(pc, s.lidUnpinned(p.idx), s.poolUnpinned[p.idx], zp, true)
}

// scanList tries the nodes of one list in order, from the class's cursor.
// The cursor moves past nodes that failed for a reason that persists.
func (s *solver) scanList(pc *pclass, lid int, list []int32, zp []int, unpinned bool) bool {
	start := 0
	useCursor := pc.useCursor && !s.improving
	if useCursor {
		start = pc.cursor(s, lid)
	}
	cur := start
	placed := false
	var best *snode
	var bestDec decision
	bestScore := -1.0
	seen := 0
	for i := start; i < len(list); i++ {
		n := s.nodes[list[i]]
		if n.removed || n.draining || (unpinned && n.zone >= 0) {
			if i == cur {
				cur++
			}
			continue
		}
		d := s.canPlace(pc, n, zp)
		if d.ok {
			sc := fitScore(&pc.req, n)
			if sc > bestScore {
				best, bestDec, bestScore = n, d, sc
			}
			seen++
			if seen >= s.window || n.kind != nkNew {
				break
			}
			continue
		}
		if d.why.monotone() {
			if i == cur {
				cur++
			}
		} else if unpinned && d.why == fwTopoZone {
			break
		}
	}
	if best != nil {
		s.place(pc, best, bestDec, s.nextPod(pc.cls))
		placed = true
	}
	if useCursor {
		pc.cursors[lid] = int32(cur)
	}
	return placed
}

// fitScore rates a node for a pod: the dot product of the pod's request
// with the node's residual capacity, both relative to the node's size, so
// pods go where their shape matches the room left (nodes end balanced).
func fitScore(req *rvec, n *snode) float64 {
	sc := 0.0
	for _, d := range [...]int{rCPU, rMem} {
		a := float64(n.alloc[d])
		if a <= 0 {
			continue
		}
		sc += float64(req[d]) / a * float64(n.alloc[d]-n.used[d]) / a
	}
	return sc
}

func (s *solver) nextPod(c *cclass) int32 {
	if n := len(c.back); n > 0 {
		p := c.back[n-1].pod
		c.back = c.back[:n-1]
		return p
	}
	p := c.pods[c.next]
	c.next++
	return p
}

// createClaim opens a new NodeClaim for one pod of pc in the cheapest pool
// of the tier that can make one, and returns it (nil if none can).
func (s *solver) createClaim(pc *pclass, tier []*pcPool, zp []int) *snode {
	var best *snode
	var bestDec decision
	bestCost := inf
	var proposed map[*cpool]bool // twin sets that already proposed
	for _, pp := range tier {
		tw := pp.pool.twin
		if tw != nil && proposed[tw] {
			continue
		}
		n, d := s.proposeClaim(pc, pp, zp)
		if n != nil && tw != nil {
			if proposed == nil {
				proposed = map[*cpool]bool{}
			}
			proposed[tw] = true
		}
		cost := inf
		if n != nil {
			cost = podShareCost(pc.req, n.target, n.zones, n.cts)
		}
		if n != nil && cost < bestCost {
			best, bestDec, bestCost = n, d, cost
		}
		if len(tier) == 1 {
			break
		}
	}
	if best == nil {
		return nil
	}
	s.registerClaim(best)
	s.place(pc, best, bestDec, s.nextPod(pc.cls))
	return best
}

// proposeClaim builds (without registering) a new NodeClaim of pool pp for
// one pod of pc, with the decision to place it; cost ranks proposals.
func (s *solver) proposeClaim(pc *pclass, pp *pcPool, zp []int) (*snode, decision) {
	p := pp.pool
	lf := &pc.lastFail[p.idx]
	if p.nodesLimit >= 0 && p.limits[p.nodesLimit].remaining < 1 {
		*lf = failInfo{why: fwLimits, msg: "nodes"}
		return nil, decision{}
	}
	fresh := len(s.nodes)
	for _, r := range pc.hostG {
		if !groupOK(r.g, fresh, r.own, r.member, true) {
			*lf = failInfo{why: fwTopoHost, group: r.g}
			return nil, decision{}
		}
	}
	for _, a := range pp.alts {
		if !pc.zoneRel {
			t, why := s.chooseTarget(pc, p, a, a.zones, a.cts)
			if t == nil {
				*lf = failInfo{why: why}
				continue
			}
			n := s.newSnode(p, t, a.zones, a.cts)
			d := s.canPlaceNew(pc, n, zp)
			if !d.ok {
				*lf = failInfo{why: d.why, group: d.grp}
				continue
			}
			return n, d
		}
		for _, z := range zp {
			if !a.zones.has(z) {
				continue
			}
			if g := s.zoneBlock(pc, z); g != nil {
				*lf = failInfo{why: fwTopoZone, group: g}
				continue
			}
			zm := zmask(1) << uint(z)
			t, why := s.chooseTarget(pc, p, a, zm, a.cts)
			if t == nil {
				if lf.why != fwTopoZone {
					*lf = failInfo{why: why}
				}
				continue
			}
			n := s.newSnode(p, t, zm, a.cts)
			d := s.canPlaceNew(pc, n, zp)
			if !d.ok {
				*lf = failInfo{why: d.why, group: d.grp}
				continue
			}
			return n, d
		}
	}
	return nil, decision{}
}

func (s *solver) newSnode(p *cpool, t *ctype, zones zmask, cts ctmask) *snode {
	n := &snode{
		id: len(s.nodes), kind: nkNew, pool: p, alloc: t.alloc, target: t,
		types: p.allTypes.clone(), zones: zones, cts: cts, zone: -1, ct: -1,
	}
	if c, ok := cts.only(); ok {
		n.ct = c
	}
	if len(p.limits) > 0 {
		n.reserved = slices.Clone(t.capLimit)
	}
	return n
}

// registerClaim adds a proposed NodeClaim to the plan.
func (s *solver) registerClaim(n *snode) {
	n.id = len(s.nodes)
	s.nodes = append(s.nodes, n)
	p := n.pool
	s.poolAll[p.idx] = append(s.poolAll[p.idx], int32(n.id))
	if z, ok := n.zones.only(); ok {
		n.zone = -1
		s.narrowZones(n, 1<<uint(z))
	} else {
		s.poolUnpinned[p.idx] = append(s.poolUnpinned[p.idx], int32(n.id))
	}
	for i := range p.limits {
		p.limits[i].remaining -= n.reserved[i]
	}
	s.claimSeq++
	if s.trial != nil {
		s.trial.created = append(s.trial.created, n)
		n.snapGen = s.trial.gen
	}
}

// chooseTarget picks the instance type a new NodeClaim is filled up to:
// the cheapest way to serve the pool's remaining demand with nodes of one
// type (at least one node, at least as many as the anchors still need),
// preferring the larger type among near-equal costs. It returns nil and
// the reason when no type can hold the pod.
func (s *solver) chooseTarget(pc *pclass, p *cpool, a *classAlt, zones zmask, cts ctmask) (*ctype, failWhy) {
	// Claims are filled as they are made, so the demand left is what new
	// claims must hold.
	demand := s.demand[p.idx]
	var dfree rvec
	for d := range nres {
		dfree[d] = max(demand[d], 0)
	}
	k := math.Max(1, s.forcedNodes(p))
	costs := s.costBuf[:0]
	best := inf
	why := fwOffering
	a.types.each(func(i int) {
		t := p.types[i]
		price := t.priceIn(zones, cts)
		if price == inf {
			costs = append(costs, inf)
			return
		}
		if !s.limitsAllow(p, t) {
			if why == fwOffering {
				why = fwLimits
			}
			costs = append(costs, inf)
			return
		}
		nodes := k
		for d := range nres {
			if t.alloc[d] > 0 && dfree[d] > 0 {
				if v := float64(dfree[d]) / float64(t.alloc[d]); v > nodes {
					nodes = v
				}
			}
		}
		c := price * nodes
		costs = append(costs, c)
		if c < best {
			best = c
		}
	})
	s.costBuf = costs
	if best == inf {
		return nil, why
	}
	if k <= 1 && s.knobs.trial {
		if t := s.chooseByTrial(pc, p, a, zones, cts, costs, best); t != nil {
			return t, fwNone
		}
	}
	limit := best * (1 + s.knobs.tol)
	var pick *ctype
	j := 0
	a.types.each(func(i int) {
		c := costs[j]
		j++
		if c > limit {
			return
		}
		t := p.types[i]
		if pick == nil || larger(t, pick) {
			pick = t
		}
	})
	return pick, fwNone
}

// trialCandidates bounds how many instance types chooseByTrial fills.
const trialCandidates = 12

// typeCost is a candidate type with its cost for a claim.
type typeCost struct {
	t    *ctype
	cost float64
}

// chooseByTrial picks the target among the cheapest types for the demand
// (and the cheapest of each memory-per-cpu band) by filling each, on paper,
// with the pending pods of the pool: the type whose fill is worth the most
// per dollar wins (pods are worth their cheapest fractional price), the
// larger at near-equal worth.
func (s *solver) chooseByTrial(pc *pclass, p *cpool, a *classAlt, zones zmask, cts ctmask, costs []float64, best float64) *ctype {
	cands := s.trialCands[:0]
	j := 0
	a.types.each(func(i int) {
		c := costs[j]
		j++
		if c < inf {
			cands = append(cands, typeCost{p.types[i], c})
		}
	})
	s.trialCands = cands
	if len(cands) <= 1 {
		return nil
	}
	slices.SortStableFunc(cands, func(x, y typeCost) int { return cmp.Compare(x.cost, y.cost) })
	short := s.trialShort[:0]
	var bandSeen [6]int
	for i, c := range cands {
		band := memBand(c.t)
		if i < trialCandidates/2 || bandSeen[band] < 2 {
			short = append(short, c.t)
			bandSeen[band]++
		}
		if len(short) >= trialCandidates {
			break
		}
	}
	s.trialShort = short
	counts, values := s.pendingShapes(pc, p, zones)
	seedValue := s.trialValue(pc, p, zones)
	var pick *ctype
	pickRatio := 0.0
	left := s.trialLeft
	for _, t := range short {
		left = append(left[:0], counts...)
		worth := seedValue + s.trialFill(t, t.priceIn(zones, cts), pc.req, left, values)
		ratio := worth / t.priceIn(zones, cts)
		if pick == nil || ratio > pickRatio*(1+s.knobs.tol) || ratio >= pickRatio*(1-s.knobs.tol) && larger(t, pick) {
			if ratio > pickRatio {
				pickRatio = ratio
			}
			pick = t
		}
	}
	s.trialLeft = left
	return pick
}

// pendingShapes counts the pending pods per shape whose first tier holds
// pool p (less the seed pod of pc, if any), with their worth, and sets the
// gate values trialFill reads.
func (s *solver) pendingShapes(pc *pclass, p *cpool, zones zmask) (counts []int, values []float64) {
	counts = s.trialCounts[:0]
	values = s.trialValues[:0]
	gates := s.gateValues[:0]
	for _, sh := range s.shapes {
		n := 0
		v := 0.0
		var gateClass *pclass
		for _, c := range sh.classes {
			if !s.pending(c) {
				continue
			}
			cp := s.curPC(c)
			if !cp.inFirstTier(p) {
				continue
			}
			if v == 0 {
				v = s.trialValue(cp, p, zones)
				gateClass = cp
			}
			n += s.trialCap(cp, len(c.pods)-c.next+len(c.back))
		}
		if pc != nil && sh.req == pc.req && n > 0 && slices.Contains(sh.classes, pc.cls) {
			n-- // the seed itself
		}
		counts = append(counts, n)
		values = append(values, v)
		gv := 0.0
		if gateClass != nil {
			gv = s.podValue(gateClass, p)
		}
		gates = append(gates, gv)
	}
	s.trialCounts, s.trialValues, s.gateValues = counts, values, gates
	return counts, values
}

// retargetCandidates bounds how many instance types retarget fills.
const retargetCandidates = 8

// retarget chooses a claim's target again once a pod pinned it to one
// zone: the target was chosen at the cheapest prices over every zone, and
// in the pinned zone another type (spot prices differ by zone) may serve
// the claim's pods and the pending ones better. Candidates are the types
// that hold what the claim has, densest in value per dollar at the zone's
// resource prices, judged like chooseByTrial by filling each on paper; the
// current target stays unless another is worth more per dollar.
func (s *solver) retarget(n *snode) {
	p := n.pool
	if !s.knobs.retarget || !s.knobs.trial || !s.knobs.lambda || s.lambdaZ == nil || len(p.limits) > 0 || n.zone < 0 {
		return
	}
	l := s.lambdaZ[p.idx][n.zone]
	type cand struct {
		t       *ctype
		density float64
	}
	var cands []cand
	n.types.each(func(i int) {
		t := p.types[i]
		if !n.used.fits(t.alloc) {
			return
		}
		pr := t.priceIn(n.zones, n.cts)
		if math.IsInf(pr, 1) || !(pr > 0) {
			return
		}
		cands = append(cands, cand{t, (l[0]*float64(t.alloc[rCPU]) + l[1]*float64(t.alloc[rMem])) / pr})
	})
	if len(cands) <= 1 {
		return
	}
	slices.SortStableFunc(cands, func(x, y cand) int { return cmp.Compare(y.density, x.density) })
	if len(cands) > retargetCandidates {
		cands = cands[:retargetCandidates]
	}
	if !slices.ContainsFunc(cands, func(c cand) bool { return c.t == n.target }) && n.types.has(n.target.idx) && n.used.fits(n.target.alloc) {
		cands = append(cands, cand{t: n.target})
	}
	counts, values := s.pendingShapes(nil, p, n.zones)
	cur := 0.0
	for _, pc := range n.podPC {
		cur += s.trialValue(pc, p, n.zones)
	}
	left := s.trialLeft
	ratioOf := func(t *ctype) float64 {
		left = append(left[:0], counts...)
		pr := t.priceIn(n.zones, n.cts)
		return (cur + s.trialFill(t, pr, n.used, left, values)) / pr
	}
	pick, best := n.target, -1.0
	if n.types.has(n.target.idx) && n.used.fits(n.target.alloc) {
		best = ratioOf(n.target)
	}
	for _, c := range cands {
		if c.t == n.target {
			continue
		}
		if r := ratioOf(c.t); r > best*(1+s.knobs.tol) {
			pick, best = c.t, r
		}
	}
	s.trialLeft = left
	n.target, n.alloc = pick, pick.alloc
}

// trialCap bounds how many of a class's pending pods one claim can take,
// as far as its topology says: a zone spread leaves a zone about its share,
// hostname anti-affinity or spread among themselves maxSkew per node.
func (s *solver) trialCap(pc *pclass, n int) int {
	if c := pc.cls; c.quotaG != nil {
		most := int32(0)
		for z := range c.quota {
			most = max(most, c.quota[z]-c.quotaUsed[z])
		}
		return min(n, int(most))
	}
	for _, r := range pc.zoneG {
		g := r.g
		if g.kind == gSpread && (r.own || r.member) {
			m := max(g.univZones.count(), 1)
			n = min(n, (n+m-1)/m+int(g.maxSkew))
		}
	}
	for _, r := range pc.hostG {
		g := r.g
		if r.own && r.member && g.kind == gAnti {
			n = min(n, 1)
		}
		if r.own && r.member && g.kind == gSpread {
			n = min(n, int(g.maxSkew))
		}
	}
	return n
}

// memBand classes a type by memory per cpu (GiB per core).
func memBand(t *ctype) int {
	if t.alloc[rCPU] <= 0 {
		return 5
	}
	r := float64(t.alloc[rMem]) / float64(1<<30) / (float64(t.alloc[rCPU]) / 1000)
	switch {
	case r < 2.5:
		return 0
	case r < 5:
		return 1
	case r < 10:
		return 2
	case r < 20:
		return 3
	}
	return 4
}

// trialFill fills a type on paper from the pending shape counts, the way
// fill would (ignoring topology), and returns the worth of what it took.
func (s *solver) trialFill(t *ctype, price float64, seed rvec, left []int, values []float64) float64 {
	used := seed
	worth := 0.0
	var inv [nres]float64
	for d := range nres {
		if t.alloc[d] > 0 {
			inv[d] = 1 / float64(t.alloc[d])
		}
	}
	for {
		s.evals++
		var free rvec
		for d := range nres {
			free[d] = t.alloc[d] - used[d]
		}
		bi := -1
		bestScore := 0.0
		for i, sh := range s.shapes {
			if left[i] == 0 || !sh.req.fits(free) {
				continue
			}
			if s.knobs.gate > 0 && s.gateValues[i] > 0 && s.gateValues[i] < s.knobs.gate*price*share(sh.req, t.alloc) {
				continue
			}
			uc := float64(used[rCPU]+sh.req[rCPU]) * inv[rCPU]
			um := float64(used[rMem]+sh.req[rMem]) * inv[rMem]
			sc := -(min(uc, um) + s.knobs.fillAlpha*(uc+um))
			if bi < 0 || sc < bestScore {
				bi, bestScore = i, sc
			}
		}
		if bi < 0 {
			return worth
		}
		// Take as many of the shape as keep the same choice cheap: one at a
		// time is exact but slow; a few at a time is close enough.
		used = used.add(s.shapes[bi].req)
		left[bi]--
		worth += values[bi]
	}
}

// larger orders types by cpu, then memory, then cheaper first.
func larger(a, b *ctype) bool {
	if a.alloc[rCPU] != b.alloc[rCPU] {
		return a.alloc[rCPU] > b.alloc[rCPU]
	}
	if a.alloc[rMem] != b.alloc[rMem] {
		return a.alloc[rMem] > b.alloc[rMem]
	}
	return a.minPrice < b.minPrice
}

// limitsAllow reports whether one more node of type t keeps the pool
// within its limits.
func (s *solver) limitsAllow(p *cpool, t *ctype) bool {
	for i := range p.limits {
		if t.capLimit[i] > p.limits[i].remaining {
			return false
		}
	}
	return true
}

// share is the fraction of alloc a request takes in its dominant resource.
func share(req, alloc rvec) float64 {
	sh := 0.0
	for d := range nres {
		if req[d] > 0 && alloc[d] > 0 {
			if v := float64(req[d]) / float64(alloc[d]); v > sh {
				sh = v
			}
		}
	}
	return sh
}

// podShareCost is the share of a type's price one pod takes (by its
// dominant resource): how tiers of equal-weight pools are ranked.
func podShareCost(req rvec, t *ctype, zones zmask, cts ctmask) float64 {
	share := 0.0
	for d := range nres {
		if req[d] > 0 && t.alloc[d] > 0 {
			if v := float64(req[d]) / float64(t.alloc[d]); v > share {
				share = v
			}
		}
	}
	return t.priceIn(zones, cts) * share
}

// resetShapes makes every class a fill candidate again (after pods were
// taken back off claims).
func (s *solver) resetShapes() {
	for _, sh := range s.shapes {
		sh.classes = append(sh.classes[:0], sh.all...)
	}
}

// knobs are the construction's tunable heuristics. Small problems are
// solved with several settings and the cheapest plan kept.
type knobs struct {
	tol       float64 // relative cost band for preferring larger targets
	fillAlpha float64 // weight of total fill against balance when filling
	trial     bool    // pick targets by trial fills
	zoneFirst bool    // place zone-constrained pods before others
	shuffle   uint64  // seeded tie-break of the class order (0: none)
	gate      float64 // worthIt threshold (0: off)
	lambda    bool    // value pods at the pools' resource prices
	retarget  bool    // choose a claim's target again when a pod pins its zone
	zoneShift int     // rotates the zone tie-break of zonePref (0: zone order)
}

var defaultKnobs = knobs{tol: targetTolerance, fillAlpha: 0.25, trial: true, gate: 0.8, lambda: true, retarget: true}

// secondKnobs is the setting of the one extra re-solve of a small input
// (runBest): the default with zone-constrained pods placed first and a
// wider band for larger targets, so the spread pods settle each zone's
// large claims before the zone-free pods fill them (fewer, fuller
// claims per zone where daemonsets make every node dear).
var secondKnobs = knobs{tol: 0.05, fillAlpha: 0.25, trial: true, zoneFirst: true, gate: 0.8, lambda: true, retarget: true}

// knobVariants are the settings bigRepack tries, default first. With
// priced, each setting also values pods at the resource prices and
// retargets claims a pod pins to a zone (what the default does): large
// problems, which try only the first few settings before the budget or the
// gains run out, get those; small ones the plain settings.
func knobVariants(seed uint64, priced bool) []knobs {
	base := []knobs{
		{tol: targetTolerance, fillAlpha: 1, trial: true},
		{tol: targetTolerance, fillAlpha: 0.25, trial: true, shuffle: seed*2 + 3},
		{tol: 0.02, fillAlpha: 0.25, trial: true, gate: 0.9},
		{tol: targetTolerance, fillAlpha: 0.25, trial: true, zoneFirst: true, gate: 0.8},
		{tol: targetTolerance, fillAlpha: 0.1, trial: false, gate: 0.7},
		{tol: 0.05, fillAlpha: 0.5, trial: true, shuffle: seed*2 + 1, gate: 0.85},
		{tol: 0.01, fillAlpha: 0.25, trial: false, zoneFirst: true, gate: 0.8},
	}
	if !priced {
		return append([]knobs{defaultKnobs}, base...)
	}
	out := []knobs{defaultKnobs}
	for _, k := range base {
		k.lambda, k.retarget = true, true
		out = append(out, k)
	}
	return out
}

// splitmix is a seeded hash (SplitMix64), for deterministic tie-breaks.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// trialValue is what a pod is worth when judging targets: its share of the
// pool's cheapest mix of types (λ·request) when resource prices are on,
// else its cheapest fractional price on a single type.
func (s *solver) trialValue(pc *pclass, p *cpool, zones zmask) float64 {
	if s.knobs.lambda && s.lambda != nil {
		if v := s.lambdaValue(pc.req, p, zones); v > 0 {
			return v
		}
	}
	return s.podValue(pc, p)
}
