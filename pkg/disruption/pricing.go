package disruption

// What nodes cost: their price (from the NodeClaim, an overlay or the
// pool's offerings) and the eviction cost of their pods.

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// price fills what the node costs, from its state, labels and the pool's
// offerings.
func (p *planner) price(n *cnode, en *engine.ExistingNode) {
	l := en.Node.Labels
	n.it = firstNonEmpty(n.st.InstanceType, l[corev1.LabelInstanceTypeStable])
	n.ct = firstNonEmpty(n.st.CapacityType, l["karpenter.sh/capacity-type"], capacityTypeFromEKS(l["eks.amazonaws.com/capacityType"]))
	n.zone = firstNonEmpty(n.st.Zone, l[corev1.LabelTopologyZone])
	n.price = n.st.PricePerHour
	if v, ok := p.overlaidPrice(n.pool, n.it, n.zone, n.ct); ok {
		// A NodeOverlay prices the offering: the node and its
		// replacements are compared at the same adjusted prices.
		n.price = v
	}
	if n.price <= 0 {
		n.price = en.PricePerHour
	}
	if n.price <= 0 {
		n.price = p.offeringPrice(n.pool, n.it, n.zone, n.ct)
	}
	if c, ok := p.coverage[n.name]; ok && n.price > 0 {
		// A commitment pays for it: removing it saves only what is not
		// covered, and a spot replacement is dearer than a covered node.
		n.price = c.Marginal(n.price)
	}
	n.known = n.it != "" && n.ct != "" && n.zone != "" && n.price > 0 && !math.IsInf(n.price, 0) && !math.IsNaN(n.price)
	if !n.known && n.price > 0 && !math.IsInf(n.price, 0) {
		// A price without the rest still counts for the fleet.
		n.known = n.it != "" && n.price > 0
	}
}

func capacityTypeFromEKS(v string) string {
	switch v {
	case "ON_DEMAND":
		return cloudprovider.CapacityTypeOnDemand
	case "SPOT":
		return cloudprovider.CapacityTypeSpot
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// offeringPrice looks a price up in the pool's instance types (any pool's
// when the node has none), 0 when unknown.
// overlaidPrice is the price of the pool's offering when a NodeOverlay set
// it (cloudprovider.Offering.PriceOverlay).
func (p *planner) overlaidPrice(pool, it, zone, ct string) (float64, bool) {
	np := p.pools[pool]
	if np == nil {
		return 0, false
	}
	for _, t := range np.InstanceTypes {
		if t == nil || t.Name != it {
			continue
		}
		for _, o := range t.Offerings {
			if o.Zone == zone && o.CapacityType == ct && o.PriceOverlay != "" {
				return o.Price, true
			}
		}
	}
	return 0, false
}

func (p *planner) offeringPrice(pool, it, zone, ct string) float64 {
	look := func(np *engine.NodePool) float64 {
		for _, t := range np.InstanceTypes {
			if t == nil || t.Name != it {
				continue
			}
			for _, o := range t.Offerings {
				if o.Zone == zone && o.CapacityType == ct {
					return o.Price
				}
			}
		}
		return 0
	}
	if np := p.pools[pool]; np != nil {
		if v := look(np); v > 0 {
			return v
		}
	}
	for i := range p.in.Cluster.NodePools {
		if v := look(&p.in.Cluster.NodePools[i]); v > 0 {
			return v
		}
	}
	return 0
}

// EvictionCost is the peer's cost of evicting one pod: 1 plus its deletion
// cost over 2^27 plus its priority over 2^25, clamped to [-10, 10].
func EvictionCost(pod *corev1.Pod) float64 {
	c := 1.0
	if v, ok := pod.Annotations["controller.kubernetes.io/pod-deletion-cost"]; ok {
		if d, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(d) && !math.IsInf(d, 0) {
			c += d / (1 << 27)
		}
	}
	if pod.Spec.Priority != nil {
		c += float64(*pod.Spec.Priority) / (1 << 25)
	}
	return math.Max(-10, math.Min(10, c))
}

// costs computes the node's disruption cost: its pods' eviction costs,
// weighted by the share of its lifetime left.
func (p *planner) costs(n *cnode) {
	sum := 0.0
	for _, pod := range n.pods {
		c := EvictionCost(pod)
		sum += c
		if c > 0 {
			n.podCost += c
		}
	}
	n.cost = sum * p.lifetimeLeft(n)
}

func (p *planner) lifetimeLeft(n *cnode) float64 {
	return lifeLeft(n.st.Created, p.now, n.policy.ExpireAfter)
}
