package engine

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// zoneInfo is one zone of the solve (index = position in solver.zones).
type zoneInfo struct {
	name string
	id   string
}

// ctype is an instance type as one pool sees it.
type ctype struct {
	// idx is the type's place in its pool's type list.
	idx int
	*tshare
	// capLimit[i] is the type's capacity in the pool's i-th limited resource.
	capLimit []int64
}

// tshare is the part of a compiled type that depends only on the type, the
// offerings a pool's requirements let through and the daemonsets the pool
// runs on it. Pools alike in those share one tshare (thousands of pools
// that differ only in which types they allow cost one per type), so it is
// never written after compile.
type tshare struct {
	it     *cloudprovider.InstanceType
	name   string
	labels map[string]string
	// alloc is what pods may use: allocatable less the daemonset overhead.
	alloc rvec
	// ds is the daemonset overhead on this type in this pool.
	ds rvec
	// offs are the usable offerings, cheapest first.
	offs     []coff
	zones    zmask
	cts      ctmask
	minPrice float64
}

// coff is a usable offering of a type.
type coff struct {
	zone  int
	ct    int
	price float64
	// res is the capacity reservation of a reserved offering.
	res string
	// list is the offering's price without commitments; cov marks an
	// on-demand offering a commitment could cover, whose price is then
	// commitment.PriceFactor of list (see finish for the counting).
	list float64
	cov  bool
}

// cheapest returns the cheapest usable offering within the masks.
func (t *ctype) cheapest(zones zmask, cts ctmask) (coff, bool) {
	for _, o := range t.offs {
		if zones.has(o.zone) && cts.has(o.ct) {
			return o, true
		}
	}
	return coff{}, false
}

// priceIn is the cheapest price within the masks, or +Inf.
func (t *ctype) priceIn(zones zmask, cts ctmask) float64 {
	if o, ok := t.cheapest(zones, cts); ok {
		return o.price
	}
	return math.Inf(1)
}

// limitEntry is one limited resource of a pool.
type limitEntry struct {
	name      corev1.ResourceName
	limit     int64
	remaining int64
}

// mvKey is a pool requirement with minValues.
type mvKey struct {
	key  string
	min  int
	kind keyKind
	// typeVal[i] is the index of type i's value of the key, -1 if absent;
	// only for keys instance types carry.
	typeVal []int32
	nvals   int
}

// cpool is a NodePool compiled for the solve.
type cpool struct {
	idx    int
	np     *NodePool
	name   string
	weight int32
	reqs   requirements.Requirements
	// fixed are labels every node of the pool carries.
	fixed map[string]string
	// free are requirement keys whose value each node picks (a multi-valued
	// requirement on a key no instance type carries).
	free map[string]*requirements.Requirement
	// typeKeys are the label keys the pool's instance types carry.
	typeKeys map[string]bool
	// ownKeys are the keys of fixed and free but karpenter.sh/nodepool
	// and the region: what the pool, not its types, puts on its nodes.
	ownKeys []string
	taints  []corev1.Taint
	// types are the instance types that pass the pool's requirements and
	// have at least one usable offering, cheapest first.
	types    []*ctype
	allTypes bitset
	zones    zmask
	cts      ctmask
	// noOffer counts types that pass the requirements but have no usable
	// offering; dsTooBig those the daemonsets alone overflow.
	noOffer, dsTooBig int
	limits            []limitEntry
	nodesLimit        int // index into limits, -1 if none
	minValues         []mvKey
	unsupported       string
	unsupportedBroken string
	termCache         map[string]*altInfo
	// twin is the first compiled pool this one is a twin of (itself for
	// that pool; nil when the pool shares with none): twins differ only in
	// name, template label values, limit values and taints, share types, minValues
	// and free keys, and give every term that names neither
	// karpenter.sh/nodepool nor a template label (namedBy) the same answer. Pools of a tier try twins in order and stop at the first
	// that can make the claim, so n twins cost about one pool.
	twin *cpool
}

