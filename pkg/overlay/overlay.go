package overlay

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	bits64 "math/bits"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Verdict reasons: why an overlay is not applied. They are the reasons of
// the overlay's ValidationSucceeded and Ready conditions.
const (
	// ReasonInvalid: a field cannot be parsed or is refused (requirements,
	// price, priceAdjustment, capacity).
	ReasonInvalid = "RuntimeValidation"
	// ReasonNegativePrice: the price would be negative (or not finite) for
	// an offering the overlay matches.
	ReasonNegativePrice = "NegativePrice"
	// ReasonConflict: an overlay of equal weight already sets the price of
	// an offering, or a resource of an instance type, this one matches.
	ReasonConflict = "Conflict"
	// ReasonTooBroad: applying the overlay would take the instance types
	// adjusted by all overlays together past MaxAdjustedTypes.
	ReasonTooBroad = "TooManyAdjustedTypes"
)

// MaxAdjustedTypes bounds the instance types all overlays together adjust,
// counted once per group of NodePools the overlays see alike (pools that
// no overlay tells apart share their adjusted types). Each costs a copy of
// the type's offerings here and a compiled record in the engine (about 2
// KB together), so the bound holds that memory near 200 MB whatever the
// number of pools and overlays; an overlay that would pass it is not
// applied, with the TooManyAdjustedTypes verdict.
const MaxAdjustedTypes = 100_000

// Pool is one NodePool's instance types as the engine would see them.
type Pool struct {
	// Name is the NodePool's name (label karpenter.sh/nodepool).
	Name string
	// NodeClass is the EC2NodeClass's name (label
	// karpenter.k8s.aws/ec2nodeclass).
	NodeClass string
	// Labels are the NodePool's template labels.
	Labels map[string]string
	// Types are the pool's instance types; never modified.
	Types []*cloudprovider.InstanceType
}

// Verdict is what became of one overlay.
type Verdict struct {
	// Name is the overlay's name.
	Name string
	// Reason is empty when the overlay is applied, else one of the Reason
	// constants.
	Reason string
	// Message says why, naming the field (and the other overlay or the
	// offering) when Reason is set; else what the overlay changes.
	Message string
	// Types counts the (NodePool, instance type) pairs the overlay changes.
	Types int
}

// Applied reports whether the overlay is in effect.
func (v Verdict) Applied() bool { return v.Reason == "" }

// Result is Apply's answer.
type Result struct {
	// Types are the adjusted instance types by NodePool name, in the input
	// order; a pool no overlay touches has its input slice.
	Types map[string][]*cloudprovider.InstanceType
	// Verdicts, one per overlay, in the input order.
	Verdicts []Verdict
}

// Verdict returns the verdict of the overlay named name.
func (r Result) Verdict(name string) (Verdict, bool) {
	for _, v := range r.Verdicts {
		if v.Name == name {
			return v, true
		}
	}
	return Verdict{}, false
}

// compiled is an overlay parsed once.
type compiled struct {
	index  int
	name   string
	weight int32
	reqs   requirements.Requirements
	// typeReqs are the requirements on labels a type (or its pool) sets,
	// offReqs those on an offering's zone, zone id and capacity type.
	typeReqs, offReqs []*requirements.Requirement
	// price: absolute when abs, else delta (percent when pct).
	hasPrice bool
	abs      bool
	pct      bool
	amount   float64
	field    string
	value    string
	capacity corev1.ResourceList
}

// restricted are the resources an overlay may not set.
var restricted = map[corev1.ResourceName]bool{
	corev1.ResourceCPU: true, corev1.ResourceMemory: true, corev1.ResourceEphemeralStorage: true, corev1.ResourcePods: true,
}

// Validate checks what the API server's schema cannot: the requirements
// parse, the price and price adjustment are finite numbers of the
// accepted forms, capacity sets only extended resources. Field paths are
// rooted at the overlay (spec....).
func Validate(no *karpv1alpha1.NodeOverlay) field.ErrorList {
	_, errs := compile(0, no)
	return errs
}

