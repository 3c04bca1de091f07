package aws

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Reasons of CreateErrors.
const (
	ReasonNoCompatibleInstanceTypes = "NoCompatibleInstanceTypes"
	ReasonInvalidRequirements       = "InvalidRequirements"
	ReasonLaunchFailed              = "LaunchFailed"
	ReasonLaunchTemplateFailed      = "LaunchTemplateFailed"
	ReasonUserDataInvalid           = "UserDataInvalid"
	// ReasonMinValues: the instance types still available cannot meet the
	// NodeClaim's minValues within the most types one launch may offer.
	ReasonMinValues = "MinValuesNotMet"
)

// Plan is the pure decision of a launch: which capacity type, and which
// instance types with which offerings, cheapest first.
type Plan struct {
	CapacityType string
	Types        []PlannedType
	// Narrowed names the options dropped for what only the provider knows
	// (offerings unavailable since the plan, types the node class no
	// longer offers), each with why; Create says so in an event.
	Narrowed []string
}

// PlannedType is an instance type with the offerings of the plan's
// capacity type a launch may use.
type PlannedType struct {
	Type      *cloudprovider.InstanceType
	Offerings []cloudprovider.Offering
	// MinPrice is the price of its cheapest offering.
	MinPrice float64
}

// typeLabelKeys are the keys an instance type answers for: if a type lacks
// one of these labels, the node will not carry it.
var typeLabelKeys = func() map[string]bool {
	m := map[string]bool{
		karpv1.LabelInstanceType: true, karpv1.LabelArch: true, karpv1.LabelOS: true,
	}
	for _, k := range awsv1.WellKnownLabels {
		m[k] = true
	}
	return m
}()

// typeCompatible reports whether the type's labels satisfy the
// requirements on type-level keys.
func typeCompatible(it *cloudprovider.InstanceType, reqs requirements.Requirements) bool {
	for r := range reqs.All() {
		k := r.Key()
		// Zone id and the capacity reservation's id and type are per
		// offering (allowedOffering).
		if !typeLabelKeys[k] || k == awsv1.LabelTopologyZoneID || k == awsv1.LabelCapacityReservationID || k == awsv1.LabelCapacityReservationType {
			continue
		}
		v, ok := it.Labels[k]
		if ok {
			if !r.Has(v) {
				return false
			}
		} else if !r.AllowsAbsent() {
			return false
		}
	}
	return true
}

func allows(reqs requirements.Requirements, key, value string) bool {
	r := reqs.Get(key)
	return r == nil || r.Has(value)
}

// allowsOffering is allows for a per-offering key an offering may lack
// (value ""): the capacity reservation id and type, which only reserved
// offerings carry.
func allowsOffering(reqs requirements.Requirements, key, value string) bool {
	r := reqs.Get(key)
	if r == nil {
		return true
	}
	if value == "" {
		return r.AllowsAbsent()
	}
	return r.Has(value)
}

// fits reports whether allocatable (capacity less overhead) holds every
// request. It looks only at the requested resources, without building the
// allocatable list.
func fits(it *cloudprovider.InstanceType, requests corev1.ResourceList) bool {
	for name, q := range requests {
		c, ok := it.Capacity[name]
		if !ok {
			if q.Sign() > 0 {
				return false
			}
			continue
		}
		a := c.DeepCopy()
		for _, l := range []corev1.ResourceList{it.Overhead.KubeReserved, it.Overhead.SystemReserved, it.Overhead.EvictionThreshold} {
			if o, ok := l[name]; ok {
				a.Sub(o)
			}
		}
		if a.Cmp(q) < 0 {
			return false
		}
	}
	return true
}

