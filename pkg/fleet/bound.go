package fleet

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// LowerBound is the engine's proven lower bound on the $/h of any fleet of
// new nodes from the input's NodePools that holds every pod of the input,
// bound and pending (DaemonSet pods are overhead, as on new nodes): what
// the fleet could cost at best. Pool limits and existing nodes are ignored;
// pods no pool can take are left out and counted in unplaced.
func LowerBound(in *engine.Input) (bound float64, pods, unplaced int, err error) {
	cp := *in
	cp.Pods = slices.Clone(in.Pods)
	for _, n := range in.Nodes {
		for _, p := range n.Pods {
			if ownedByDaemonSet(p) || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			q := p.DeepCopy()
			q.Spec.NodeName = ""
			cp.Pods = append(cp.Pods, q)
		}
	}
	for _, f := range in.InFlight {
		cp.Pods = append(cp.Pods, f.Pods...)
	}
	cp.Nodes, cp.InFlight = nil, nil
	cp.NodePools = slices.Clone(in.NodePools)
	for i := range cp.NodePools {
		cp.NodePools[i].Limits, cp.NodePools[i].Usage = nil, nil
	}
	cp.Options.SkipLowerBound = false
	plan, err := engine.Solve(&cp)
	if err != nil {
		return 0, 0, 0, err
	}
	return plan.LowerBound, len(cp.Pods), len(plan.Unschedulable), nil
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" })
}