// namedBy reports whether term names a label that may tell p from its
// twins: karpenter.sh/nodepool or one of its own keys (poolLabels).
func (p *cpool) namedBy(term requirements.Requirements) bool {
	if term.Has(labelNodePool) {
		return true
	}
	for _, k := range p.ownKeys {
		if term.Has(k) {
			return true
		}
	}
	return false
}

// twinKey is what two pools must share to be twins: everything compilePool
// reads but the name, the template labels' and limits' values and the
// taints (but for which daemonsets tolerate them). shareable is false for a pool
// whose compile depends on its name (a karpenter.sh/nodepool requirement,
// or a daemonset that selects on the key).
func (s *solver) twinKey(np *NodePool) (key string, shareable bool) {
	if np.Requirements.Has(labelNodePool) {
		return "", false
	}
	if s.daemonsSelectOn(labelNodePool) {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "w=%d\x00u=%s\x00", np.Weight, np.UnsupportedReason)
	if len(np.InstanceTypes) > 0 {
		fmt.Fprintf(&b, "t=%p/%d\x00", &np.InstanceTypes[0], len(np.InstanceTypes))
	}
	// Requirements on what the types carry, capacity types and zones shape
	// the compile. Those on other keys (and template labels) become the
	// pool's own labels: their values tell twins apart only for terms that
	// name the key (namedBy), unless a daemonset selects on the key or a
	// label and a requirement meet on it (poolLabels' contradiction).
	typeKeys := s.typeKeysOf(np)
	for r := range np.Requirements.All() {
		key := r.Key()
		if classifyKey(key) != kindOther || typeKeys[key] || s.daemonsSelectOn(key) ||
			key == labelReservationID || key == labelReservationType { // offering filters
			fmt.Fprintf(&b, "r=%s\x00", r.String())
			continue
		}
		if _, ok := np.Labels[key]; ok {
			fmt.Fprintf(&b, "r=%s\x00", r.String())
			continue
		}
		fmt.Fprintf(&b, "o=%q", key)
		if mv := r.MinValues(); mv != nil {
			fmt.Fprintf(&b, "/%d", *mv)
		}
		b.WriteByte(0)
	}
	for _, k := range slices.Sorted(maps.Keys(np.Labels)) {
		if np.Requirements.Has(k) || s.daemonsSelectOn(k) {
			fmt.Fprintf(&b, "l=%q=%q\x00", k, np.Labels[k])
		} else {
			fmt.Fprintf(&b, "l=%q\x00", k)
		}
	}
	// Taints tell twins apart per pod (poolReject reads each pool's); the
	// compile reads them only for which daemonsets run on the pool's nodes.
	b.WriteString("ds=")
	for _, d := range s.daemons {
		if _, ok := tolerates(d.tolerations, np.Taints); ok {
			b.WriteByte('1')
		} else {
			b.WriteByte('0')
		}
	}
	for _, name := range slices.Sorted(maps.Keys(np.Limits)) {
		fmt.Fprintf(&b, "lim=%s\x00", name)
	}
	return b.String(), true
}

// typeKeysOf returns the label keys np's instance types carry (and
// node.kubernetes.io/instance-type), computed once per type list.
func (s *solver) typeKeysOf(np *NodePool) map[string]bool {
	var id listID
	if len(np.InstanceTypes) > 0 {
		id = listID{&np.InstanceTypes[0], len(np.InstanceTypes)}
		if k, ok := s.typeKeyCache[id]; ok {
			return k
		}
	}
	keys := map[string]bool{labelInstanceType: true}
	for _, it := range np.InstanceTypes {
		if it == nil {
			continue
		}
		for k := range it.Labels {
			keys[k] = true
		}
	}
	if id.first != nil {
		if s.typeKeyCache == nil {
			s.typeKeyCache = map[listID]map[string]bool{}
		}
		s.typeKeyCache[id] = keys
	}
	return keys
}