func compile(i int, no *karpv1alpha1.NodeOverlay) (*compiled, field.ErrorList) {
	spec := field.NewPath("spec")
	c := &compiled{index: i, name: no.Name, capacity: no.Spec.Capacity}
	if no.Spec.Weight != nil {
		c.weight = *no.Spec.Weight
	}
	var errs field.ErrorList
	for j, r := range no.Spec.Requirements {
		req, err := requirements.FromNodeSelectorRequirement(corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("requirements").Index(j), r.Key, err.Error()))
			continue
		}
		c.reqs.Add(req)
	}
	for r := range c.reqs.All() {
		if offeringKeys[r.Key()] {
			c.offReqs = append(c.offReqs, r)
		} else {
			c.typeReqs = append(c.typeReqs, r)
		}
	}
	if no.Spec.Price != nil && no.Spec.PriceAdjustment != nil {
		errs = append(errs, field.Forbidden(spec.Child("priceAdjustment"), "price and priceAdjustment are mutually exclusive"))
	}
	switch {
	case no.Spec.Price != nil:
		c.hasPrice, c.abs, c.field, c.value = true, true, "spec.price", *no.Spec.Price
		v, err := strconv.ParseFloat(*no.Spec.Price, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || strings.ContainsAny(*no.Spec.Price, "+-eEnNiIxX_") {
			errs = append(errs, field.Invalid(spec.Child("price"), *no.Spec.Price, "must be a non-negative decimal number of dollars per hour, such as 0.25"))
		}
		c.amount = v
	case no.Spec.PriceAdjustment != nil:
		s := *no.Spec.PriceAdjustment
		c.hasPrice, c.field, c.value = true, "spec.priceAdjustment", s
		v, err := parseAdjustment(s)
		if err != nil {
			errs = append(errs, field.Invalid(spec.Child("priceAdjustment"), s, err.Error()))
		}
		c.pct = strings.HasSuffix(s, "%")
		c.amount = v
	}
	for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
		for n := range no.Spec.Capacity {
			if !yield(n) {
				return
			}
		}
	}) {
		q := no.Spec.Capacity[name]
		switch {
		case restricted[name]:
			errs = append(errs, field.Forbidden(spec.Child("capacity").Key(string(name)), "capacity may only add extended resources, not cpu, memory, ephemeral-storage or pods"))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(spec.Child("capacity").Key(string(name)), q.String(), "must not be negative"))
		}
	}
	return c, errs
}

// parseAdjustment reads "+0.5", "-0.5", "+10%", "-15%" (at most -100%).
func parseAdjustment(s string) (float64, error) {
	const form = `must be a signed amount ("-0.5", "+1.2") or a signed percentage ("+10%", "-15%", at least "-100%")`
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return 0, fmt.Errorf("%s", form)
	}
	num := strings.TrimSuffix(s[1:], "%")
	if num == "" || strings.ContainsFunc(num, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }) || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("%s", form)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s", form)
	}
	if s[0] == '-' {
		v = -v
	}
	if strings.HasSuffix(s, "%") && v < -100 {
		return 0, fmt.Errorf("%s", form)
	}
	return v, nil
}

// price is the offering's price under c.
func (c *compiled) price(list float64) float64 {
	switch {
	case c.abs:
		return c.amount
	case c.pct:
		return list * (1 + c.amount/100)
	default:
		return list + c.amount
	}
}

// key of an offering within a group of pools: the group, the type's
// place in the group's types and the offering's place in the type's.
type offKey struct{ group, typ, off int32 }

type typeKey struct{ group, typ int32 }

// claim records, for a slot (an offering's price, a type's resource),
// the first applied overlay of the last weight that matched it (overlays
// are taken in weight order, so only an overlay of that same weight can
// conflict with a later one) and which overlay's value is in effect.
type claim struct {
	weight int32
	first  string // "" until an overlay matched
	by     string
	price  float64
	qty    resource.Quantity
}

// conflict is the overlay of weight w that already matched the slot.
func (cl *claim) conflict(w int32) (string, bool) {
	if cl == nil || cl.first == "" || cl.weight != w {
		return "", false
	}
	return cl.first, true
}

// match records an applied overlay matching the slot.
func (cl *claim) match(w int32, name string) {
	if cl.first == "" || cl.weight != w {
		cl.weight, cl.first = w, name
	}
}

