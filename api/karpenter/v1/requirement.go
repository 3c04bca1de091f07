package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// Operators a requirement may use: the Kubernetes node-selector operators,
// plus Gte and Lte (inclusive integer bounds).
const (
	NodeSelectorOpIn           = corev1.NodeSelectorOpIn
	NodeSelectorOpNotIn        = corev1.NodeSelectorOpNotIn
	NodeSelectorOpExists       = corev1.NodeSelectorOpExists
	NodeSelectorOpDoesNotExist = corev1.NodeSelectorOpDoesNotExist
	NodeSelectorOpGt           = corev1.NodeSelectorOpGt
	NodeSelectorOpLt           = corev1.NodeSelectorOpLt
	NodeSelectorOpGte          = corev1.NodeSelectorOperator("Gte")
	NodeSelectorOpLte          = corev1.NodeSelectorOperator("Lte")
)

// Operators lists every operator the API accepts, in a stable order.
var Operators = []corev1.NodeSelectorOperator{
	NodeSelectorOpIn, NodeSelectorOpNotIn, NodeSelectorOpExists, NodeSelectorOpDoesNotExist,
	NodeSelectorOpGt, NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte,
}

// NodeSelectorRequirementWithMinValues is a node-selector requirement (key,
// operator, values) with an optional minimum number of distinct values that
// must stay possible for the key.
type NodeSelectorRequirementWithMinValues struct {
	corev1.NodeSelectorRequirement `json:",inline"`
	// MinValues is the least number of distinct values of Key that the
	// instance types considered for a launch must span (1..50).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}
