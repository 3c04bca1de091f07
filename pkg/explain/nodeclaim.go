package explain

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// NodeClaim is the explanation of one NodeClaim's instance type.
type NodeClaim struct {
	NodeClaim string            `json:"nodeClaim"`
	NodePool  string            `json:"nodePool"`
	Requests  map[string]string `json:"requests,omitempty"`
	// Options are the instance types its requirements allow.
	Options []string `json:"options"`
	// MinValues notes the requirements that carry minValues.
	MinValues []string  `json:"minValues,omitempty"`
	Offering  *Offering `json:"offering,omitempty"`
	// Cheaper lists the offerings of the pool cheaper than the chosen one
	// (cheapest first, at most MaxCheaper), each with why it was not taken;
	// CheaperReasons counts all of them by reason.
	Cheaper        []Alternative `json:"cheaper"`
	CheaperTotal   int           `json:"cheaperTotal"`
	CheaperReasons []Count       `json:"cheaperReasons"`
	Summary        string        `json:"summary"`
}

// Offering is the offering a NodeClaim launched on. Recorded is true when
// it comes from the annotations the controller wrote at launch, false when
// it is read from the labels and priced from the catalog.
type Offering struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PricePerHour float64 `json:"pricePerHour"`
	Recorded     bool    `json:"recorded"`
	// PriceUnknown: no price was recorded and the pool's catalog has no
	// such offering (an instance type it does not know); PricePerHour is
	// then 0 and nothing is compared with it.
	PriceUnknown bool `json:"priceUnknown,omitempty"`
	// OverlaidPricePerHour is the price a NodeOverlay gives the offering
	// (Overlays.Price names it): what the engine compared, and what the
	// cheaper offerings are held against. 0 when no overlay sets it.
	OverlaidPricePerHour float64 `json:"overlaidPricePerHour,omitempty"`
	// Overlays name the NodeOverlays behind the offering's price and the
	// instance type's extended resources.
	Overlays *Overlays `json:"overlays,omitempty"`
}

// decisionPrice is the price the engine decided with: the overlaid one
// when a NodeOverlay sets it, else PricePerHour.
func (o *Offering) decisionPrice() float64 {
	if o.Overlays != nil && o.Overlays.Price != "" {
		return o.OverlaidPricePerHour
	}
	return o.PricePerHour
}

// Alternative is a cheaper offering and why it was not taken.
type Alternative struct {
	InstanceType string  `json:"instanceType"`
	Zone         string  `json:"zone"`
	CapacityType string  `json:"capacityType"`
	PricePerHour float64 `json:"pricePerHour"`
	Reason       string  `json:"reason"`
	// PriceOverlay names the NodeOverlay that set PricePerHour.
	PriceOverlay string `json:"priceOverlay,omitempty"`
}

// MaxCheaper caps NodeClaim.Cheaper.
const MaxCheaper = 15

