package snapshot

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// pendingReservations counts the NodeClaims planned into capacity
// reservations that have not launched yet (no providerID, not being
// deleted): the cloud's available count does not know them, so two
// decisions could otherwise plan more reserved claims than a reservation
// holds. A claim is counted by its reservation-id requirement when it has
// a single one, else by the (instance type, zone) of its planned offering
// (dovetail.sh/planned-offering ".../reserved").
type pendingReservations struct {
	byID     map[string]int
	byOffset map[[2]string]int // (instance type, zone)
}

func countPendingReservations(claims []*karpv1.NodeClaim) pendingReservations {
	p := pendingReservations{byID: map[string]int{}, byOffset: map[[2]string]int{}}
	for _, nc := range claims {
		if nc.Status.ProviderID != "" || nc.DeletionTimestamp != nil {
			continue
		}
		id := ""
		reserved := false
		for _, r := range nc.Spec.Requirements {
			switch {
			case r.Key == awsv1.LabelCapacityReservationID && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1:
				id = r.Values[0]
			case r.Key == karpv1.CapacityTypeLabelKey && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 && r.Values[0] == cloudprovider.CapacityTypeReserved:
				reserved = true
			}
		}
		if id != "" {
			p.byID[id]++
			continue
		}
		parts := strings.Split(nc.Annotations[karpv1.AnnotationPlannedOffering], "/")
		if len(parts) == 3 && parts[2] == cloudprovider.CapacityTypeReserved {
			p.byOffset[[2]string{parts[0], parts[1]}]++
		} else if reserved {
			if it, zone := single(nc, corev1.LabelInstanceTypeStable), single(nc, corev1.LabelTopologyZone); it != "" && zone != "" {
				p.byOffset[[2]string{it, zone}]++
			}
		}
	}
	return p
}

// single is the one value of the NodeClaim's In requirement on key, "" when
// it has none or several.
func single(nc *karpv1.NodeClaim, key string) string {
	for _, r := range nc.Spec.Requirements {
		if r.Key == key && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}

func (p pendingReservations) empty() bool { return len(p.byID) == 0 && len(p.byOffset) == 0 }

// apply returns types with each reserved offering's ReservedCapacity less
// the pending claims of its reservation (unavailable at 0). Claims counted
// by (type, zone) take the room of that type's reservations in the zone in
// offering order, as the engine fills them. types is never modified;
// changed types are copies.
func (p pendingReservations) apply(types []*cloudprovider.InstanceType) []*cloudprovider.InstanceType {
	byID := p.byID
	left := map[[2]string]int{}
	for k, v := range p.byOffset {
		left[k] = v
	}
	var out []*cloudprovider.InstanceType
	for i, it := range types {
		var offs cloudprovider.Offerings
		for j, o := range it.Offerings {
			if o.CapacityType != cloudprovider.CapacityTypeReserved || o.ReservationID == "" {
				continue
			}
			take := min(byID[o.ReservationID], o.ReservedCapacity)
			k := [2]string{it.Name, o.Zone}
			more := min(left[k], o.ReservedCapacity-take)
			left[k] -= more
			take += more
			if take == 0 {
				continue
			}
			if offs == nil {
				offs = slices.Clone(it.Offerings)
			}
			offs[j].ReservedCapacity -= take
			if offs[j].ReservedCapacity <= 0 {
				offs[j].Available = false
			}
		}
		if offs == nil {
			continue
		}
		if out == nil {
			out = slices.Clone(types)
		}
		c := *it
		c.Offerings = offs
		out[i] = &c
	}
	if out == nil {
		return types
	}
	return out
}
