package workload

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// Materialize turns a plan for in into the cluster it would make: every new
// NodeClaim becomes a Node of its offering's instance type (labels from the
// claim and the type, allocatable from the type, capacity type and zone from
// the offering) with its planned pods bound to it (spec.nodeName set,
// phase Running, started at start), plus the daemonset pods that would run
// there. Pods placed onto existing nodes are bound to them; unschedulable
// pods stay pending. The returned input has the nodes and the still-pending
// pods; its NodePools, DaemonSets and options are in's.
//
// Tests and benchmarks use it to build clusters to disrupt: plan a workload,
// materialize it, then delete some of its pods.
func Materialize(in *engine.Input, plan *engine.Plan, start metav1.Time) *engine.Input {
	out := *in
	out.Pods = nil
	pods := map[engine.PodRef]*corev1.Pod{}
	for _, p := range in.Pods {
		pods[engine.PodRef{Namespace: p.Namespace, Name: p.Name}] = p
	}
	types := map[string]map[string]*cloudprovider.InstanceType{}
	for i := range in.NodePools {
		m := map[string]*cloudprovider.InstanceType{}
		for _, it := range in.NodePools[i].InstanceTypes {
			m[it.Name] = it
		}
		types[in.NodePools[i].Name] = m
	}
	bind := func(ref engine.PodRef, node string) *corev1.Pod {
		p := pods[ref].DeepCopy()
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		p.Status.StartTime = &start
		p.CreationTimestamp = start
		delete(pods, ref)
		return p
	}
	out.Nodes = make([]engine.ExistingNode, 0, len(in.Nodes)+len(plan.NodeClaims))
	byName := map[string]int{}
	for _, en := range in.Nodes {
		byName[en.Node.Name] = len(out.Nodes)
		en.Pods = append([]*corev1.Pod(nil), en.Pods...)
		out.Nodes = append(out.Nodes, en)
	}
	for _, pl := range plan.Existing {
		if i, ok := byName[pl.Node]; ok && !pl.InFlight {
			out.Nodes[i].Pods = append(out.Nodes[i].Pods, bind(pl.Pod, pl.Node))
		}
	}
	for _, nc := range plan.NodeClaims {
		it := types[nc.NodePool][nc.Offering.InstanceType]
		if it == nil {
			continue
		}
		labels := map[string]string{}
		for k, v := range it.Labels {
			labels[k] = v
		}
		for k, v := range nc.Labels {
			labels[k] = v
		}
		labels[corev1.LabelInstanceTypeStable] = it.Name
		labels[corev1.LabelTopologyZone] = nc.Offering.Zone
		labels["karpenter.sh/capacity-type"] = nc.Offering.CapacityType
		labels["karpenter.sh/nodepool"] = nc.NodePool
		labels[corev1.LabelHostname] = nc.Name
		if in.Region != "" {
			labels[corev1.LabelTopologyRegion] = in.Region
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: labels, CreationTimestamp: start},
			Spec:       corev1.NodeSpec{Taints: nc.Taints, ProviderID: "aws:///" + nc.Offering.Zone + "/i-" + nc.Name},
			Status: corev1.NodeStatus{
				Capacity: it.Capacity, Allocatable: it.Allocatable(),
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		}
		en := engine.ExistingNode{Node: node, NodePool: nc.NodePool, PricePerHour: nc.Offering.Price}
		for _, ref := range nc.Pods {
			en.Pods = append(en.Pods, bind(ref, nc.Name))
		}
		for _, ds := range in.DaemonSets {
			if !daemonFits(ds.Spec.Template.Spec, node) {
				continue
			}
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: fmt.Sprintf("%s-%s", ds.Name, nc.Name),
					Labels: ds.Spec.Template.Labels, CreationTimestamp: start,
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, Controller: ptr(true)}}},
				Spec:   *ds.Spec.Template.Spec.DeepCopy(),
				Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start},
			}
			p.Spec.NodeName = nc.Name
			en.Pods = append(en.Pods, p)
		}
		out.Nodes = append(out.Nodes, en)
	}
	for _, p := range in.Pods {
		if q, ok := pods[engine.PodRef{Namespace: p.Namespace, Name: p.Name}]; ok {
			out.Pods = append(out.Pods, q)
		}
	}
	return &out
}

// daemonFits reports whether a daemonset pod would run on node: its
// tolerations cover the node's NoSchedule/NoExecute taints and its node
// selector matches (node affinity is not considered by the generators'
// daemonsets).
func daemonFits(spec corev1.PodSpec, node *corev1.Node) bool {
	for k, v := range spec.NodeSelector {
		if node.Labels[k] != v {
			return false
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !tolerated(spec.Tolerations, t) {
			return false
		}
	}
	return true
}

func tolerated(tols []corev1.Toleration, t corev1.Taint) bool {
	for _, tol := range tols {
		if tol.Effect != "" && tol.Effect != t.Effect || tol.Key != "" && tol.Key != t.Key {
			continue
		}
		if tol.Operator == corev1.TolerationOpExists || tol.Value == t.Value {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
