package nodeclaimutil

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
)

// DisruptionCommandAnnotationKey on a candidate NodeClaim holds the
// disruption command it is part of while the command runs.
const DisruptionCommandAnnotationKey = "dovetail.sh/disruption-command"

// PlannerState is what the disruption planner knows of a managed node
// from its Node and NodeClaim alone: the facts every controller that asks
// the planner (the disruption controller, pod deletion costs) must agree
// on. Callers add what only they know (nominations, reboots).
func PlannerState(n *corev1.Node, nc *karpv1.NodeClaim) planner.NodeState {
	s := planner.NodeState{
		NodeClaim:      nc.Name,
		NodePool:       NodePool(nc),
		Initialized:    nc.IsTrue(karpv1.ConditionTypeInitialized),
		Created:        nc.CreationTimestamp.Time,
		CreationReason: nc.Annotations[CreationReasonAnnotationKey],
		LastPodEvent:   nc.Status.LastPodEventTime.Time,
		DoNotDisrupt:   n.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true" || nc.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true",
		DoNotRepair:    n.Annotations[planner.DoNotRepairAnnotation] == "true" || nc.Annotations[planner.DoNotRepairAnnotation] == "true",
		MarkedForDeletion: n.DeletionTimestamp != nil || nc.DeletionTimestamp != nil ||
			hasTaintKey(n, karpv1.DisruptedTaintKey) || nc.Annotations[DisruptionCommandAnnotationKey] != "",
		Conditions:   n.Status.Conditions,
		InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
		CapacityType: nc.Labels[karpv1.CapacityTypeLabelKey],
		Zone:         nc.Labels[corev1.LabelTopologyZone],
	}
	if v := nc.Annotations[planner.ReplacedTypesAnnotation]; v != "" {
		s.ReplacedTypes = planner.ParseReplacedTypes(v)
	}
	// A node's pods count from when it could first take them.
	if init := nc.GetCondition(karpv1.ConditionTypeInitialized); init != nil && init.LastTransitionTime.After(s.LastPodEvent) {
		s.LastPodEvent = init.LastTransitionTime.Time
	}
	ready := false
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	s.NotReady = !ready
	if d := nc.GetCondition(karpv1.ConditionTypeDrifted); d != nil && d.Status == metav1.ConditionTrue {
		s.Drifted = d.Reason
	}
	if tgp := nc.Spec.TerminationGracePeriod; tgp != nil {
		d := tgp.Duration
		s.TerminationGracePeriod = &d
	}
	if p, ok := HourlyPrice(nc); ok {
		s.PricePerHour = p
	}
	return s
}

func hasTaintKey(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