// listID names a list of instance types by its backing array and length:
// pools of one node class share their class's list.
type listID struct {
	first **cloudprovider.InstanceType
	n     int
}

// poolLabels sets what p's nodes carry that its types do not: fixed labels
// (karpenter.sh/nodepool, the region, template labels, requirements on
// other keys that allow one value), free keys (requirements on other keys
// that allow several; each node picks one), and ownKeys (the keys of
// both, but karpenter.sh/nodepool and the region). It returns why the
// pool can make no node, or "".
func (s *solver) poolLabels(p *cpool) (broken string) {
	np := p.np
	p.fixed = map[string]string{labelNodePool: np.Name}
	p.free = map[string]*requirements.Requirement{}
	p.ownKeys = p.ownKeys[:0]
	if s.in.Region != "" {
		p.fixed[labelRegion] = s.in.Region
	}
	for k, v := range np.Labels {
		p.fixed[k] = v
		p.ownKeys = append(p.ownKeys, k)
	}
	for r := range np.Requirements.All() {
		key := r.Key()
		switch classifyKey(key) {
		case kindCapacity, kindZone, kindZoneID, kindHostname:
			// Offering filters (applied per offering), or refused by
			// validation.
		case kindNodePool:
			if !r.Has(np.Name) && broken == "" {
				broken = fmt.Sprintf("its requirement %s excludes its own name", describeReq(r))
			}
		case kindRegion:
			if s.in.Region != "" && !r.Has(s.in.Region) && broken == "" {
				broken = fmt.Sprintf("its requirement %s excludes the region %q", describeReq(r), s.in.Region)
			}
		default:
			if p.typeKeys[key] {
				continue
			}
			if v, ok := np.Labels[key]; ok {
				if !r.Has(v) && broken == "" {
					broken = fmt.Sprintf("its template label %s=%s contradicts its requirement %s", key, v, describeReq(r))
				}
				continue
			}
			p.ownKeys = append(p.ownKeys, key)
			if vals := r.Values(); r.IsFinite() && !r.AllowsAbsent() && len(vals) == 1 {
				p.fixed[key] = vals[0]
				continue
			}
			p.free[key] = r
		}
	}
	return broken
}

// daemonsSelectOn reports whether a daemonset's node selector names key.
func (s *solver) daemonsSelectOn(key string) bool {
	for _, d := range s.daemons {
		for _, t := range d.terms {
			if t.Has(key) {
				return true
			}
		}
	}
	return false
}

// twinFor returns a pool for np that shares p's compiled parts (np is a
// twin of p's pool by twinKey).
func (s *solver) twinFor(p *cpool, np *NodePool) *cpool {
	c := *p
	c.np, c.name, c.taints, c.reqs = np, np.Name, np.Taints, np.Requirements
	c.ownKeys = nil
	s.poolLabels(&c) // broken only by what twinKey keeps whole
	c.termCache = map[string]*altInfo{}
	c.limits = make([]limitEntry, len(p.limits))
	for i, e := range p.limits {
		q := np.Limits[e.name]
		e = limitEntry{name: e.name, limit: quantityValue(e.name, &q)}
		e.remaining = e.limit
		if u, ok := np.Usage[e.name]; ok {
			e.remaining -= quantityValue(e.name, &u)
		}
		c.limits[i] = e
	}
	return &c
}

// altInfo is what one node selector term allows in one pool.
type altInfo struct {
	ok bool
	// fail explains !ok: the key and why.
	failKey string
	failMsg string
	// noOffering: the term passes the pool's labels but no type has a
	// usable offering in the zones/capacity types it allows.
	noOffering bool
	types      bitset
	zones      zmask
	cts        ctmask
	// free holds the pool ∩ term requirement for each free key the term
	// constrains.
	free requirements.Requirements
}