// PlanLaunch turns the engine's decision into a launch. options are the
// NodeClaim's instance-type options in the engine's order of preference
// (the values of its node.kubernetes.io/instance-type In requirement, as
// written); the node class's types are looked up by name and never
// re-ranked, so the provider and the engine cannot disagree (an option
// whose labels contradict the requirements, which the engine never writes,
// is dropped rather than launched):
//
//  1. Each option's offerings in the allowed zones, zone ids and capacity
//     types (spot and on-demand; a NodeClaim that does not constrain the
//     capacity type gets on-demand).
//  2. Capacity type: that of the cheapest available offering of the first
//     option that has one (the offering the engine priced, while it is
//     still available).
//  3. The options with an available offering of that capacity type, in
//     the engine's order, each with its offerings cheapest first;
//     cut to maxTypes by cloudprovider.TruncateLaunchTypes so that the
//     requirements' minValues still hold.
//
// The only narrowing is for what the provider alone knows: options whose
// offerings of the capacity type became unavailable since the plan, and
// options the node class does not offer (any more); Plan.Narrowed names
// them. With no options (a NodeClaim not written by dovetail's
// provisioner, without an instance-type In requirement) the options are
// the node class's types whose labels satisfy the requirements and whose
// allocatable holds the requests, cheapest allowed available offering
// first (ties by name).
//
// Errors: the requirements excluding the region, or no option known to the
// node class with an allowed offering, is a *cloudprovider.CreateError
// (ReasonNoCompatibleInstanceTypes); minValues that cannot hold is a
// *cloudprovider.CreateError with ReasonMinValues; options whose allowed
// offerings are all unavailable is a *cloudprovider.InsufficientCapacityError
// listing them.
func PlanLaunch(types []*cloudprovider.InstanceType, reqs requirements.Requirements, options []string, requests corev1.ResourceList, region string, maxTypes int) (Plan, error) {
	return PlanLaunchAt(types, reqs, options, "", requests, region, maxTypes)
}