// group is pools every overlay sees alike: each requirement an overlay
// puts on a label the pool sets (its template labels, karpenter.sh/nodepool,
// the node class) passes for all of them or for none. Overlays are matched
// and applied once per group and instance type, and the group's pools share
// the adjusted types, so the work grows with the distinct instance types
// and groups, not with pools x types: thousands of pools that no overlay
// tells apart are one group, and an overlay for one NodePool makes two.
type group struct {
	rep Pool
	// types are the distinct instance types of the group's pools, in pool
	// and type order: while every pool of the group has one list, that
	// list itself (pools of one node class share it), else a union.
	types []*cloudprovider.InstanceType
	// pools counts the group's pools. With one list every pool holds
	// every type; with a union, holders[j] counts the pools holding type j
	// and first[j] names the first (messages name it).
	pools   int
	holders []int32
	first   []string
	index   map[*cloudprovider.InstanceType]int
	adjusts map[*cloudprovider.InstanceType]*cloudprovider.InstanceType
	// overlays are the indexes (in weight order) of the overlays that may
	// match in the group.
	overlays []int
	// stride is the most offerings of one of its types: offering i of
	// type j is bit j*stride+i of a match.
	stride int
}

// add puts a pool's types into the group.
func (g *group) add(p Pool) {
	g.pools++
	if g.pools == 1 {
		g.types = p.Types
		return
	}
	if g.index == nil {
		if len(p.Types) == len(g.types) && (len(p.Types) == 0 || &p.Types[0] == &g.types[0]) {
			return // the same list
		}
		// Turn the one list into a union.
		one := g.types
		g.types = slices.Clone(one)
		g.index = make(map[*cloudprovider.InstanceType]int, len(one))
		g.holders, g.first = make([]int32, len(one)), make([]string, len(one))
		for j, it := range one {
			if _, dup := g.index[it]; !dup {
				g.index[it] = j
			}
			g.holders[j], g.first[j] = int32(g.pools-1), g.rep.Name
		}
	}
	for _, it := range p.Types {
		if j, ok := g.index[it]; ok {
			g.holders[j]++
			continue
		}
		g.index[it] = len(g.types)
		g.types = append(g.types, it)
		g.holders = append(g.holders, 1)
		g.first = append(g.first, p.Name)
	}
}

// holdersOf counts the group's pools that hold type j.
func (g *group) holdersOf(j int32) int {
	if g.holders == nil {
		return g.pools
	}
	return int(g.holders[j])
}

// poolOf names the first pool of the group holding type j.
func (g *group) poolOf(j int32) string {
	if g.first == nil {
		return g.rep.Name
	}
	return g.first[j]
}

// Offering labels: set per offering after the pool's, so no pool decides
// them.
var offeringKeys = map[string]bool{corev1.LabelTopologyZone: true, labelZoneID: true, karpv1.CapacityTypeLabelKey: true}

// groupPools puts pools into groups by the pool labels the overlays read.
func groupPools(order []*compiled, pools []Pool) ([]*group, []int) {
	poolKeys := map[string]bool{karpv1.NodePoolLabelKey: true, awsv1.LabelNodeClass: true}
	for _, p := range pools {
		for k := range p.Labels {
			if !offeringKeys[k] {
				poolKeys[k] = true
			}
		}
	}
	// The requirements that read a pool label: a pool is grouped by
	// whether it passes each, not by the label's value, so an overlay for
	// one NodePool makes two groups, not one per pool.
	type poolReq struct {
		r  *requirements.Requirement
		ci int
	}
	var read []poolReq
	readOf := make([][]int, len(order)) // positions in read, per overlay
	for ci, c := range order {
		for _, r := range c.typeReqs {
			if poolKeys[r.Key()] {
				readOf[ci] = append(readOf[ci], len(read))
				read = append(read, poolReq{r, ci})
			}
		}
	}
	byKey := map[string]int{}
	var groups []*group
	of := make([]int, len(pools))
	var b strings.Builder
	for i, p := range pools {
		b.Reset()
		for _, pr := range read {
			switch v, ok := poolLabel(p, pr.r.Key()); {
			case !ok:
				b.WriteByte('-') // the instance type's label decides
			case pr.r.Has(v):
				b.WriteByte('1')
			default:
				b.WriteByte('0')
			}
		}
		key := b.String()
		gi, ok := byKey[key]
		if !ok {
			gi = len(groups)
			byKey[key] = gi
			g := &group{rep: p}
			// The overlays that may match in the group: none of their
			// requirements on pool labels fails.
			for ci := range order {
				if !slices.ContainsFunc(readOf[ci], func(x int) bool { return key[x] == '0' }) {
					g.overlays = append(g.overlays, ci)
				}
			}
			groups = append(groups, g)
		}
		of[i] = gi
		groups[gi].add(p)
	}
	return groups, of
}