// compilePools builds the pools, sorted by weight (highest first) then
// name.
func (s *solver) compilePools() {
	in := s.in
	unavailable := make(map[OfferingKey]bool, len(in.Unavailable))
	for _, k := range in.Unavailable {
		unavailable[k] = true
	}
	order := make([]int, len(in.NodePools))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		pa, pb := &in.NodePools[a], &in.NodePools[b]
		if c := cmp.Compare(pb.Weight, pa.Weight); c != 0 {
			return c
		}
		return strings.Compare(pa.Name, pb.Name)
	})
	s.poolByName = map[string]*cpool{}
	cc := &compileCache{unavailable: unavailable}
	// Twin pools (equal but for their names and limit values) share one
	// compiled type list: thousands of copies of a pool cost one compile.
	twins := map[string]*cpool{}
	for _, i := range order {
		np := &in.NodePools[i]
		var p *cpool
		key, shareable := s.twinKey(np)
		if rep := twins[key]; shareable && rep != nil {
			p = s.twinFor(rep, np)
		} else {
			p = s.compilePool(np, cc)
			if shareable {
				p.twin = p
				twins[key] = p
			}
		}
		p.idx = len(s.pools)
		s.pools = append(s.pools, p)
		s.poolByName[p.name] = p
	}
}

func (s *solver) compilePool(np *NodePool, cc *compileCache) *cpool {
	p := &cpool{
		np: np, name: np.Name, weight: np.Weight, reqs: np.Requirements,
		typeKeys: s.typeKeysOf(np), taints: np.Taints,
		nodesLimit: -1, unsupported: np.UnsupportedReason, termCache: map[string]*altInfo{},
	}
	// Capacity types: a pool that leaves the key open gets on-demand only.
	cts := ctmask(1 << ctOnDemand)
	if r := np.Requirements.Get(labelCapacityType); r != nil {
		cts = 0
		for c := range nCT {
			if r.Has(ctNames[c]) {
				cts |= 1 << c
			}
		}
	}
	broken := s.poolLabels(p)
	p.cts = 0
	// Types that pass the requirements, with their usable offerings.
	var shares []*tshare
	filter := cc.filterOf(np, cts)
	for _, it := range np.InstanceTypes {
		if it == nil || broken != "" {
			continue
		}
		labels := cc.labelsOf(it)
		if !typePasses(np.Requirements, p.typeKeys, labels) {
			continue
		}
		sh := s.typeShare(cc, it, np, cts, filter)
		if len(sh.offs) == 0 {
			p.noOffer++
			continue
		}
		shares = append(shares, sh)
	}
	// One allocation for the pool's types.
	slab := make([]ctype, len(shares))
	types := make([]*ctype, len(shares))
	for i, sh := range shares {
		slab[i].tshare = sh
		types[i] = &slab[i]
	}
	slices.SortStableFunc(types, func(a, b *ctype) int {
		if c := cmp.Compare(a.minPrice, b.minPrice); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	p.setTypes(types)
	// Daemonset overhead per type, then drop types the daemonsets overflow.
	if len(s.daemons) > 0 && len(types) > 0 {
		ds := make([]rvec, len(p.types))
		for _, d := range s.daemons {
			if _, ok := tolerates(d.tolerations, p.taints); !ok {
				continue
			}
			mask := newBitset(len(p.types))
			for _, term := range d.terms {
				ai := s.termCompat(p, term)
				if !ai.ok {
					continue
				}
				ai.types.each(func(i int) {
					t := p.types[i]
					if t.zones&ai.zones != 0 && t.cts&ai.cts != 0 {
						mask.set(i)
					}
				})
			}
			mask.each(func(i int) { ds[i] = ds[i].add(d.req) })
		}
		kept := types[:0]
		for i, t := range p.types {
			if !ds[i].isZero() {
				t.tshare = cc.withDaemons(t.tshare, ds[i])
			}
			neg := false
			for _, v := range t.alloc {
				if v < 0 {
					neg = true
				}
			}
			if neg {
				p.dsTooBig++
				continue
			}
			kept = append(kept, t)
		}
		if len(kept) != len(p.types) {
			p.setTypes(kept)
		}
	}
	if broken != "" {
		p.unsupportedBroken = broken
	}
	// Limits.
	names := make([]corev1.ResourceName, 0, len(np.Limits))
	for name := range np.Limits {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := np.Limits[name]
		e := limitEntry{name: name, limit: quantityValue(name, &q)}
		e.remaining = e.limit
		if u, ok := np.Usage[name]; ok {
			e.remaining -= quantityValue(name, &u)
		}
		if name == "nodes" {
			p.nodesLimit = len(p.limits)
		}
		p.limits = append(p.limits, e)
	}
	if len(p.limits) > 0 {
		names := make([]string, len(p.limits))
		for i, e := range p.limits {
			names[i] = string(e.name)
		}
		key := strings.Join(names, "\x00")
		for _, t := range p.types {
			t.capLimit = cc.capLimitOf(t.it, key, p.limits, p.nodesLimit)
		}
	}
	// minValues.
	for r := range np.Requirements.All() {
		mv := r.MinValues()
		if mv == nil {
			continue
		}
		k := mvKey{key: r.Key(), min: *mv, kind: classifyKey(r.Key())}
		if p.typeKeys[k.key] {
			idx := map[string]int32{}
			k.typeVal = make([]int32, len(p.types))
			for i, t := range p.types {
				v, ok := t.labels[k.key]
				if !ok || !r.Has(v) {
					k.typeVal[i] = -1
					continue
				}
				j, seen := idx[v]
				if !seen {
					j = int32(len(idx))
					idx[v] = j
				}
				k.typeVal[i] = j
			}
			k.nvals = len(idx)
		}
		p.minValues = append(p.minValues, k)
	}
	return p
}

func (p *cpool) setTypes(types []*ctype) {
	p.types = types
	p.allTypes = newBitset(len(types))
	p.zones, p.cts = 0, 0
	for i, t := range types {
		t.idx = i
		p.allTypes.set(i)
		p.zones |= t.zones
		p.cts |= t.cts
	}
	p.termCache = map[string]*altInfo{}
}

// typePasses reports whether a type's labels satisfy the pool's
// requirements on the keys instance types carry.
func typePasses(reqs requirements.Requirements, typeKeys map[string]bool, labels map[string]string) bool {
	for r := range reqs.All() {
		if !typeKeys[r.Key()] {
			continue
		}
		v, ok := labels[r.Key()]
		if ok && !r.Has(v) || !ok && !r.AllowsAbsent() {
			return false
		}
	}
	return true
}

// termCompat compiles what a node selector term allows in a pool (cached
// by the term's canonical string).
func (s *solver) termCompat(p *cpool, term requirements.Requirements) *altInfo {
	if tw := p.twin; tw != nil && tw != p && !p.namedBy(term) {
		// Only their names and template labels tell twins apart.
		return s.termCompat(tw, term)
	}
	key := term.String()
	if ai, ok := p.termCache[key]; ok {
		return ai
	}
	ai := s.computeTermCompat(p, term)
	p.termCache[key] = ai
	return ai
}

func (s *solver) computeTermCompat(p *cpool, term requirements.Requirements) *altInfo {
	ai := &altInfo{zones: p.zones, cts: p.cts}
	fail := func(key, msg string) *altInfo {
		ai.ok, ai.failKey, ai.failMsg = false, key, msg
		return ai
	}
	if p.unsupportedBroken != "" {
		return fail("", p.unsupportedBroken)
	}
	types := p.allTypes.clone()
	for r := range term.All() {
		key := r.Key()
		switch {
		case key == requirements.NodeNameKey:
			// New nodes get names nobody can know in advance.
			if !r.IsFinite() || len(r.Values()) == 0 {
				continue
			}
			return fail("metadata.name", fmt.Sprintf("matchFields metadata.name %s names an existing node; a new node's name is not known in advance", describeReq(r)))
		}
		switch classifyKey(key) {
		case kindZone:
			var m zmask
			for z := range s.zones {
				if ai.zones.has(z) && r.Has(s.zones[z].name) {
					m |= 1 << uint(z)
				}
			}
			if m == 0 {
				return fail(key, fmt.Sprintf("%s; the pool offers zones [%s]", describeReq(r), strings.Join(s.zoneNames(p.zones), " ")))
			}
			ai.zones = m
		case kindZoneID:
			var m zmask
			for z := range s.zones {
				id := s.zones[z].id
				if ai.zones.has(z) && (id == "" && r.AllowsAbsent() || id != "" && r.Has(id)) {
					m |= 1 << uint(z)
				}
			}
			if m == 0 {
				return fail(key, fmt.Sprintf("%s matches no zone id the pool offers", describeReq(r)))
			}
			ai.zones = m
		case kindCapacity:
			var m ctmask
			for c := range nCT {
				if ai.cts.has(c) && r.Has(ctNames[c]) {
					m |= 1 << uint(c)
				}
			}
			if m == 0 {
				var offered []string
				for c := range nCT {
					if p.cts.has(c) {
						offered = append(offered, ctNames[c])
					}
				}
				if r.Has(cloudprovider.CapacityTypeReserved) && !r.Has(cloudprovider.CapacityTypeSpot) && !r.Has(cloudprovider.CapacityTypeOnDemand) {
					return fail(key, "no capacity reservation of the pool's node class has room")
				}
				return fail(key, fmt.Sprintf("%s; the pool provides [%s]", describeReq(r), strings.Join(offered, " ")))
			}
			ai.cts = m
		case kindHostname:
			if r.IsFinite() {
				return fail(key, fmt.Sprintf("%s names specific hosts; a new node's hostname is not known in advance", describeReq(r)))
			}
		default:
			if p.typeKeys[key] {
				n := 0
				types.each(func(i int) {
					v, ok := p.types[i].labels[key]
					if ok && !r.Has(v) || !ok && !r.AllowsAbsent() {
						types.clear(i)
					} else {
						n++
					}
				})
				if n == 0 {
					return fail(key, fmt.Sprintf("%s matches none of the pool's instance types", describeReq(r)))
				}
				continue
			}
			if v, ok := p.fixed[key]; ok {
				if !r.Has(v) {
					return fail(key, fmt.Sprintf("%s but the pool's nodes carry %s=%s", describeReq(r), key, v))
				}
				continue
			}
			if pr, ok := p.free[key]; ok {
				x := pr.Intersection(r)
				if _, ok := x.Any(); !ok {
					return fail(key, fmt.Sprintf("%s does not intersect the pool's requirement %s", describeReq(r), describeReq(pr)))
				}
				ai.free.Add(x)
				continue
			}
			if !r.AllowsAbsent() {
				return fail(key, fmt.Sprintf("%s but no node of the pool carries the label %q", describeReq(r), key))
			}
		}
	}
	// Keep the types with a usable offering in the allowed zones and
	// capacity types.
	n := 0
	types.each(func(i int) {
		t := p.types[i]
		if t.zones&ai.zones == 0 || t.cts&ai.cts == 0 {
			types.clear(i)
		} else {
			n++
		}
	})
	ai.types = types
	if n == 0 {
		ai.noOffering = true
		return fail("", "no instance type has an available offering in the allowed zones and capacity types")
	}
	ai.ok = true
	return ai
}

func (s *solver) zoneNames(m zmask) []string {
	var out []string
	for z := range s.zones {
		if m.has(z) {
			out = append(out, s.zones[z].name)
		}
	}
	return out
}
