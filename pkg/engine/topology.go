package engine

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// gkind is the kind of a topology group.
type gkind uint8

const (
	gSpread   gkind = iota // topology spread (DoNotSchedule, or a ScheduleAnyway preference)
	gAffinity              // pod affinity
	gAnti                  // pod anti-affinity
)

func (k gkind) String() string {
	switch k {
	case gSpread:
		return "topology spread"
	case gAffinity:
		return "pod affinity"
	}
	return "pod anti-affinity"
}

// groupSpec identifies a topology group: which pods it counts (namespaces
// and selector), by which node label, and how.
type groupSpec struct {
	kind  gkind
	key   string
	nsAll bool
	ns    []string
	nsSel labels.Selector
	sel   labels.Selector
	// Spread only.
	maxSkew, minDomains int32
	// filterTerms (nodeAffinityPolicy Honor) and filterTols (nodeTaintsPolicy
	// Honor) restrict the nodes whose pods count and whose domains exist.
	filterTerms []requirements.Requirements
	filterTols  []corev1.Toleration
	honorTaints bool
}

// tgroup is a topology group with its counts. A domain is a zone index
// (zone and zone-id keys), a capacity-type index, a node id (hostname) or a
// value index (other keys).
type tgroup struct {
	groupSpec
	idx int
	// gkey identifies the group's spec across solves (Model caches member
	// counts of existing pods by it).
	gkey string
	kk   keyKind
	// count[d] is the number of member pods counted in domain d; owners[d]
	// the number of pods in d that own the group (as a requirement or an
	// active preference).
	count  []int32
	owners []int32
	// ownMem[d] counts the owners in d that are also members.
	ownMem []int32
	// total counts every member pod placed or existing, whether or not its
	// domain is known.
	total int32
	// Universe of domains for spread minimums.
	univZones zmask
	univCTs   ctmask
	univOther []bool
	values    map[string]int
	// elig caches, per pool, whether new nodes count (spread filters).
	elig []eligInfo
	// pendingAnchors counts the unplaced pods that own the group and match
	// it (hostname anti-affinity or spread among themselves): each needs a
	// node of its own (per maxSkew).
	pendingAnchors int
	// pendingOwners counts the unplaced pods that own the group as a
	// requirement. While some are pending, members keep the spread
	// balanced everywhere (an owner may still need any domain).
	pendingOwners int
	// first is the domain of a required-affinity owner placed by the
	// first-pod rule (no other matching pod existed), -1 if none.
	first int
}

type eligInfo struct {
	done   bool
	always bool
	never  bool
	alts   []*altInfo
}

// matchesNS reports whether pods of namespace ns can be members.
func (g *tgroup) matchesNS(s *solver, ns string) bool {
	if g.nsAll {
		return true
	}
	for _, n := range g.ns {
		if n == ns {
			return true
		}
	}
	if g.nsSel != nil {
		return g.nsSel.Matches(labels.Set(s.in.NamespaceLabels[ns]))
	}
	return false
}

func (g *tgroup) cnt(d int) int32 {
	if d < len(g.count) {
		return g.count[d]
	}
	return 0
}

func (g *tgroup) own(d int) int32 {
	if d < len(g.owners) {
		return g.owners[d]
	}
	return 0
}

func grow(v []int32, d int) []int32 {
	if d < len(v) {
		return v
	}
	n := max(2*len(v), d+1, 8)
	out := make([]int32, n)
	copy(out, v)
	return out
}

func (g *tgroup) addCount(d int, delta int32) {
	g.count = grow(g.count, d)
	g.count[d] += delta
}

func (g *tgroup) addOwner(d int, delta int32) {
	g.owners = grow(g.owners, d)
	g.owners[d] += delta
}

func (g *tgroup) addOwnMem(d int, delta int32) {
	g.ownMem = grow(g.ownMem, d)
	g.ownMem[d] += delta
}