// poolLabel is the value a node of p carries for k whatever its type, if
// the pool sets it.
func poolLabel(p Pool, k string) (string, bool) {
	switch k {
	case karpv1.NodePoolLabelKey:
		return p.Name, true
	case awsv1.LabelNodeClass:
		if p.NodeClass != "" {
			return p.NodeClass, true
		}
	}
	v, ok := p.Labels[k]
	return v, ok
}

// Apply applies overlays to pools' instance types (see the package doc).
// nil or empty overlays return the pools' types as they are, with no
// verdicts.
func Apply(overlays []*karpv1alpha1.NodeOverlay, pools []Pool) Result {
	res := Result{Types: make(map[string][]*cloudprovider.InstanceType, len(pools)), Verdicts: make([]Verdict, len(overlays))}
	for _, p := range pools {
		res.Types[p.Name] = p.Types
	}
	if len(overlays) == 0 {
		return res
	}
	var order []*compiled
	for i, no := range overlays {
		res.Verdicts[i].Name = no.Name
		c, errs := compile(i, no)
		if len(errs) > 0 {
			res.Verdicts[i].Reason, res.Verdicts[i].Message = ReasonInvalid, errs.ToAggregate().Error()
			continue
		}
		order = append(order, c)
	}
	slices.SortStableFunc(order, func(a, b *compiled) int {
		if a.weight != b.weight {
			return cmp.Compare(b.weight, a.weight)
		}
		return strings.Compare(b.name, a.name)
	})
	if len(order) == 0 {
		return res
	}
	groups, groupOf := groupPools(order, pools)
	matched := matchAll(order, groups)

	// each calls f with every offering m matches, in group and type order.
	each := func(m matches, f func(k offKey, list float64) bool) {
		for _, gm := range m {
			g, stop := groups[gm.group], false
			eachBit(gm.offs, func(x int) {
				if stop {
					return
				}
				j, i := x/g.stride, x%g.stride
				stop = !f(offKey{int32(gm.group), int32(j), int32(i)}, g.types[j].Offerings[i].Price)
			})
			if stop {
				return
			}
		}
	}
	eachType := func(m matches, f func(tk typeKey) bool) {
		for _, gm := range m {
			stop := false
			eachBit(gm.types, func(j int) {
				if !stop {
					stop = !f(typeKey{int32(gm.group), int32(j)})
				}
			})
			if stop {
				return
			}
		}
	}
	// describe names an offering for messages.
	describe := func(k offKey) string {
		g := groups[k.group]
		it := g.types[k.typ]
		o := it.Offerings[k.off]
		return fmt.Sprintf("%s %s in %s (NodePool %s)", o.CapacityType, it.Name, o.Zone, g.poolOf(k.typ))
	}

	prices := map[offKey]*claim{}
	capacity := map[typeKey]map[corev1.ResourceName]*claim{}
	// adjusted marks, per group, the types applied overlays matched; total
	// counts them.
	done := make([][]uint64, len(groups))
	total := 0
	for ci, c := range order {
		v := &res.Verdicts[c.index]
		m := matched[ci]
		// Check everything first: an overlay is applied whole or not at all.
		// The bound first: it is the cheap check, and an input that hits
		// it has many overlays.
		more := 0
		for _, gm := range m {
			d := done[gm.group]
			for w, word := range gm.types {
				if d != nil {
					word &^= d[w]
				}
				more += bits64.OnesCount64(word)
			}
		}
		if total+more > MaxAdjustedTypes {
			v.Reason, v.Message = ReasonTooBroad, fmt.Sprintf("it would adjust %d more instance types (counted once per set of NodePools the overlays see alike), past the limit of %d for all NodeOverlays together; narrow its requirements", more, MaxAdjustedTypes)
			continue
		}
		if c.hasPrice {
			each(m, func(k offKey, list float64) bool {
				if other, ok := prices[k].conflict(c.weight); ok {
					v.Reason, v.Message = ReasonConflict, fmt.Sprintf("%s conflicts with NodeOverlay %q of the same weight %d: both set the price of %s", c.field, other, c.weight, describe(k))
					return false
				}
				if p := c.price(list); p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
					v.Reason, v.Message = ReasonNegativePrice, fmt.Sprintf("%s %q gives %s the price %g, below 0 (its price is %g)", c.field, c.value, describe(k), p, list)
					return false
				}
				return true
			})
		}
		if v.Reason == "" && len(c.capacity) > 0 {
			names := slices.Sorted(maps.Keys(c.capacity))
			eachType(m, func(tk typeKey) bool {
				for _, name := range names {
					if other, ok := capacity[tk][name].conflict(c.weight); ok {
						g := groups[tk.group]
						v.Reason, v.Message = ReasonConflict, fmt.Sprintf("spec.capacity[%s] conflicts with NodeOverlay %q of the same weight %d: both set it on %s (NodePool %s)", name, other, c.weight, g.types[tk.typ].Name, g.poolOf(tk.typ))
						return false
					}
				}
				return true
			})
		}
		if v.Reason != "" {
			continue
		}
		total += more
		for _, gm := range m {
			if done[gm.group] == nil {
				done[gm.group] = make([]uint64, len(gm.types))
			}
			for w, word := range gm.types {
				done[gm.group][w] |= word
			}
		}
		changed := map[typeKey]bool{}
		if c.hasPrice {
			each(m, func(k offKey, list float64) bool {
				cl := prices[k]
				if cl == nil {
					cl = &claim{}
					prices[k] = cl
				}
				cl.match(c.weight, c.name)
				if cl.by == "" {
					cl.by, cl.price = c.name, c.price(list)
					changed[typeKey{k.group, k.typ}] = true
				}
				return true
			})
		}
		if len(c.capacity) > 0 {
			eachType(m, func(tk typeKey) bool {
				for name := range c.capacity {
					mm := capacity[tk]
					if mm == nil {
						mm = map[corev1.ResourceName]*claim{}
						capacity[tk] = mm
					}
					cl := mm[name]
					if cl == nil {
						cl = &claim{}
						mm[name] = cl
					}
					cl.match(c.weight, c.name)
					if cl.by == "" {
						cl.by, cl.qty = c.name, c.capacity[name]
						changed[tk] = true
					}
				}
				return true
			})
		}
		// Counted per (NodePool, instance type) pair, as each pool of a
		// group holding a changed type sees it changed.
		for tk := range changed {
			v.Types += groups[tk.group].holdersOf(tk.typ)
		}
		v.Message = fmt.Sprintf("applied to %d instance type(s) across NodePools", v.Types)
	}

	// Only types an applied overlay matched can change.
	for gi, g := range groups {
		g.adjusts = map[*cloudprovider.InstanceType]*cloudprovider.InstanceType{}
		eachBit(done[gi], func(j int) {
			it := g.types[j]
			if nit := adjusted(int32(gi), int32(j), it, prices, capacity[typeKey{int32(gi), int32(j)}]); nit != it {
				g.adjusts[it] = nit
			}
		})
	}
	// Pools of a group with the same input list share one output list.
	type listKey struct {
		group int
		first **cloudprovider.InstanceType
		n     int
	}
	lists := map[listKey][]*cloudprovider.InstanceType{}
	for i, p := range pools {
		g := groups[groupOf[i]]
		if len(g.adjusts) == 0 || len(p.Types) == 0 {
			continue
		}
		lk := listKey{groupOf[i], &p.Types[0], len(p.Types)}
		if out, ok := lists[lk]; ok {
			if out != nil {
				res.Types[p.Name] = out
			}
			continue
		}
		var out []*cloudprovider.InstanceType
		for j, it := range p.Types {
			nit, ok := g.adjusts[it]
			if !ok && out == nil {
				continue
			}
			if out == nil {
				out = make([]*cloudprovider.InstanceType, len(p.Types))
				copy(out, p.Types[:j])
			}
			if !ok {
				nit = it
			}
			out[j] = nit
		}
		lists[lk] = out
		if out != nil {
			res.Types[p.Name] = out
		}
	}
	return res
}

