package overlay

import (
	"cmp"
	"fmt"
	"math"
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
)

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

// key of an offering within a pool.
type offKey struct {
	pool, typ, zone, ct string
}

type typeKey struct{ pool, typ string }

// claim records the weights that matched a slot and whether one set it.
type claim struct {
	weights map[int32]string // weight -> first overlay of that weight
	by      string           // the overlay whose value is in effect
	price   float64
	qty     resource.Quantity
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

	prices := map[offKey]*claim{}
	capacity := map[typeKey]map[corev1.ResourceName]*claim{}
	for _, c := range order {
		v := &res.Verdicts[c.index]
		matchedOffs, matchedTypes := matches(c, pools)
		// Check everything first: an overlay is applied whole or not at all.
		for _, k := range matchedOffs {
			if !c.hasPrice {
				break
			}
			if cl := prices[k.key]; cl != nil {
				if other, ok := cl.weights[c.weight]; ok {
					v.Reason, v.Message = ReasonConflict, fmt.Sprintf("%s conflicts with NodeOverlay %q of the same weight %d: both set the price of %s %s in %s (NodePool %s)", c.field, other, c.weight, k.key.ct, k.key.typ, k.key.zone, k.key.pool)
					break
				}
			}
			if p := c.price(k.list); p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
				v.Reason, v.Message = ReasonNegativePrice, fmt.Sprintf("%s %q gives %s %s in %s (NodePool %s) the price %g, below 0 (its price is %g)", c.field, c.value, k.key.ct, k.key.typ, k.key.zone, k.key.pool, p, k.list)
				break
			}
		}
		if v.Reason == "" && len(c.capacity) > 0 {
		check:
			for _, tk := range matchedTypes {
				for name := range c.capacity {
					if cl := capacity[tk][name]; cl != nil {
						if other, ok := cl.weights[c.weight]; ok {
							v.Reason, v.Message = ReasonConflict, fmt.Sprintf("spec.capacity[%s] conflicts with NodeOverlay %q of the same weight %d: both set it on %s (NodePool %s)", name, other, c.weight, tk.typ, tk.pool)
							break check
						}
					}
				}
			}
		}
		if v.Reason != "" {
			continue
		}
		changed := map[typeKey]bool{}
		if c.hasPrice {
			for _, k := range matchedOffs {
				cl := prices[k.key]
				if cl == nil {
					cl = &claim{weights: map[int32]string{}}
					prices[k.key] = cl
				}
				if _, ok := cl.weights[c.weight]; !ok {
					cl.weights[c.weight] = c.name
				}
				if cl.by == "" {
					cl.by, cl.price = c.name, c.price(k.list)
					changed[typeKey{k.key.pool, k.key.typ}] = true
				}
			}
		}
		for _, tk := range matchedTypes {
			for name := range c.capacity {
				m := capacity[tk]
				if m == nil {
					m = map[corev1.ResourceName]*claim{}
					capacity[tk] = m
				}
				cl := m[name]
				if cl == nil {
					cl = &claim{weights: map[int32]string{}}
					m[name] = cl
				}
				if _, ok := cl.weights[c.weight]; !ok {
					cl.weights[c.weight] = c.name
				}
				if cl.by == "" {
					cl.by, cl.qty = c.name, c.capacity[name]
					changed[tk] = true
				}
			}
		}
		v.Types = len(changed)
		v.Message = fmt.Sprintf("applied to %d instance type(s) across NodePools", v.Types)
	}

	for _, p := range pools {
		var out []*cloudprovider.InstanceType
		for i, it := range p.Types {
			nit := adjusted(p.Name, it, prices, capacity[typeKey{p.Name, it.Name}])
			if nit == it && out == nil {
				continue
			}
			if out == nil {
				out = make([]*cloudprovider.InstanceType, len(p.Types))
				copy(out, p.Types[:i])
			}
			out[i] = nit
		}
		if out != nil {
			res.Types[p.Name] = out
		}
	}
	return res
}

type matchedOffering struct {
	key  offKey
	list float64
}

// matches returns the offerings c matches and the instance types with at
// least one matched offering, in pool and type order.
func matches(c *compiled, pools []Pool) ([]matchedOffering, []typeKey) {
	var offs []matchedOffering
	var types []typeKey
	labels := map[string]string{}
	for _, p := range pools {
		for _, it := range p.Types {
			clear(labels)
			for k, v := range it.Labels {
				labels[k] = v
			}
			for k, v := range p.Labels {
				labels[k] = v
			}
			labels[karpv1.NodePoolLabelKey] = p.Name
			if p.NodeClass != "" {
				labels[awsv1.LabelNodeClass] = p.NodeClass
			}
			matched := false
			for _, o := range it.Offerings {
				labels[corev1.LabelTopologyZone] = o.Zone
				if o.ZoneID != "" {
					labels[labelZoneID] = o.ZoneID
				} else {
					delete(labels, labelZoneID)
				}
				labels[karpv1.CapacityTypeLabelKey] = o.CapacityType
				if c.reqs.Matches(labels) != nil {
					continue
				}
				matched = true
				offs = append(offs, matchedOffering{key: offKey{p.Name, it.Name, o.Zone, o.CapacityType}, list: o.Price})
			}
			if matched {
				types = append(types, typeKey{p.Name, it.Name})
			}
		}
	}
	return offs, types
}

const labelZoneID = "topology.k8s.aws/zone-id"

// adjusted returns it with the prices and capacity in effect, or it itself
// when nothing changes.
func adjusted(pool string, it *cloudprovider.InstanceType, prices map[offKey]*claim, capacity map[corev1.ResourceName]*claim) *cloudprovider.InstanceType {
	var offs cloudprovider.Offerings
	for i, o := range it.Offerings {
		cl := prices[offKey{pool, it.Name, o.Zone, o.CapacityType}]
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
