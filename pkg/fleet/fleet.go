package fleet

import (
	"cmp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/costrecord"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// Price sources.
const (
	PriceRecorded = "recorded" // the NodeClaim's dovetail.sh/price-per-hour
	PriceCatalog  = "catalog"  // the built-in catalog, by the node's labels
	PriceOverlay  = "overlay"  // a NodeOverlay's adjusted price (Node.Overlay)
	PriceUnknown  = "unknown"
)

// Unmanaged is the pool of nodes without a karpenter.sh/nodepool label.
const Unmanaged = "(unmanaged)"

// Node is one row of the view.
type Node struct {
	Name         string  `json:"name"`
	NodeClaim    string  `json:"nodeClaim,omitempty"`
	Pool         string  `json:"nodePool"`
	InstanceType string  `json:"instanceType"`
	CapacityType string  `json:"capacityType"`
	Zone         string  `json:"zone"`
	PricePerHour float64 `json:"pricePerHour"`
	PriceSource  string  `json:"priceSource"`
	// Overlay names the NodeOverlay whose adjusted price PricePerHour is
	// (PriceSource overlay).
	Overlay string `json:"overlay,omitempty"`
	// Commitment names the Savings Plan or Reserved Instance that covers
	// CoveredPerHour of PricePerHour (on-demand nodes; pkg/commitment).
	Commitment     string  `json:"commitment,omitempty"`
	CoveredPerHour float64 `json:"coveredPerHour,omitempty"`
	Launching      bool    `json:"launching,omitempty"`
	// CPU and memory: allocatable and the requests of its pods (millicores,
	// bytes).
	CPUAllocatable    int64 `json:"cpuAllocatableMillis"`
	CPURequested      int64 `json:"cpuRequestedMillis"`
	MemoryAllocatable int64 `json:"memoryAllocatableBytes"`
	MemoryRequested   int64 `json:"memoryRequestedBytes"`
	Pods              int   `json:"pods"`
}

// Input is what the view is built from.
type Input struct {
	Nodes      []*corev1.Node
	NodeClaims []*karpv1.NodeClaim
	Pods       []*corev1.Pod
	Catalog    *catalog.Catalog // nil: no catalog prices
	Region     string
	// Pools are the engine's NodePools, with their instance types as
	// NodeOverlays adjusted them: a node of an offering an overlay priced
	// is priced at the overlay's price.
	Pools []engine.NodePool
	// Commitments cover on-demand rows (in name order, as the engine
	// counts them).
	Commitments commitment.Spec
}

// CapacityType reads a node's capacity type: karpenter.sh/capacity-type,
// else EKS's eks.amazonaws.com/capacityType (ON_DEMAND, SPOT).
func CapacityType(labels map[string]string) string {
	if ct := labels[karpv1.CapacityTypeLabelKey]; ct != "" {
		return ct
	}
	switch labels["eks.amazonaws.com/capacityType"] {
	case "ON_DEMAND":
		return karpv1.CapacityTypeOnDemand
	case "SPOT":
		return karpv1.CapacityTypeSpot
	}
	return ""
}

// Build returns the rows, nodes by name first, then launching NodeClaims.
func Build(in Input) []Node {
	// A node's claim by providerID first; a claim naming a node whose
	// providerID is another's matches nothing (never priced from it).
	byNode := snapshot.NodeClaimsByNode(in.Nodes, in.NodeClaims)
	podsOn := map[string][]*corev1.Pod{}
	for _, p := range in.Pods {
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
		}
	}
	var out []Node
	matched := map[*karpv1.NodeClaim]bool{}
	for _, n := range in.Nodes {
		nc := byNode[n.Name]
		row := Node{Name: n.Name, Pool: n.Labels[karpv1.NodePoolLabelKey], InstanceType: n.Labels[corev1.LabelInstanceTypeStable],
			CapacityType: CapacityType(n.Labels), Zone: n.Labels[corev1.LabelTopologyZone]}
		if row.Pool == "" {
			row.Pool = Unmanaged
		}
		if nc != nil {
			matched[nc] = true
			row.NodeClaim = nc.Name
		}
		row.PricePerHour, row.PriceSource = price(in, nc, row.InstanceType, row.Zone, row.CapacityType)
		row.CPUAllocatable = n.Status.Allocatable.Cpu().MilliValue()
		row.MemoryAllocatable = n.Status.Allocatable.Memory().Value()
		for _, p := range podsOn[n.Name] {
			r := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
			row.CPURequested += r.Cpu().MilliValue()
			row.MemoryRequested += r.Memory().Value()
			row.Pods++
		}
		out = append(out, row)
	}
	slices.SortFunc(out, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	var launching []Node
	for _, nc := range in.NodeClaims {
		if matched[nc] || nc.DeletionTimestamp != nil {
			continue
		}
		row := Node{Name: nc.Name, NodeClaim: nc.Name, Pool: nc.Labels[karpv1.NodePoolLabelKey], Launching: true,
			InstanceType: nc.Labels[corev1.LabelInstanceTypeStable], CapacityType: nc.Labels[karpv1.CapacityTypeLabelKey],
			Zone: nc.Labels[corev1.LabelTopologyZone]}
		row.PricePerHour, row.PriceSource = price(in, nc, row.InstanceType, row.Zone, row.CapacityType)
		row.CPUAllocatable = nc.Status.Allocatable.Cpu().MilliValue()
		row.MemoryAllocatable = nc.Status.Allocatable.Memory().Value()
		launching = append(launching, row)
	}
	slices.SortFunc(launching, func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	out = append(out, launching...)
	for i := range out {
		if v, name, ok := overlaid(in.Pools, out[i]); ok {
			out[i].PricePerHour, out[i].PriceSource, out[i].Overlay = v, PriceOverlay, name
		}
	}
	cover(in, out)
	return out
}

// overlaid is the price a NodeOverlay gave the row's offering in its pool.
func overlaid(pools []engine.NodePool, r Node) (float64, string, bool) {
	for i := range pools {
		if pools[i].Name != r.Pool {
			continue
		}
		for _, t := range pools[i].InstanceTypes {
			if t == nil || t.Name != r.InstanceType {
				continue
			}
			for _, o := range t.Offerings {
				if o.Zone == r.Zone && o.CapacityType == r.CapacityType && o.PriceOverlay != "" {
					return o.Price, o.PriceOverlay, true
				}
			}
		}
	}
	return 0, "", false
}

// cover lets the commitments cover the on-demand rows, in name order.
func cover(in Input, rows []Node) {
	l := commitment.NewLedger(in.Commitments)
	if l == nil {
		return
	}
	var uses []commitment.Use
	idx := map[string]int{}
	for i, r := range rows {
		if r.CapacityType != karpv1.CapacityTypeOnDemand || r.PricePerHour <= 0 || r.InstanceType == "" {
			continue
		}
		idx[r.Name] = i
		uses = append(uses, commitment.Use{Name: r.Name, Usage: commitment.Usage{InstanceType: r.InstanceType, Zone: r.Zone, Region: in.Region, PricePerHour: r.PricePerHour}})
	}
	for name, c := range commitment.Account(l, uses) {
		r := &rows[idx[name]]
		r.Commitment, r.CoveredPerHour = c.Commitment, min(c.Covered, r.PricePerHour)
	}
}

func price(in Input, nc *karpv1.NodeClaim, typ, zone, ct string) (float64, string) {
	if nc != nil {
		if s, ok := nc.Annotations[karpv1.AnnotationPricePerHour]; ok {
			// A recorded price beyond any instance (1.7e308, +Inf) is a
			// corrupt annotation: priced from the catalog instead, so sums
			// stay finite.
			if p, err := strconv.ParseFloat(s, 64); err == nil && p >= 0 && p <= costrecord.MaxPricePerHour {
				return p, PriceRecorded
			}
		}
	}
	if in.Catalog == nil || typ == "" {
		return 0, PriceUnknown
	}
	od, ok := in.Catalog.OnDemandPrice(in.Region, typ)
	if !ok {
		return 0, PriceUnknown
	}
	if ct == karpv1.CapacityTypeSpot {
		return catalog.SpotPrice(in.Region, zone, typ, od), PriceCatalog
	}
	return od, PriceCatalog
}

// Group is a total over rows.
type Group struct {
	Name             string  `json:"name"`
	Nodes            int     `json:"nodes"`
	SpotNodes        int     `json:"spotNodes"`
	PricePerHour     float64 `json:"pricePerHour"`
	SpotPricePerHour float64 `json:"spotPricePerHour"`
	// CoveredPerHour is the part of PricePerHour commitments cover;
	// OnDemandUncoveredPerHour the on-demand part they do not.
	CoveredPerHour           float64 `json:"coveredPerHour"`
	OnDemandUncoveredPerHour float64 `json:"onDemandUncoveredPerHour"`
}

// GroupBy sums rows per key(row), sorted by $/h, highest first.
func GroupBy(rows []Node, key func(Node) string) []Group {
	idx := map[string]int{}
	var out []Group
	for _, r := range rows {
		k := key(r)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Group{Name: k})
		}
		g := &out[i]
		g.Nodes++
		g.PricePerHour += r.PricePerHour
		if r.CapacityType == karpv1.CapacityTypeSpot {
			g.SpotNodes++
			g.SpotPricePerHour += r.PricePerHour
		}
		g.CoveredPerHour += r.CoveredPerHour
		if r.CapacityType == karpv1.CapacityTypeOnDemand {
			g.OnDemandUncoveredPerHour += r.PricePerHour - r.CoveredPerHour
		}
	}
	slices.SortStableFunc(out, func(a, b Group) int {
		return cmp.Or(cmp.Compare(b.PricePerHour, a.PricePerHour), cmp.Compare(a.Name, b.Name))
	})
	return out
}