// matches are what one overlay matches, in the groups where it matches
// anything (in group order): a bit per offering (group.stride) and a bit
// per type with at least one matched offering.
type matches []groupMatch

type groupMatch struct {
	group       int
	offs, types []uint64
}

// eachBit calls f with each set bit's index, in order.
func eachBit(bits []uint64, f func(int)) {
	for w, word := range bits {
		for word != 0 {
			b := bits64.TrailingZeros64(word)
			f(w*64 + b)
			word &= word - 1
		}
	}
}

// matchAll matches every overlay against every group's instance types:
// each type's labels are built once per group, an overlay's requirements
// on type and pool labels are checked once per type, and only those on
// the offering's zone, zone id and capacity type once per offering.
func matchAll(order []*compiled, groups []*group) []matches {
	out := make([]matches, len(order))
	for gi, g := range groups {
		if len(g.overlays) == 0 {
			continue
		}
		for _, it := range g.types {
			g.stride = max(g.stride, len(it.Offerings))
		}
		nOff, nType := (len(g.types)*g.stride+63)/64, (len(g.types)+63)/64
		for j, it := range g.types {
			for _, ci := range g.overlays {
				c := order[ci]
				if !matchReqs(c.typeReqs, g.rep, it, nil) {
					continue
				}
				for i := range it.Offerings {
					if !matchReqs(c.offReqs, g.rep, it, &it.Offerings[i]) {
						continue
					}
					m := out[ci]
					if len(m) == 0 || m[len(m)-1].group != gi {
						out[ci] = append(m, groupMatch{group: gi, offs: make([]uint64, nOff), types: make([]uint64, nType)})
						m = out[ci]
					}
					gm := &m[len(m)-1]
					f := j*g.stride + i
					gm.offs[f/64] |= 1 << (f % 64)
					gm.types[j/64] |= 1 << (j % 64)
				}
			}
		}
	}
	return out
}

