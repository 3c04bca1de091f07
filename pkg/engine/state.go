package engine

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// nodeKind tells existing nodes, in-flight NodeClaims and planned
// NodeClaims apart.
type nodeKind uint8

const (
	nkExisting nodeKind = iota
	nkInFlight
	nkNew
)

// snode is a node of the simulation.
type snode struct {
	id   int
	kind nodeKind
	name string
	pool *cpool // nil for unmanaged existing nodes
	// alloc is what pods may use (new: the target type's allocatable net of
	// daemonsets); used is what they use.
	alloc, used rvec
	// labels are the labels the node carries for sure (existing: all;
	// in-flight: those its requirements pin).
	labels map[string]string
	zone   int // zone index, -1 while unknown
	ct     int // capacity type index, -1 while unknown
	taints []corev1.Taint
	// New NodeClaims only.
	target *ctype
	types  bitset // options still allowed by the pods' requirements
	zones  zmask
	cts    ctmask
	free   requirements.Requirements
	pinned map[string]string
	elig   map[int]bool
	// reserved is what the claim holds against its pool's limits.
	reserved []int64
	ports    []hostPort
	// pods lists the pending pods placed here, in binding order, with the
	// placement class each went in as.
	pods  []int32
	podPC []*pclass
	// existing pods' requests are in used; existingPods counts them.
	existingPods int
	removed      bool
	// draining: an improvement trial is emptying the claim.
	draining bool
	snapGen  int
	// listed: the claim sits in its pool's zone list (pinned).
	listed bool
}

// gref is a topology group as one placement class sees it.
type gref struct {
	g      *tgroup
	own    bool
	member bool
}

// classAlt is one node selector term of a placement class in one pool.
type classAlt struct {
	term  requirements.Requirements
	ai    *altInfo
	types bitset
	zones zmask
	cts   ctmask
	free  requirements.Requirements
}

// pcPool is a pool a placement class may use.
type pcPool struct {
	pool *cpool
	alts []*classAlt
}

// poolReject says why a pool cannot take a placement class at all.
type poolReject struct {
	pool *cpool
	code ReasonCode
	msg  string
}

// pclass is a class of pods placed with one subset of their preferences
// active: the unit of placement.
type pclass struct {
	id   int
	cls  *cclass
	sc   *sclass
	mask uint32
	req  rvec
	// terms are the required node selector terms, each narrowed by the
	// active preferred node affinity terms.
	terms       []requirements.Requirements
	avoidPrefer bool
	pools       []*pcPool
	rejects     []poolReject
	owned       []int
	// Groups that can block a placement, by the kind of their key.
	zoneG, hostG, ctG, otherG []gref
	// zoneRel: the pod's zone matters (it owns or is counted by a zone
	// group), so a new node must be pinned to one zone before it lands.
	zoneRel, ctRel bool
	otherKeys      []string
	// needsZone: the pod owns a zone spread or affinity, so its node must
	// have a zone.
	needsZone bool
	useCursor bool
	cursors   []int32
	// exCompat caches label/taint compatibility with existing and in-flight
	// nodes (by node id): 1 yes, 2 no.
	exCompat []uint8
	// anchor: pods of this class need nodes of their own (hostname
	// anti-affinity or hostname spread among themselves).
	anchor       bool
	anchorGroups []*tgroup
	// eligG are the spreads with node filters (nodeAffinityPolicy or
	// nodeTaintsPolicy Honor) that count the pod without it owning them.
	eligG []*tgroup
	// lastFail records why the last new-node attempt failed, per pool.
	lastFail []failInfo
	// value caches podValue per pool (-1: not computed).
	value []float64
	// firstTier holds the pools (by idx) among the class's highest-weight
	// pools.
	firstTier bitset
}

type failInfo struct {
	why   failWhy
	group *tgroup
	msg   string
}

// failWhy says why a placement check failed.
type failWhy uint8

const (
	fwNone failWhy = iota
	fwResources
	fwCompat
	fwTaint
	fwPorts
	fwVolume
	fwTopoZone
	fwTopoHost
	fwTopoCT
	fwTopoOther
	fwMinValues
	fwLimits
	fwOffering
	fwNoZone
)

// monotone reports failures that persist as a node fills up during
// construction (so a cursor may move past the node).
func (w failWhy) monotone() bool {
	switch w {
	case fwTopoZone, fwTopoCT, fwTopoOther:
		return false
	}
	return true
}

