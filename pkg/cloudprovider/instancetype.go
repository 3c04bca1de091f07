package cloudprovider

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Capacity types, the values of the karpenter.sh/capacity-type label.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// InstanceType is one launchable machine shape: the labels every node of the
// shape carries, its capacity, what the node keeps for itself, and where and
// at what price it can be had.
//
// An InstanceType is a value shared between goroutines once built: callers must
// not modify one they did not create.
type InstanceType struct {
	// Name is the cloud's name for the shape, e.g. "m7g.large".
	Name string
	// Labels are the single-valued node labels of the shape: the well-known
	// node.kubernetes.io/instance-type, kubernetes.io/arch, kubernetes.io/os
	// and the provider's instance labels (karpenter.k8s.aws/instance-family,
	// ...). Zone, zone id and capacity type vary per offering and are not here.
	Labels map[string]string
	// Capacity is what the node reports as capacity: cpu, memory, pods,
	// ephemeral-storage and extended resources such as nvidia.com/gpu.
	Capacity corev1.ResourceList
	// Overhead is what the node keeps back from its capacity.
	Overhead Overhead
	// Offerings are the (zone, capacity type) pairs the shape is sold in.
	Offerings Offerings
	// CapacityOverlays name the NodeOverlays that added extended resources
	// to Capacity (pkg/overlay); empty for the cloud's shape.
	CapacityOverlays []string
}

// Overhead is what a node keeps back from its capacity: allocatable =
// capacity - KubeReserved - SystemReserved - EvictionThreshold, floored at
// zero per resource.
type Overhead struct {
	KubeReserved      corev1.ResourceList
	SystemReserved    corev1.ResourceList
	EvictionThreshold corev1.ResourceList
}

// Total sums the three parts of the overhead.
func (o Overhead) Total() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, l := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
		for name, q := range l {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	return total
}

// Allocatable is what pods may request on a node of this shape.
func (it *InstanceType) Allocatable() corev1.ResourceList {
	alloc := make(corev1.ResourceList, len(it.Capacity))
	overhead := it.Overhead.Total()
	for name, q := range it.Capacity {
		a := q.DeepCopy()
		if o, ok := overhead[name]; ok {
			a.Sub(o)
		}
		if a.Sign() < 0 {
			a = *resource.NewQuantity(0, q.Format)
		}
		alloc[name] = a
	}
	return alloc
}

// Offering is a shape sold in one zone at one capacity type.
type Offering struct {
	// Zone is the zone name (topology.kubernetes.io/zone), e.g. "us-east-1a".
	Zone string
	// ZoneID is the account-independent zone id (topology.k8s.aws/zone-id),
	// e.g. "use1-az1"; empty where the cloud has none.
	ZoneID string
	// CapacityType is one of CapacityTypeSpot, CapacityTypeOnDemand,
	// CapacityTypeReserved.
	CapacityType string
	// Price is the price in USD per hour.
	Price float64
	// Available is false while the cloud reports no capacity for the offering
	// (for example after an insufficient-capacity error).
	Available bool
	// PriceOverlay names the NodeOverlay that set Price (pkg/overlay);
	// empty for the cloud's price.
	PriceOverlay string
	// ListPrice is the cloud's price before PriceOverlay set Price (for
	// explanations: the overlay's name and the price it replaced); 0 when
	// PriceOverlay is empty.
	ListPrice float64
	// ReservationID, ReservationType and ReservedCapacity describe a
	// CapacityTypeReserved offering: the capacity reservation it launches
	// into, the reservation's type ("default" for an on-demand capacity
	// reservation, "capacity-block") and how many more instances it holds
	// now. Empty and zero for other capacity types.
	ReservationID    string
	ReservationType  string
	ReservedCapacity int
}

// Offerings is a list of offerings with query helpers.
type Offerings []Offering

// Available returns the offerings that can be launched now.
func (os Offerings) Available() Offerings {
	out := make(Offerings, 0, len(os))
	for _, o := range os {
		if o.Available {
			out = append(out, o)
		}
	}
	return out
}

// Cheapest returns the cheapest offering, preferring on-demand over spot over
// reserved at equal price and then the lexically smaller zone, so the choice
// is deterministic. ok is false for an empty list.
func (os Offerings) Cheapest() (o Offering, ok bool) {
	best := -1
	for i := range os {
		if best < 0 || lessOffering(os[i], os[best]) {
			best = i
		}
	}
	if best < 0 {
		return Offering{}, false
	}
	return os[best], true
}

// MinPrice is the price of the cheapest offering, or +Inf when there is none.
func (os Offerings) MinPrice() float64 {
	if o, ok := os.Cheapest(); ok {
		return o.Price
	}
	return math.Inf(1)
}

// Sort orders offerings cheapest first with Cheapest's tie-breaks.
func (os Offerings) Sort() {
	sort.SliceStable(os, func(i, j int) bool { return lessOffering(os[i], os[j]) })
}

func lessOffering(a, b Offering) bool {
	if a.Price != b.Price {
		return a.Price < b.Price
	}
	if a.CapacityType != b.CapacityType {
		return capacityTypeRank(a.CapacityType) < capacityTypeRank(b.CapacityType)
	}
	return a.Zone < b.Zone
}

func capacityTypeRank(ct string) int {
	switch ct {
	case CapacityTypeOnDemand:
		return 0
	case CapacityTypeSpot:
		return 1
	default:
		return 2
	}
}
