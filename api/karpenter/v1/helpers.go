package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// NodeSelectorRequirements returns the plain Kubernetes form of the
// requirements (minValues dropped), e.g. for matching against node labels.
func NodeSelectorRequirements(reqs []NodeSelectorRequirementWithMinValues) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs))
	for _, r := range reqs {
		out = append(out, r.NodeSelectorRequirement())
	}
	return out
}

// Requirements returns the template requirements of the pool.
func (in *NodePool) Requirements() []NodeSelectorRequirementWithMinValues {
	return in.Spec.Template.Spec.Requirements
}

// NodeClassRef returns the pool's node class reference (nil if unset).
func (in *NodePool) NodeClassRef() *NodeClassReference {
	return in.Spec.Template.Spec.NodeClassRef
}