// ExplainNodeClaim explains why the NodeClaim name of claims has its
// instance type, against the instance types of its pool in in.
func ExplainNodeClaim(in *engine.Input, claims []*karpv1.NodeClaim, name string) (*NodeClaim, error) {
	var nc *karpv1.NodeClaim
	for _, c := range claims {
		if c.Name == name {
			nc = c
		}
	}
	if nc == nil {
		return nil, &NotFoundError{Kind: "nodeclaim", Name: name}
	}
	out := &NodeClaim{NodeClaim: nc.Name, NodePool: nc.Labels[karpv1.NodePoolLabelKey], Cheaper: []Alternative{}, CheaperReasons: []Count{}}
	reqs, errs := snapshot.Requirements(nc.Spec.Requirements, field.NewPath("spec", "requirements"))
	if len(errs) > 0 {
		return nil, fmt.Errorf("nodeclaim %s: %v", name, errs.ToAggregate())
	}
	for r := range reqs.All() {
		if mv := r.MinValues(); mv != nil {
			out.MinValues = append(out.MinValues, fmt.Sprintf("%s minValues %d", r.Key(), *mv))
		}
	}
	out.Requests = map[string]string{}
	for n, q := range nc.Spec.Resources.Requests {
		out.Requests[string(n)] = q.String()
	}
	var pool *engine.NodePool
	for i := range in.NodePools {
		if in.NodePools[i].Name == out.NodePool {
			pool = &in.NodePools[i]
		}
	}
	if itReq := reqs.Get(corev1.LabelInstanceTypeStable); itReq != nil && itReq.IsFinite() {
		out.Options = itReq.Values()
	}
	out.Offering = launchedOffering(nc, pool)
	if pool == nil {
		out.Summary = fmt.Sprintf("its nodepool %q is not in the snapshot: the alternatives are unknown", out.NodePool)
		return out, nil
	}
	if out.Options == nil {
		for _, it := range pool.InstanceTypes {
			if labelMismatch(reqs, it) == "" {
				out.Options = append(out.Options, it.Name)
			}
		}
	}
	if out.Offering == nil {
		out.Summary = "not launched yet: it may become any of its options"
		return out, nil
	}
	if o := out.Offering; o.PriceUnknown {
		out.Summary = fmt.Sprintf("%s %s in %s: no price was recorded at launch and nodepool %s offers no such instance type in that zone and capacity type, so its price and the cheaper offerings are unknown",
			o.InstanceType, o.CapacityType, o.Zone, out.NodePool)
		return out, nil
	}
	if ov := overlaysOf(pool, out.Offering.InstanceType, out.Offering.Zone, out.Offering.CapacityType); ov != nil {
		out.Offering.Overlays = ov
		if ov.Price != "" {
			for _, it := range pool.InstanceTypes {
				for _, o := range it.Offerings {
					if it.Name == out.Offering.InstanceType && o.Zone == out.Offering.Zone && o.CapacityType == out.Offering.CapacityType {
						out.Offering.OverlaidPricePerHour = o.Price
					}
				}
			}
		}
	}
	effective := out.Offering.decisionPrice()
	unavailable := map[engine.OfferingKey]bool{}
	for _, k := range in.Unavailable {
		unavailable[k] = true
	}
	zoneReq := reqs.Get(corev1.LabelTopologyZone)
	ctReq := reqs.Get(karpv1.CapacityTypeLabelKey)
	counts := map[string]int{}
	var all []Alternative
	// Offerings the pool itself never allows were never candidates.
	ps := nodeSide(pool)
	pZone, pCT := ps.Get(corev1.LabelTopologyZone), ps.Get(karpv1.CapacityTypeLabelKey)
	for _, it := range pool.InstanceTypes {
		if labelMismatch(ps, it) != "" {
			continue
		}
		for _, o := range it.Offerings {
			if o.Price >= effective || (it.Name == out.Offering.InstanceType && o.Zone == out.Offering.Zone && o.CapacityType == out.Offering.CapacityType) {
				continue
			}
			if (pZone != nil && !pZone.Has(o.Zone)) || (pCT != nil && !pCT.Has(o.CapacityType)) {
				continue
			}
			why, group := whyNot(nc, reqs, it, o, zoneReq, ctReq, out.Options, unavailable)
			counts[group]++
			all = append(all, Alternative{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType, PricePerHour: o.Price, Reason: why, PriceOverlay: o.PriceOverlay})
		}
	}
	slices.SortStableFunc(all, func(a, b Alternative) int {
		return cmp.Or(cmp.Compare(a.PricePerHour, b.PricePerHour), cmp.Compare(a.InstanceType, b.InstanceType), cmp.Compare(a.Zone, b.Zone))
	})
	out.CheaperTotal = len(all)
	out.Cheaper = all[:min(len(all), MaxCheaper)]
	out.CheaperReasons = sortedCounts(counts)
	o := out.Offering
	at := fmt.Sprintf("$%s/h", formatPrice(o.PricePerHour))
	if o.Overlays != nil && o.Overlays.Price != "" {
		at = fmt.Sprintf("$%s/h after NodeOverlay %s", formatPrice(o.OverlaidPricePerHour), o.Overlays.Price)
	}
	if len(all) == 0 {
		out.Summary = fmt.Sprintf("%s %s in %s at %s is the cheapest offering of nodepool %s", o.InstanceType, o.CapacityType, o.Zone, at, out.NodePool)
	} else {
		out.Summary = fmt.Sprintf("%s %s in %s at %s: %d cheaper offerings of nodepool %s were not taken, mostly because %s",
			o.InstanceType, o.CapacityType, o.Zone, at, len(all), out.NodePool, out.CheaperReasons[0].Reason)
	}
	return out, nil
}