func (g *tgroup) ownm(d int) int32 {
	if d < len(g.ownMem) {
		return g.ownMem[d]
	}
	return 0
}

// affinityHolds reports whether every required owner in domain d still has
// another matching pod there (or is the only matching pod anywhere).
func (g *tgroup) affinityHolds(d int) bool {
	if g.own(d) == 0 {
		return true
	}
	switch c := g.cnt(d); {
	case c >= 2:
		return true
	case c == 1:
		return g.ownm(d) == 0 || g.total == 1
	}
	return false
}

// spreadHolds reports whether domain d, if it holds required owners, is
// within maxSkew of the minimum.
func (g *tgroup) spreadHolds(d int) bool {
	return g.own(d) == 0 || g.cnt(d)-g.min() <= g.maxSkew
}

// min returns the smallest count over the spread universe (0 for hostname
// keys, where a fresh node is always a possible domain, and when the
// universe has fewer than minDomains domains).
func (g *tgroup) min() int32 {
	switch g.kk {
	case kindHostname:
		return 0
	case kindZone, kindZoneID:
		if g.univZones.count() < int(g.minDomains) {
			return 0
		}
		m := int32(-1)
		for z := 0; z < 64; z++ {
			if !g.univZones.has(z) {
				continue
			}
			if c := g.cnt(z); m < 0 || c < m {
				m = c
			}
		}
		return max(m, 0)
	case kindCapacity:
		n := 0
		m := int32(-1)
		for c := range nCT {
			if !g.univCTs.has(c) {
				continue
			}
			n++
			if v := g.cnt(c); m < 0 || v < m {
				m = v
			}
		}
		if n < int(g.minDomains) {
			return 0
		}
		return max(m, 0)
	default:
		n := 0
		m := int32(-1)
		for d, in := range g.univOther {
			if !in {
				continue
			}
			n++
			if v := g.cnt(d); m < 0 || v < m {
				m = v
			}
		}
		if n < int(g.minDomains) {
			return 0
		}
		return max(m, 0)
	}
}

// valueIndex returns the domain index of a value of an "other" key.
func (g *tgroup) valueIndex(v string) int {
	if g.values == nil {
		g.values = map[string]int{}
	}
	i, ok := g.values[v]
	if !ok {
		i = len(g.values)
		g.values[v] = i
	}
	return i
}

// group returns the index of the group with this spec, creating it.
func (s *solver) group(spec groupSpec) int {
	var kb keyBuilder
	kb.int(int64(spec.kind))
	kb.str(spec.key)
	if spec.nsAll {
		kb.str("*")
	} else {
		kb.int(int64(len(spec.ns)))
		for _, n := range spec.ns {
			kb.str(n)
		}
	}
	if spec.nsSel != nil {
		kb.str(spec.nsSel.String())
	}
	if labels.MatchesNothing(spec.sel) {
		kb.str("\x00nothing")
	} else {
		kb.str(spec.sel.String())
	}
	kb.int(int64(spec.maxSkew))
	kb.int(int64(spec.minDomains))
	kb.int(int64(len(spec.filterTerms)))
	for _, t := range spec.filterTerms {
		kb.str(t.String())
	}
	if spec.honorTaints {
		kb.int(int64(len(spec.filterTols)))
		for _, t := range spec.filterTols {
			kb.str(t.Key + "\x00" + string(t.Operator) + "\x00" + t.Value + "\x00" + string(t.Effect))
		}
	}
	key := string(kb.b)
	if i, ok := s.groupByKey[key]; ok {
		return i
	}
	g := &tgroup{groupSpec: spec, idx: len(s.groups), first: -1, gkey: key}
	switch k := classifyKey(spec.key); k {
	case kindZone, kindZoneID, kindCapacity, kindHostname:
		g.kk = k
	default:
		g.kk = kindOther
	}
	s.groups = append(s.groups, g)
	s.groupByKey[key] = g.idx
	// Index by one equality requirement so memberships need not test every
	// group against every pod.
	indexed := false
	if reqs, ok := spec.sel.Requirements(); ok {
		for _, r := range reqs {
			op := r.Operator()
			if (op == selection.In || op == selection.Equals || op == selection.DoubleEquals) && len(r.ValuesUnsorted()) == 1 {
				kv := kvKey{r.Key(), r.ValuesUnsorted()[0]}
				s.groupIndex[kv] = append(s.groupIndex[kv], g.idx)
				indexed = true
				break
			}
		}
	}
	if labels.MatchesNothing(spec.sel) {
		indexed = true // matches nothing: never a member
	}
	if !indexed {
		s.groupScan = append(s.groupScan, g.idx)
	}
	return g.idx
}