// pclassFor returns the placement class of c with preference mask m.
func (s *solver) pclassFor(c *cclass, m uint32) *pclass {
	if pc, ok := c.pcs[m]; ok {
		return pc
	}
	sc := c.sc
	pc := &pclass{id: len(s.pclasses), cls: c, sc: sc, mask: m, req: sc.req, useCursor: true}
	c.pcs[m] = pc
	s.pclasses = append(s.pclasses, pc)
	// Node selector terms narrowed by active node-affinity preferences.
	var prefTerm requirements.Requirements
	for i, p := range sc.prefs {
		if m&(1<<uint(i)) == 0 {
			continue
		}
		switch p.kind {
		case prefNodeAffinity:
			prefTerm = prefTerm.Intersection(p.term)
		case prefTaint:
			pc.avoidPrefer = true
		default:
			pc.owned = append(pc.owned, p.group)
		}
	}
	for _, t := range sc.terms {
		if prefTerm.Len() > 0 {
			t = t.Intersection(prefTerm)
			if !t.Satisfiable() {
				continue
			}
		}
		pc.terms = append(pc.terms, t)
	}
	pc.owned = append(pc.owned, sc.hard...)
	slices.Sort(pc.owned)
	pc.owned = slices.Compact(pc.owned)
	// Groups by key kind.
	seen := map[int]int{}
	var refs []gref
	addRef := func(gi int, own, member bool) {
		if j, ok := seen[gi]; ok {
			refs[j].own = refs[j].own || own
			refs[j].member = refs[j].member || member
			return
		}
		seen[gi] = len(refs)
		refs = append(refs, gref{g: s.groups[gi], own: own, member: member})
	}
	for _, gi := range pc.owned {
		addRef(gi, true, false)
	}
	for _, gi := range c.member {
		addRef(gi, false, true)
	}
	for _, r := range refs {
		g := r.g
		if g.kind == gSpread && r.member && !r.own && (g.filterTerms != nil || g.honorTaints) {
			pc.eligG = append(pc.eligG, g)
		}
		// Affinity membership blocks only while a lone first owner waits
		// for company (see groupOK); it still has to be checked.
		blocks := true
		switch g.kk {
		case kindZone, kindZoneID:
			pc.zoneRel = true
			if r.own && g.kind != gAnti {
				pc.needsZone = true
			}
			if blocks {
				pc.zoneG = append(pc.zoneG, r)
			}
		case kindCapacity:
			pc.ctRel = true
			if blocks {
				pc.ctG = append(pc.ctG, r)
			}
		case kindHostname:
			if blocks {
				pc.hostG = append(pc.hostG, r)
			}
			if r.own && g.kind == gAffinity {
				pc.useCursor = false
			}
			if r.own && r.member && (g.kind == gAnti || g.kind == gSpread) {
				pc.anchor = true
				pc.anchorGroups = append(pc.anchorGroups, g)
			}
		default:
			if !slices.Contains(pc.otherKeys, g.key) {
				pc.otherKeys = append(pc.otherKeys, g.key)
			}
			if blocks {
				pc.otherG = append(pc.otherG, r)
			}
			pc.useCursor = false
		}
	}
	// Pools.
	pc.lastFail = make([]failInfo, len(s.pools))
	pc.firstTier = newBitset(len(s.pools))
	// Twins of a pool (see cpool.twin) get its answer unless a term names
	// the pool.
	var twinAlts map[*cpool][]*classAlt
	var twinRej map[*cpool]poolReject
	for _, p := range s.pools {
		if rej, ok := s.poolReject(pc, p); !ok {
			pc.rejects = append(pc.rejects, rej)
			continue
		}
		shareTwins := p.twin != nil && !slices.ContainsFunc(pc.terms, p.namedBy)
		if tw := p.twin; shareTwins {
			if alts, ok := twinAlts[tw]; ok {
				pc.addPool(&pcPool{pool: p, alts: alts})
				continue
			}
			if rej, ok := twinRej[tw]; ok {
				rej.pool = p
				pc.rejects = append(pc.rejects, rej)
				continue
			}
		}
		pp := &pcPool{pool: p}
		var firstRej *poolReject
		for _, t := range pc.terms {
			ai := s.termCompat(p, t)
			if !ai.ok {
				if firstRej == nil {
					code := NoCompatibleNodePool
					if ai.noOffering {
						code = NoAvailableOffering
					}
					msg := ai.failMsg
					if ai.failKey != "" {
						msg = "requirement on " + ai.failKey + ": " + ai.failMsg
					}
					firstRej = &poolReject{pool: p, code: code, msg: msg}
				}
				continue
			}
			a := &classAlt{term: t, ai: ai, types: ai.types.clone(), zones: ai.zones & sc.vol, cts: ai.cts, free: ai.free}
			n := 0
			a.types.each(func(i int) {
				if !sc.req.fits(p.types[i].alloc) {
					a.types.clear(i)
				} else {
					n++
				}
			})
			if n == 0 {
				if firstRej == nil {
					firstRej = &poolReject{pool: p, code: ResourcesExceedAllTypes, msg: s.tooBigMessage(p, ai, sc.req)}
				}
				continue
			}
			if a.zones != ai.zones {
				n = 0
				a.types.each(func(i int) {
					if p.types[i].zones&a.zones == 0 {
						a.types.clear(i)
					} else {
						n++
					}
				})
				if n == 0 {
					if firstRej == nil {
						firstRej = &poolReject{pool: p, code: VolumeZoneConflict, msg: s.volumeMessage(p, ai, sc)}
					}
					continue
				}
			}
			pp.alts = append(pp.alts, a)
		}
		if len(pp.alts) == 0 {
			if firstRej == nil {
				firstRej = &poolReject{pool: p, code: NoCompatibleNodePool, msg: "no node selector term is satisfiable"}
			}
			pc.rejects = append(pc.rejects, *firstRej)
			if tw := p.twin; shareTwins {
				if twinRej == nil {
					twinRej = map[*cpool]poolReject{}
				}
				twinRej[tw] = *firstRej
			}
			continue
		}
		if tw := p.twin; shareTwins {
			if twinAlts == nil {
				twinAlts = map[*cpool][]*classAlt{}
			}
			twinAlts[tw] = pp.alts
		}
		pc.addPool(pp)
	}
	return pc
}

