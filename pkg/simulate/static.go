package simulate

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// StaticPool is what the plan does for a static NodePool (spec.replicas):
// the NodeClaims the static controller would create to reach its replica
// count, or the ones it would remove above it.
type StaticPool struct {
	NodePool string `json:"nodePool"`
	// Replicas is spec.replicas; Has is how many nodes and NodeClaims of
	// the pool the input has (not being deleted).
	Replicas int64 `json:"replicas"`
	Has      int   `json:"has"`
	// Launched is how many NodeClaims the plan adds (in NodeClaims, marked
	// static); Limited says why fewer than the missing replicas
	// (limits.nodes, or no instance type the pool can launch).
	Launched int    `json:"launched"`
	Limited  string `json:"limited,omitempty"`
	// Removed are the nodes or NodeClaims the static controller would
	// remove, in its order (disruption.ScaleDown); their pods are planned
	// again as pending pods.
	Removed []StaticRemoval `json:"removed,omitempty"`
}

// StaticRemoval is one node a static pool's scale-down removes.
type StaticRemoval struct {
	Name string `json:"name"`
	// Rank is disruption.ScaleDown's: NotLaunched, Empty,
	// CheapestToDisrupt or DoNotDisrupt.
	Rank string `json:"rank"`
}

// staticClaim is a NodeClaim planStatic adds to the input as in flight.
type staticClaim struct {
	name    string
	planned *engine.NewNodeClaim
}

// planStatic brings each static NodePool of the input to its replica
// count, as the static controller (pkg/controllers/static) does: missing
// replicas, cut by limits.nodes (every node and NodeClaim of the pool
// counted, deleting ones included), become in-flight NodeClaims of the
// instance type engine.StaticNodeClaim chooses (the controller's choice:
// the cheapest available offering the pool allows), so pending pods may be
// placed on them; replicas above the count are chosen by
// disruption.ScaleDown, marked for deletion (in-flight ones dropped), and
// their pods become pending. It changes in and returns what it did.
func (m *Manifests) planStatic(in *engine.Input, now time.Time) ([]StaticPool, []staticClaim) {
	return m.planStaticPools(in, now, true)
}

// planStaticPools is planStatic; with scaleDown false, pools above their
// count are reported (Has over Replicas) but nothing is removed (the
// disruption mode shows the planner's commands only).
func (m *Manifests) planStaticPools(in *engine.Input, now time.Time, scaleDown bool) ([]StaticPool, []staticClaim) {
	var pools []*karpv1.NodePool
	for _, np := range m.NodePools {
		if np.Spec.Replicas != nil {
			pools = append(pools, np)
		}
	}
	slices.SortFunc(pools, func(a, b *karpv1.NodePool) int { return strings.Compare(a.Name, b.Name) })
	used := map[string]bool{}
	for _, en := range in.Nodes {
		if en.Node != nil {
			used[en.Node.Name] = true
		}
	}
	for _, c := range in.InFlight {
		used[c.Name] = true
	}
	var out []StaticPool
	var claims []staticClaim
	for _, np := range pools {
		if !slices.ContainsFunc(in.NodePools, func(p engine.NodePool) bool { return p.Name == np.Name }) {
			continue
		}
		sp := StaticPool{NodePool: np.Name, Replicas: *np.Spec.Replicas}
		all := 0
		for _, en := range in.Nodes {
			if en.NodePool == np.Name {
				all++
				if !en.MarkedForDeletion {
					sp.Has++
				}
			}
		}
		for _, c := range in.InFlight {
			if c.NodePool == np.Name {
				all++
				sp.Has++
			}
		}
		switch have := int64(sp.Has); {
		case have < sp.Replicas:
			missing := sp.Replicas - have
			n := staticRoom(np, missing, int64(all))
			if n < missing {
				q := np.Spec.Limits[corev1.ResourceName("nodes")]
				sp.Limited = fmt.Sprintf("limits.nodes %s allows %d more NodeClaims (the pool has %d, deleting ones included)",
					q.String(), n, all)
			}
			if n == 0 {
				break
			}
			planned, err := engine.StaticNodeClaim(in, np.Name)
			if err != nil {
				sp.Limited = err.Error()
				break
			}
			for k := 1; int64(sp.Launched) < n; k++ {
				name := fmt.Sprintf("%s-%d", np.Name, k)
				if used[name] {
					continue
				}
				used[name] = true
				in.InFlight = append(in.InFlight, staticInFlight(in, name, planned))
				claims = append(claims, staticClaim{name: name, planned: planned})
				sp.Launched++
			}
		case have > sp.Replicas && scaleDown:
			sp.Removed = m.staticScaleDown(in, np, int(have-sp.Replicas), now)
		}
		out = append(out, sp)
	}
	return out, claims
}

// staticRoom is pkg/controllers/static.Room (TestStaticRoomIsTheController's
// keeps them equal): the missing replicas, cut to what limits.nodes leaves
// when every NodeClaim of the pool is counted.
func staticRoom(np *karpv1.NodePool, missing, all int64) int64 {
	if q, ok := np.Spec.Limits[corev1.ResourceName("nodes")]; ok {
		missing = min(missing, q.Value()-all)
	}
	return max(missing, 0)
}