// label is the value of key k on a node of pool p, type it and offering o
// (nil: k is not an offering key): the offering's zone, zone id and
// capacity type, the pool's name and node class, the pool's template
// labels over the type's labels.
func label(k string, p Pool, it *cloudprovider.InstanceType, o *cloudprovider.Offering) (string, bool) {
	if o != nil {
		switch k {
		case corev1.LabelTopologyZone:
			return o.Zone, true
		case labelZoneID:
			return o.ZoneID, o.ZoneID != ""
		case karpv1.CapacityTypeLabelKey:
			return o.CapacityType, true
		}
	}
	if v, ok := poolLabel(p, k); ok {
		return v, true
	}
	v, ok := it.Labels[k]
	return v, ok
}

// matchReqs reports whether a node of pool p, type it and offering o
// satisfies every requirement.
func matchReqs(reqs []*requirements.Requirement, p Pool, it *cloudprovider.InstanceType, o *cloudprovider.Offering) bool {
	for _, r := range reqs {
		v, ok := label(r.Key(), p, it, o)
		if !ok && !r.AllowsAbsent() || ok && !r.Has(v) {
			return false
		}
	}
	return true
}

const labelZoneID = "topology.k8s.aws/zone-id"

// adjusted returns it with the prices and capacity in effect, or it itself
// when nothing changes.
func adjusted(group, typ int32, it *cloudprovider.InstanceType, prices map[offKey]*claim, capacity map[corev1.ResourceName]*claim) *cloudprovider.InstanceType {
	var offs cloudprovider.Offerings
	for i, o := range it.Offerings {
		cl := prices[offKey{group, typ, int32(i)}]
		if cl == nil || cl.by == "" {
			continue
		}
		if offs == nil {
			offs = slices.Clone(it.Offerings)
		}
		offs[i].ListPrice, offs[i].Price, offs[i].PriceOverlay = o.Price, cl.price, cl.by
	}
	var caps corev1.ResourceList
	var by []string
	for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
		for n := range capacity {
			if !yield(n) {
				return
			}
		}
	}) {
		cl := capacity[name]
		if cl.by == "" {
			continue
		}
		if caps == nil {
			caps = it.Capacity.DeepCopy()
			if caps == nil {
				caps = corev1.ResourceList{}
			}
		}
		caps[name] = cl.qty.DeepCopy()
		if !slices.Contains(by, cl.by) {
			by = append(by, cl.by)
		}
	}
	if offs == nil && caps == nil {
		return it
	}
	nit := *it
	if offs != nil {
		nit.Offerings = offs
	}
	if caps != nil {
		nit.Capacity = caps
		nit.CapacityOverlays = append(slices.Clone(it.CapacityOverlays), by...)
	}
	return &nit
}