// addPool appends a pool the class can use (pools come highest weight
// first) and records whether it is in the first tier.
func (pc *pclass) addPool(pp *pcPool) {
	if len(pc.pools) == 0 || pp.pool.weight == pc.pools[0].pool.weight {
		pc.firstTier.set(pp.pool.idx)
	}
	pc.pools = append(pc.pools, pp)
}

// poolReject checks the pool-wide conditions: support and taints.
func (s *solver) poolReject(pc *pclass, p *cpool) (poolReject, bool) {
	if p.unsupportedBroken != "" {
		return poolReject{pool: p, code: NoCompatibleNodePool, msg: "the pool can make no node: " + p.unsupportedBroken}, false
	}
	if p.unsupported != "" {
		return poolReject{pool: p, code: Unsupported, msg: p.unsupported}, false
	}
	if len(p.types) == 0 {
		msg := "the pool has no instance type"
		switch {
		case p.noOffer > 0:
			return poolReject{pool: p, code: NoAvailableOffering, msg: fmt.Sprintf("none of the pool's %d instance types that pass its requirements has an available offering", p.noOffer)}, false
		case p.dsTooBig > 0:
			msg = fmt.Sprintf("the daemonset overhead exceeds the allocatable of all %d instance types", p.dsTooBig)
		case len(p.np.InstanceTypes) > 0:
			msg = fmt.Sprintf("none of the pool's %d instance types passes its requirements", len(p.np.InstanceTypes))
		}
		return poolReject{pool: p, code: NoCompatibleNodePool, msg: msg}, false
	}
	if t, ok := tolerates(pc.sc.tols, p.taints); !ok {
		return poolReject{pool: p, code: NoCompatibleNodePool, msg: "taint " + taintString(t) + " is not tolerated"}, false
	}
	if pc.avoidPrefer && !toleratesPrefer(pc.sc.tols, p.taints) {
		return poolReject{pool: p, code: NoCompatibleNodePool, msg: "a PreferNoSchedule taint is not tolerated (preference)"}, false
	}
	return poolReject{}, true
}

func (s *solver) tooBigMessage(p *cpool, ai *altInfo, req rvec) string {
	var big *ctype
	ai.types.each(func(i int) {
		t := p.types[i]
		if big == nil || t.alloc[rCPU] > big.alloc[rCPU] || t.alloc[rCPU] == big.alloc[rCPU] && t.alloc[rMem] > big.alloc[rMem] {
			big = t
		}
	})
	if big == nil {
		return "no instance type is compatible"
	}
	short := ""
	for d := 0; d < s.res.n; d++ {
		if req[d] > big.alloc[d] {
			short = string(s.res.names[d])
			break
		}
	}
	msg := fmt.Sprintf("requests %s exceed every compatible instance type (largest %s allocatable %s", s.res.describe(req), big.name, s.res.describe(big.alloc.add(big.ds)))
	if !big.ds.isZero() {
		msg += fmt.Sprintf(", of which daemonsets take %s", s.res.describe(big.ds))
	}
	msg += ")"
	if short != "" {
		msg += "; short on " + short
	}
	return msg
}

func (s *solver) volumeMessage(p *cpool, ai *altInfo, sc *sclass) string {
	return fmt.Sprintf("volumes %s allow zones [%s] but the pool offers fitting types only in [%s]",
		joinQuoted(sc.volNames), joinSpace(s.zoneNames(sc.vol&allZonesOf(s))), joinSpace(s.zoneNames(ai.zones)))
}

func allZonesOf(s *solver) zmask {
	if len(s.zones) >= 64 {
		return allZones
	}
	return zmask(1)<<uint(len(s.zones)) - 1
}

func joinSpace(vs []string) string {
	out := ""
	for i, v := range vs {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}

// poolEntry returns the class's entry for a pool, or nil.
func (pc *pclass) poolEntry(p *cpool) *pcPool {
	for _, pp := range pc.pools {
		if pp.pool == p {
			return pp
		}
	}
	return nil
}

func (pc *pclass) owns(gi int) bool {
	for _, o := range pc.owned {
		if o == gi {
			return true
		}
	}
	return false
}