// finishGroups computes each spread group's universe of domains: the
// values of eligible existing nodes and every value a NodePool the owner
// could use (as its policies say) can give a new node.
func (s *solver) finishGroups() {
	for _, g := range s.groups {
		g.elig = make([]eligInfo, len(s.pools))
		if g.kind != gSpread {
			continue
		}
		for _, n := range s.nodes {
			if n.kind == nkNew {
				continue
			}
			if !s.existingEligible(g, n) {
				continue
			}
			switch g.kk {
			case kindZone, kindZoneID:
				if d, ok := s.domain(n, g); ok {
					g.univZones |= 1 << uint(d)
				}
			case kindCapacity:
				if d, ok := s.domain(n, g); ok {
					g.univCTs |= 1 << uint(d)
				}
			case kindOther:
				if d, ok := s.domain(n, g); ok {
					g.markOther(d)
				}
			}
		}
		for _, p := range s.pools {
			if p.unsupported != "" || len(p.types) == 0 {
				continue
			}
			if g.honorTaints {
				if _, ok := tolerates(g.filterTols, p.taints); !ok {
					continue
				}
			}
			zones, cts := p.zones, p.cts
			var types bitset
			if g.filterTerms != nil {
				zones, cts = 0, 0
				types = newBitset(len(p.types))
				for _, t := range g.filterTerms {
					ai := s.termCompat(p, t)
					if !ai.ok {
						continue
					}
					zones |= ai.zones
					cts |= ai.cts
					for w := range types {
						types[w] |= ai.types[w]
					}
				}
			} else {
				types = p.allTypes
			}
			switch g.kk {
			case kindZone, kindZoneID:
				g.univZones |= zones & p.zones
			case kindCapacity:
				g.univCTs |= cts & p.cts
			case kindOther:
				if v, ok := p.fixed[g.key]; ok {
					if !types.empty() {
						g.markOther(g.valueIndex(v))
					}
				} else if p.typeKeys[g.key] {
					types.each(func(i int) {
						if v, ok := p.types[i].labels[g.key]; ok {
							g.markOther(g.valueIndex(v))
						}
					})
				} else if r, ok := p.free[g.key]; ok && r.IsFinite() {
					for _, v := range r.Values() {
						g.markOther(g.valueIndex(v))
					}
				}
			}
		}
	}
}

func (g *tgroup) markOther(d int) {
	for len(g.univOther) <= d {
		g.univOther = append(g.univOther, false)
	}
	g.univOther[d] = true
}