// launchedOffering reads the recorded offering and price; without them,
// the labels and the pool's catalog price.
func launchedOffering(nc *karpv1.NodeClaim, pool *engine.NodePool) *Offering {
	parts := strings.Split(nc.Annotations[karpv1.AnnotationOffering], "/")
	price, perr := strconv.ParseFloat(nc.Annotations[karpv1.AnnotationPricePerHour], 64)
	if perr == nil && (math.IsNaN(price) || math.IsInf(price, 0) || price < 0) {
		perr = fmt.Errorf("price %v is not a finite, non-negative number", price) // a corrupt annotation is not a price
	}
	if len(parts) == 3 && parts[0] != "" && perr == nil {
		return &Offering{InstanceType: parts[0], Zone: parts[1], CapacityType: parts[2], PricePerHour: price, Recorded: true}
	}
	o := &Offering{InstanceType: nc.Labels[corev1.LabelInstanceTypeStable], Zone: nc.Labels[corev1.LabelTopologyZone], CapacityType: nc.Labels[karpv1.CapacityTypeLabelKey]}
	if o.InstanceType == "" {
		return nil
	}
	if perr == nil {
		o.PricePerHour = price
		return o
	}
	o.PriceUnknown = true
	if pool != nil {
		for _, it := range pool.InstanceTypes {
			if it.Name != o.InstanceType {
				continue
			}
			for _, of := range it.Offerings {
				if of.Zone == o.Zone && of.CapacityType == o.CapacityType {
					o.PricePerHour, o.PriceUnknown = of.Price, false
				}
			}
		}
	}
	return o
}

func whyNot(nc *karpv1.NodeClaim, reqs requirements.Requirements, it *cloudprovider.InstanceType, o cloudprovider.Offering,
	zoneReq, ctReq *requirements.Requirement, options []string, unavailable map[engine.OfferingKey]bool) (reason, group string) {
	same := func(r string) (string, string) { return r, r }
	if !slices.Contains(options, it.Name) {
		if name, has, short := shortResource(nc.Spec.Resources.Requests, it); short {
			q := nc.Spec.Resources.Requests[name]
			return fmt.Sprintf("too small for %s (needs %s, has %s)", name, formatQty(name, q), formatQty(name, has)),
				fmt.Sprintf("too small for %s (needs %s)", name, formatQty(name, q))
		}
		if r := labelMismatch(reqs, it); r != "" {
			return "requirement " + r, "requirement " + strings.SplitN(r, ":", 2)[0]
		}
		return same("not among the options (the pods' constraints or minValues)")
	}
	if ctReq != nil && !ctReq.Has(o.CapacityType) {
		return same("capacity type " + o.CapacityType + " not allowed")
	}
	if zoneReq != nil && !zoneReq.Has(o.Zone) {
		return same("zone " + o.Zone + " not allowed (the pods' or volumes' zones)")
	}
	if !o.Available || unavailable[engine.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] {
		return same("unavailable (insufficient capacity)")
	}
	return same("allowed and cheaper: the cloud launched another option (capacity, or the price changed since launch)")
}
