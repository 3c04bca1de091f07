package aws

import (
	"errors"
	"fmt"
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
)

// Plan is the pure decision of a launch: which capacity type, and which
// instance types with which offerings, cheapest first.
type Plan struct {
	CapacityType string
	Types        []PlannedType
}

// PlannedType is an instance type with the offerings of the plan's
// capacity type a launch may use.
type PlannedType struct {
	Type      *cloudprovider.InstanceType
	Offerings []cloudprovider.Offering
	// MinPrice is the price of its cheapest offering.
	MinPrice float64
}

// claimRequirements converts a NodeClaim's requirements.
func claimRequirements(reqs []karpv1.NodeSelectorRequirementWithMinValues) (requirements.Requirements, error) {
	var out requirements.Requirements
	for i, r := range reqs {
		req, err := requirements.New(r.Key, requirements.Operator(r.Operator), r.Values, nil)
		if err != nil {
			return requirements.Requirements{}, fmt.Errorf("spec.requirements[%d]: %w", i, err)
		}
		out.Add(req)
	}
	return out, nil
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
		if !typeLabelKeys[k] || k == awsv1.LabelTopologyZoneID {
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

// PlanLaunch decides a launch from the node class's instance types, the
// NodeClaim's requirements and requests, and the region:
//
//  1. Compatible types: type labels satisfy the requirements and
//     allocatable holds the requests.
//  2. Their offerings in allowed zones, zone ids and capacity types. A
//     NodeClaim that does not constrain the capacity type gets on-demand.
//  3. Capacity type: spot when allowed and some available spot offering is
//     cheaper than the cheapest available on-demand one (or on-demand is
//     not allowed or not available); on-demand otherwise.
//  4. Types with an available offering of that capacity type, cheapest
//     first (ties by name), at most maxTypes.
//
// No compatible type is a *cloudprovider.CreateError; compatible types
// whose allowed offerings are all unavailable is a
// *cloudprovider.InsufficientCapacityError listing them.
func PlanLaunch(types []*cloudprovider.InstanceType, reqs requirements.Requirements, requests corev1.ResourceList, region string, maxTypes int) (Plan, error) {
	if !allows(reqs, karpv1.LabelTopologyRegion, region) {
		return Plan{}, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes, Err: fmt.Errorf("the requirements exclude region %s", region)}
	}
	capTypes := []string{cloudprovider.CapacityTypeSpot, cloudprovider.CapacityTypeOnDemand}
	if reqs.Get(karpv1.CapacityTypeLabelKey) == nil {
		capTypes = []string{cloudprovider.CapacityTypeOnDemand}
	}
	allowedCT := map[string]bool{}
	for _, ct := range capTypes {
		if allows(reqs, karpv1.CapacityTypeLabelKey, ct) {
			allowedCT[ct] = true
		}
	}
	type cand struct {
		it       *cloudprovider.InstanceType
		spot, od []cloudprovider.Offering
	}
	availOf := func(c *cand, ct string) []cloudprovider.Offering {
		if ct == cloudprovider.CapacityTypeSpot {
			return c.spot
		}
		return c.od
	}
	var cands []cand
	var unavailable []cloudprovider.OfferingKey
	compatible := 0
	for _, it := range types {
		if !typeCompatible(it, reqs) || !fits(it, requests) {
			continue
		}
		compatible++
		c := cand{it: it}
		for _, o := range it.Offerings {
			if !allowedCT[o.CapacityType] || !allows(reqs, karpv1.LabelTopologyZone, o.Zone) ||
				(o.ZoneID != "" && !allows(reqs, awsv1.LabelTopologyZoneID, o.ZoneID)) {
				continue
			}
			if !o.Available {
				unavailable = append(unavailable, cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType})
				continue
			}
			switch o.CapacityType {
			case cloudprovider.CapacityTypeSpot:
				c.spot = append(c.spot, o)
			case cloudprovider.CapacityTypeOnDemand:
				c.od = append(c.od, o)
			}
		}
		if len(c.spot)+len(c.od) > 0 {
			cands = append(cands, c)
		}
	}
	if compatible == 0 {
		return Plan{}, &cloudprovider.CreateError{Reason: ReasonNoCompatibleInstanceTypes,
			Err: fmt.Errorf("no instance type of the node class satisfies the requirements %s and requests %v", reqs.String(), requests)}
	}
	if len(cands) == 0 {
		return Plan{}, cloudprovider.NewInsufficientCapacityError(errors.New("every allowed offering is unavailable"), unavailable...)
	}
	cheapest := func(ct string) float64 {
		best := -1.0
		for i := range cands {
			for _, o := range availOf(&cands[i], ct) {
				if best < 0 || o.Price < best {
					best = o.Price
				}
			}
		}
		return best
	}
	ct := cloudprovider.CapacityTypeOnDemand
	spot, od := cheapest(cloudprovider.CapacityTypeSpot), cheapest(cloudprovider.CapacityTypeOnDemand)
	if spot >= 0 && (od < 0 || spot < od) {
		ct = cloudprovider.CapacityTypeSpot
	}
	plan := Plan{CapacityType: ct}
	for i := range cands {
		c := &cands[i]
		offs := availOf(c, ct)
		if len(offs) == 0 {
			continue
		}
		sort.Slice(offs, func(i, j int) bool {
			if offs[i].Price != offs[j].Price {
				return offs[i].Price < offs[j].Price
			}
			return offs[i].Zone < offs[j].Zone
		})
		plan.Types = append(plan.Types, PlannedType{Type: c.it, Offerings: offs, MinPrice: offs[0].Price})
	}
	sort.SliceStable(plan.Types, func(i, j int) bool {
		a, b := plan.Types[i], plan.Types[j]
		if a.MinPrice != b.MinPrice {
			return a.MinPrice < b.MinPrice
		}
		return a.Type.Name < b.Type.Name
	})
	if len(plan.Types) > maxTypes {
		plan.Types = plan.Types[:maxTypes]
	}
	return plan, nil
}