// existingEligible reports whether pods on an existing node or in-flight
// NodeClaim count for a spread group (its nodeAffinity/nodeTaints policy).
func (s *solver) existingEligible(g *tgroup, n *snode) bool {
	if g.kind != gSpread {
		return true
	}
	if g.filterTerms != nil {
		ok := false
		for _, t := range g.filterTerms {
			if t.Matches(n.labels) == nil {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	if g.honorTaints {
		if _, ok := tolerates(g.filterTols, n.taints); !ok {
			return false
		}
	}
	return true
}

// domain returns the domain of a node for a group's key, if known.
func (s *solver) domain(n *snode, g *tgroup) (int, bool) {
	switch g.kk {
	case kindHostname:
		return n.id, true
	case kindZone:
		if n.zone >= 0 {
			return n.zone, true
		}
		return -1, false
	case kindZoneID:
		if n.kind == nkNew {
			if n.zone >= 0 && s.zones[n.zone].id != "" {
				return n.zone, true
			}
			return -1, false
		}
		if id, ok := n.labels[labelZoneID]; ok {
			if z, ok := s.zoneByID[id]; ok {
				return z, true
			}
		}
		return -1, false
	case kindCapacity:
		if n.ct >= 0 {
			return n.ct, true
		}
		return -1, false
	}
	if v, ok := s.otherValue(n, g.key); ok {
		return g.valueIndex(v), true
	}
	return -1, false
}

// otherValue is the value a node carries (or will carry) for a key other
// than zone, capacity type and hostname, when it is known.
func (s *solver) otherValue(n *snode, key string) (string, bool) {
	if n.kind != nkNew {
		v, ok := n.labels[key]
		return v, ok
	}
	p := n.pool
	if v, ok := p.fixed[key]; ok {
		return v, true
	}
	if v, ok := n.pinned[key]; ok {
		return v, true
	}
	if p.typeKeys[key] {
		// Known when every remaining option agrees.
		v, ok := "", false
		same := true
		n.types.each(func(i int) {
			if !same {
				return
			}
			tv, has := p.types[i].labels[key]
			if !has {
				same = false
				return
			}
			if !ok {
				v, ok = tv, true
			} else if tv != v {
				same = false
			}
		})
		if same && ok {
			return v, true
		}
		return "", false
	}
	if r := n.free.Get(key); r != nil {
		if vals := r.Values(); r.IsFinite() && len(vals) == 1 && !r.AllowsAbsent() {
			return vals[0], true
		}
	}
	return "", false
}

// eligFor returns the pool-level facts about which new nodes of pool p a
// filtered spread group counts.
func (s *solver) eligFor(g *tgroup, p *cpool) *eligInfo {
	e := &g.elig[p.idx]
	if e.done {
		return e
	}
	e.done = true
	if g.honorTaints {
		if _, ok := tolerates(g.filterTols, p.taints); !ok {
			e.never = true
		}
	}
	if !e.never && g.filterTerms != nil {
		for _, t := range g.filterTerms {
			if ai := s.termCompat(p, t); ai.ok {
				e.alts = append(e.alts, ai)
			}
		}
		if len(e.alts) == 0 {
			e.never = true
		}
	}
	e.always = !e.never && g.filterTerms == nil
	return e
}

// eligNarrow is how a claim settles whether a filtered spread group counts
// its pods: res is the answer; when narrow is set the claim must first
// narrow to types/zones/cts.
type eligNarrow struct {
	g      int
	res    bool
	narrow bool
	types  bitset
	zones  zmask
	cts    ctmask
}

// eligPlan decides, without changing the claim, whether a new claim whose
// options are types × zones × cts counts for a filtered spread group. When
// the options straddle the filter it narrows them to the side that keeps
// the target (eligible), or to the types outside the filter; ok is false
// when neither keeps the target.
func (s *solver) eligPlan(g *tgroup, n *snode, types bitset, zones zmask, cts ctmask) (eligNarrow, bool) {
	e := s.eligFor(g, n.pool)
	en := eligNarrow{g: g.idx}
	switch {
	case e.never:
		return en, true
	case e.always:
		en.res = true
		return en, true
	}
	disjoint := true
	for _, ai := range e.alts {
		if types.subsetOf(ai.types) && zones&^ai.zones == 0 && cts&^ai.cts == 0 && ai.free.Len() == 0 {
			en.res = true
			return en, true
		}
		if types.intersects(ai.types) && zones&ai.zones != 0 && cts&ai.cts != 0 {
			disjoint = false
		}
	}
	if disjoint {
		return en, true
	}
	t := n.target
	for _, ai := range e.alts {
		if ai.free.Len() > 0 || !ai.types.has(t.idx) || zones&ai.zones == 0 || cts&ai.cts == 0 {
			continue
		}
		if _, ok := t.cheapest(zones&ai.zones, cts&ai.cts); !ok {
			continue
		}
		en.res, en.narrow = true, true
		en.types = types.clone()
		en.types.and(ai.types)
		en.zones, en.cts = zones&ai.zones, cts&ai.cts
		return en, true
	}
	outside := types.clone()
	for _, ai := range e.alts {
		for w := range outside {
			if w < len(ai.types) {
				outside[w] &^= ai.types[w]
			}
		}
	}
	if outside.has(t.idx) {
		en.narrow = true
		en.types, en.zones, en.cts = outside, zones, cts
		return en, true
	}
	return en, false
}

// newEligible reports whether a new claim's pods count for a filtered
// spread group. Placement settles it for member pods (see eligPlan) and
// caches the answer on the claim, so counts stay consistent as the claim
// narrows further; owners' own claims always count.
func (s *solver) newEligible(g *tgroup, n *snode) bool {
	if g.kind != gSpread || (g.filterTerms == nil && !g.honorTaints) {
		return true
	}
	if v, ok := n.elig[g.idx]; ok {
		return v
	}
	en, ok := s.eligPlan(g, n, n.types, n.zones, n.cts)
	res := en.res || !ok || en.narrow && en.res
	if en.narrow && !en.res {
		res = true // not settled: count it, the safe side for its own domain
	}
	if n.elig == nil {
		n.elig = map[int]bool{}
	}
	n.elig[g.idx] = res
	return res
}

func (s *solver) eligible(g *tgroup, n *snode) bool {
	if g.kind != gSpread {
		return true
	}
	if n.kind == nkNew {
		return s.newEligible(g, n)
	}
	return s.existingEligible(g, n)
}

// groupOK checks one group for a pod of a placement class landing in
// domain d of a node. own: the pod owns the group; member: the pod matches
// its selector; elig: the node counts for it.
func groupOK(g *tgroup, d int, own, member, elig bool) bool {
	switch g.kind {
	case gSpread:
		inc := int32(0)
		if member && elig {
			inc = 1
		}
		if own {
			return g.cnt(d)+inc-g.min() <= g.maxSkew
		}
		if inc == 1 && (g.own(d) > 0 || g.pendingOwners > 0) {
			return g.cnt(d)+1-g.min() <= g.maxSkew
		}
		return true
	case gAffinity:
		if own {
			return g.cnt(d) > 0 || (g.total == 0 && member)
		}
		// While the group's first pod sits alone in its domain (placed by
		// the first-pod rule), other matching pods must join it there, or
		// its affinity would fail once they exist.
		if member && g.first >= 0 && g.cnt(g.first) <= 1 && d != g.first {
			return false
		}
		return true
	default: // gAnti
		if own && g.cnt(d) > 0 {
			return false
		}
		if member && g.own(d) > 0 {
			return false
		}
		return true
	}
}

// describeGroup renders a group for messages.
func describeGroup(g *tgroup) string {
	var b strings.Builder
	b.WriteString(g.kind.String())
	b.WriteString(" on ")
	b.WriteString(g.key)
	if g.kind == gSpread {
		b.WriteString(" (maxSkew ")
		b.WriteString(itoa(int(g.maxSkew)))
		if g.minDomains > 1 {
			b.WriteString(", minDomains ")
			b.WriteString(itoa(int(g.minDomains)))
		}
		b.WriteString(")")
	}
	b.WriteString(" for pods matching ")
	b.WriteString(describeSelector(g.sel))
	b.WriteString(" in ")
	b.WriteString(describeNS(g))
	return b.String()
}