// staticInFlight is the planned static node as an in-flight NodeClaim: its
// requirements pinned to the offering the cloud launches (instance type,
// zone, capacity type), that type's allocatable, its price.
func staticInFlight(in *engine.Input, name string, planned *engine.NewNodeClaim) engine.InFlightNodeClaim {
	off := planned.Offering
	pin := requirements.NewRequirements(
		requirements.MustNew(corev1.LabelInstanceTypeStable, requirements.In, []string{off.InstanceType}, nil),
		requirements.MustNew(corev1.LabelTopologyZone, requirements.In, []string{off.Zone}, nil),
		requirements.MustNew(karpv1.CapacityTypeLabelKey, requirements.In, []string{off.CapacityType}, nil),
	)
	c := engine.InFlightNodeClaim{
		Name: name, NodePool: planned.NodePool, Requirements: planned.Requirements.Intersection(pin),
		Taints: planned.Taints, StartupTaints: planned.StartupTaints,
		InstanceTypeOptions: []string{off.InstanceType}, PricePerHour: off.Price,
	}
	for _, p := range in.NodePools {
		if p.Name != planned.NodePool {
			continue
		}
		for _, it := range p.InstanceTypes {
			if it != nil && it.Name == off.InstanceType {
				c.Allocatable = it.Allocatable()
			}
		}
	}
	return c
}

// staticScaleDown picks count nodes or NodeClaims of np to remove with
// disruption.ScaleDown (the static controller's choice), marks the nodes
// for deletion, drops the in-flight NodeClaims, and makes their pods
// (daemonset and finished pods aside) pending again.
func (m *Manifests) staticScaleDown(in *engine.Input, np *karpv1.NodePool, count int, now time.Time) []StaticRemoval {
	sd := disruption.ScaleDownInput{Count: count, Now: now, ExpireAfter: snapshot.DisruptionPolicy(np).ExpireAfter}
	for _, en := range in.Nodes {
		if en.NodePool == np.Name && !en.MarkedForDeletion && en.Node != nil {
			sd.Nodes = append(sd.Nodes, disruption.StaticNode{NodeClaim: en.Node.Name, Launched: true, Pods: en.Pods, Created: en.Node.CreationTimestamp.Time})
		}
	}
	for _, c := range in.InFlight {
		if c.NodePool == np.Name {
			sd.Nodes = append(sd.Nodes, disruption.StaticNode{NodeClaim: c.Name, Pods: c.Pods})
		}
	}
	picks := disruption.ScaleDown(sd)
	gone := map[string]bool{}
	out := make([]StaticRemoval, 0, len(picks))
	for _, p := range picks {
		gone[p.NodeClaim] = true
		out = append(out, StaticRemoval{Name: p.NodeClaim, Rank: p.Rank})
	}
	repend := func(pods []*corev1.Pod) {
		for _, p := range pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || staticDaemonPod(p) {
				continue
			}
			q := p.DeepCopy()
			q.Spec.NodeName = ""
			q.Status = corev1.PodStatus{Phase: corev1.PodPending}
			in.Pods = append(in.Pods, q)
		}
	}
	for i := range in.Nodes {
		if en := &in.Nodes[i]; en.Node != nil && en.NodePool == np.Name && gone[en.Node.Name] {
			en.MarkedForDeletion = true
			repend(en.Pods)
		}
	}
	in.InFlight = slices.DeleteFunc(in.InFlight, func(c engine.InFlightNodeClaim) bool {
		if c.NodePool == np.Name && gone[c.Name] {
			repend(c.Pods)
			return true
		}
		return false
	})
	return out
}

func staticDaemonPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// addStatic lists the static NodeClaims planStatic added as new
// NodeClaims of their pool (Static), with the pods the plan put on them
// (taken out of ExistingNodes), and adds their price to the total.
func (r *Result) addStatic(pools []StaticPool, claims []staticClaim) {
	r.StaticPools = pools
	if len(claims) == 0 {
		return
	}
	pods := map[string][]string{}
	r.ExistingNodes = slices.DeleteFunc(r.ExistingNodes, func(n ExistingNode) bool {
		for _, c := range claims {
			if c.name == n.Name {
				pods[n.Name] = n.Pods
				return true
			}
		}
		return false
	})
	total := r.TotalPricePerHour
	for _, c := range claims {
		off := c.planned.Offering
		nc := NodeClaim{Name: c.name, NodePool: c.planned.NodePool, Static: true,
			InstanceType: off.InstanceType, InstanceTypeOptions: []string{off.InstanceType},
			CapacityType: off.CapacityType, Zone: off.Zone, PricePerHour: off.Price, Pods: pods[c.name]}
		if nc.Pods == nil {
			nc.Pods = []string{}
		}
		total += off.Price
		r.NodeClaims = append(r.NodeClaims, nc)
	}
	r.TotalPricePerHour = roundPrice(total)
}