// PlanLaunchAt is PlanLaunch with the capacity type the engine priced the
// NodeClaim at (its dovetail.sh/planned-offering annotation; "" when
// unknown). While an option still has an available offering of that
// capacity type, the launch keeps it; when none has, it fails with insufficient
// capacity, so that the engine re-plans, instead of switching capacity type
// on its own.
func PlanLaunchAt(types []*cloudprovider.InstanceType, reqs requirements.Requirements, options []string, plannedCT string, requests corev1.ResourceList, region string, maxTypes int) (Plan, error) {
	if !allows(reqs, karpv1.LabelTopologyRegion, region) {
		return Plan{}, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes, Err: fmt.Errorf("the requirements exclude region %s", region)}
	}
	capTypes := []string{cloudprovider.CapacityTypeSpot, cloudprovider.CapacityTypeOnDemand, cloudprovider.CapacityTypeReserved}
	if reqs.Get(karpv1.CapacityTypeLabelKey) == nil {
		capTypes = []string{cloudprovider.CapacityTypeOnDemand}
	}
	allowedCT := map[string]bool{}
	for _, ct := range capTypes {
		if allows(reqs, karpv1.CapacityTypeLabelKey, ct) {
			allowedCT[ct] = true
		}
	}
	allowedOffering := func(o cloudprovider.Offering) bool {
		return allowedCT[o.CapacityType] && allows(reqs, karpv1.LabelTopologyZone, o.Zone) &&
			(o.ZoneID == "" || allows(reqs, awsv1.LabelTopologyZoneID, o.ZoneID)) &&
			allowsOffering(reqs, awsv1.LabelCapacityReservationID, o.ReservationID) &&
			allowsOffering(reqs, awsv1.LabelCapacityReservationType, o.ReservationType)
	}
	var narrowed []string
	var ordered []*cloudprovider.InstanceType
	if options == nil {
		ordered = fallbackOptions(types, reqs, requests, allowedOffering)
		if len(ordered) == 0 {
			return Plan{}, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes,
				Err: fmt.Errorf("no instance type of the node class satisfies the requirements %s and requests %v", reqs.String(), requests)}
		}
	} else {
		byName := make(map[string]*cloudprovider.InstanceType, len(types))
		for _, it := range types {
			byName[it.Name] = it
		}
		for _, name := range options {
			switch it := byName[name]; {
			case it == nil:
				narrowed = append(narrowed, name+" (not offered by the node class)")
			case typeCompatible(it, reqs):
				ordered = append(ordered, it)
			}
		}
		if len(ordered) == 0 {
			return Plan{}, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes,
				Err: fmt.Errorf("no instance-type option %v of the node class satisfies the requirements %s", options, reqs.String())}
		}
	}
	// Split each option's allowed offerings into available and not.
	type cand struct {
		it          *cloudprovider.InstanceType
		avail, gone []cloudprovider.Offering
	}
	cands := make([]cand, 0, len(ordered))
	ct := ""
	for _, it := range ordered {
		c := cand{it: it}
		for _, o := range it.Offerings {
			if !allowedOffering(o) {
				continue
			}
			if o.Available {
				c.avail = append(c.avail, o)
			} else {
				c.gone = append(c.gone, o)
			}
		}
		sortOfferings(c.avail)
		if ct == "" && len(c.avail) > 0 {
			ct = c.avail[0].CapacityType
		}
		cands = append(cands, c)
	}
	if plannedCT != "" && options != nil && allowedCT[plannedCT] && ct != plannedCT {
		keep := false
		var gone []cloudprovider.OfferingKey
		for _, c := range cands {
			keep = keep || slices.ContainsFunc(c.avail, func(o cloudprovider.Offering) bool { return o.CapacityType == plannedCT })
			for _, o := range c.gone {
				if o.CapacityType == plannedCT {
					gone = append(gone, cloudprovider.OfferingKey{InstanceType: c.it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
				}
			}
		}
		if !keep {
			return Plan{}, cloudprovider.NewInsufficientCapacityError(
				fmt.Errorf("every %s offering of the planned instance types became unavailable since the plan", plannedCT), gone...)
		}
		ct = plannedCT
		narrowed = append(narrowed, "the cheapest "+plannedCT+" offerings (unavailable since the plan)")
	}
	if ct == "" {
		var unavailable []cloudprovider.OfferingKey
		for _, c := range cands {
			for _, o := range c.gone {
				unavailable = append(unavailable, cloudprovider.OfferingKey{InstanceType: c.it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
			}
		}
		if len(unavailable) == 0 {
			return Plan{}, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes,
				Err: fmt.Errorf("no instance-type option %v has an offering the requirements %s allow", options, reqs.String())}
		}
		return Plan{}, cloudprovider.NewInsufficientCapacityError(errors.New("every allowed offering is unavailable"), unavailable...)
	}
	plan := Plan{CapacityType: ct}
	var keep []*cloudprovider.InstanceType
	offs := map[string][]cloudprovider.Offering{}
	for _, c := range cands {
		var of []cloudprovider.Offering
		for _, o := range c.avail {
			if o.CapacityType == ct {
				of = append(of, o)
			}
		}
		if len(of) == 0 {
			if options != nil && slices.ContainsFunc(c.gone, func(o cloudprovider.Offering) bool { return o.CapacityType == ct }) {
				narrowed = append(narrowed, c.it.Name+" ("+ct+" offerings unavailable since the plan)")
			}
			continue
		}
		keep = append(keep, c.it)
		offs[c.it.Name] = of
	}
	kept, err := cloudprovider.TruncateLaunchTypes(keep, reqs, maxTypes)
	if err != nil {
		return Plan{}, &cloudprovider.CreateError{Reason: ReasonMinValues,
			Err: fmt.Errorf("the %d %s instance types still available cannot meet minValues: %w", len(keep), ct, err)}
	}
	for _, it := range kept {
		of := offs[it.Name]
		plan.Types = append(plan.Types, PlannedType{Type: it, Offerings: of, MinPrice: of[0].Price})
	}
	plan.Narrowed = narrowed
	return plan, nil
}

func sortOfferings(offs []cloudprovider.Offering) {
	sort.SliceStable(offs, func(i, j int) bool {
		if offs[i].Price != offs[j].Price {
			return offs[i].Price < offs[j].Price
		}
		if offs[i].CapacityType != offs[j].CapacityType {
			return offs[i].CapacityType < offs[j].CapacityType
		}
		return offs[i].Zone < offs[j].Zone
	})
}

// fallbackOptions orders the node class's types for a NodeClaim without
// instance-type options: compatible and fitting types, cheapest allowed
// available offering first (types with none last), ties by name.
func fallbackOptions(types []*cloudprovider.InstanceType, reqs requirements.Requirements, requests corev1.ResourceList, allowed func(cloudprovider.Offering) bool) []*cloudprovider.InstanceType {
	type ranked struct {
		it    *cloudprovider.InstanceType
		price float64
	}
	var rs []ranked
	for _, it := range types {
		if !typeCompatible(it, reqs) || !fits(it, requests) {
			continue
		}
		best := math.Inf(1)
		for _, o := range it.Offerings {
			if o.Available && allowed(o) && o.Price < best {
				best = o.Price
			}
		}
		rs = append(rs, ranked{it, best})
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].price != rs[j].price {
			return rs[i].price < rs[j].price
		}
		return rs[i].it.Name < rs[j].it.Name
	})
	out := make([]*cloudprovider.InstanceType, len(rs))
	for i, r := range rs {
		out[i] = r.it
	}
	return out
}
