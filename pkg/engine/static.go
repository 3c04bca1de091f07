package engine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// StaticNodeClaim plans one node of the named pool for no pod in
// particular: what a static NodePool (spec.replicas) launches to keep its
// count. The node is planned as for a pod with no requests that tolerates
// every taint, so its requirements are the pool's, its instance-type
// options every type the pool's requirements and available offerings
// allow (cheapest first), its requests the daemonset overhead, and its
// offering the cheapest. The pool's limits, weight and UnsupportedReason
// are not applied: counting nodes against limits.nodes is the caller's
// (the static controller counts the pool's NodeClaims in the cluster).
// Existing nodes, in-flight claims and pending pods of in are ignored.
//
// An error wraps ErrInvalidInput when the pool is not in the input; a
// pool that can launch nothing (no available offering, minValues that
// cannot be met) gives an error with the engine's reason.
func StaticNodeClaim(in *Input, pool string) (*NewNodeClaim, error) {
	var np *NodePool
	for i := range in.NodePools {
		if in.NodePools[i].Name == pool {
			c := in.NodePools[i]
			np = &c
			break
		}
	}
	if np == nil {
		return nil, &InputError{Errs: field.ErrorList{field.NotFound(field.NewPath("nodePools"), pool)}}
	}
	np.UnsupportedReason = ""
	np.Limits = nil
	np.Usage = nil
	np.Weight = 0
	probe := &corev1.Pod{}
	probe.Name, probe.Namespace, probe.UID = "static-"+pool, "static", "static-probe"
	probe.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	probe.Spec.Containers = []corev1.Container{{Name: "probe"}}
	sub := &Input{
		Pods:       []*corev1.Pod{probe},
		DaemonSets: in.DaemonSets, NodePools: []NodePool{*np},
		Unavailable: in.Unavailable, Region: in.Region, Options: in.Options,
	}
	sub.Options.SkipLowerBound = true
	plan, err := Solve(sub)
	if err != nil {
		return nil, err
	}
	if len(plan.NodeClaims) != 1 {
		if len(plan.Unschedulable) > 0 {
			u := plan.Unschedulable[0]
			return nil, fmt.Errorf("pool %s can launch no node: %s: %s", pool, u.Code, u.Message)
		}
		return nil, fmt.Errorf("pool %s can launch no node", pool)
	}
	nc := plan.NodeClaims[0]
	nc.Pods = nil
	// The probe's pod slot is not a request of the node.
	if q, ok := nc.Requests[corev1.ResourcePods]; ok {
		nc.Requests = nc.Requests.DeepCopy()
		q.Sub(resource.MustParse("1"))
		if q.Sign() <= 0 {
			delete(nc.Requests, corev1.ResourcePods)
		} else {
			nc.Requests[corev1.ResourcePods] = q
		}
	}
	return &nc, nil
}
