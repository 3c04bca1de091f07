package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// apply returns the cluster after a command: its nodes (and the empty
// nodes already removed) gone, their pods bound where the what-if placed
// them, the replacements in flight with their pods. Pending pods stay
// pending. in is not modified.
func apply(in *engine.Input, nodes []*cnode, res *result, gone map[string]bool) *engine.Input {
	out := *in
	removed := map[string]bool{}
	for name := range gone {
		removed[name] = true
	}
	for _, n := range nodes {
		removed[n.name] = true
	}
	pods := map[engine.PodRef]*corev1.Pod{}
	for _, n := range nodes {
		for _, pod := range n.pods {
			pods[engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}] = pod
		}
	}
	bind := func(ref engine.PodRef, node string) *corev1.Pod {
		q := *pods[ref]
		q.Spec.NodeName = node
		return &q
	}
	onNode := map[string][]*corev1.Pod{}
	for _, pl := range res.plan.Existing {
		if res.displaced[pl.Pod] {
			onNode[pl.Node] = append(onNode[pl.Node], bind(pl.Pod, pl.Node))
		}
	}
	out.Nodes = make([]engine.ExistingNode, 0, len(in.Nodes))
	for _, en := range in.Nodes {
		if en.Node != nil && removed[en.Node.Name] {
			continue
		}
		if add := onNode[en.Node.Name]; len(add) > 0 {
			en.Pods = append(append([]*corev1.Pod(nil), en.Pods...), add...)
		}
		out.Nodes = append(out.Nodes, en)
	}
	out.InFlight = make([]engine.InFlightNodeClaim, 0, len(in.InFlight)+len(res.replacements))
	for _, c := range in.InFlight {
		if add := onNode[c.Name]; len(add) > 0 {
			c.Pods = append(append([]*corev1.Pod(nil), c.Pods...), add...)
		}
		out.InFlight = append(out.InFlight, c)
	}
	pools := map[string]int{}
	for i := range in.NodePools {
		pools[in.NodePools[i].Name] = i
	}
	for _, r := range res.replacements {
		c := engine.InFlightNodeClaim{Name: r.Name, NodePool: r.NodePool, Requirements: r.Requirements,
			Taints: r.Taints, StartupTaints: r.StartupTaints, InstanceTypeOptions: r.InstanceTypeOptions}
		if i, ok := pools[r.NodePool]; ok {
			for _, t := range in.NodePools[i].InstanceTypes {
				if t != nil && t.Name == r.Offering.InstanceType {
					c.Allocatable = t.Allocatable()
				}
			}
		}
		for _, ref := range r.Pods {
			if res.displaced[ref] {
				c.Pods = append(c.Pods, bind(ref, r.Name))
			}
		}
		out.InFlight = append(out.InFlight, c)
	}
	return &out
}
