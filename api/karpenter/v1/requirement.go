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
// operator, values; the fields of corev1.NodeSelectorRequirement, with the
// same JSON names) plus an optional minimum number of distinct values that
// must stay possible for the key.
//
// The fields are spelled out rather than embedded so that the CRD schema can
// bound and check each of them (key syntax, operator enum, value syntax);
// NodeSelectorRequirement converts to the Kubernetes type.
//
// +kubebuilder:validation:XValidation:rule="self.operator != 'In' || (has(self.values) && size(self.values) > 0)",message="values must not be empty with operator In",fieldPath=".values",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt','Lt','Gte','Lte']) || (has(self.values) && size(self.values) == 1 && int(self.values[0]) >= 0)",message="values must be exactly one non-negative integer with operator Gt, Lt, Gte or Lte",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="!has(self.minValues) || self.operator != 'In' || (has(self.values) && self.minValues <= size(self.values))",message="minValues must not exceed the number of values with operator In",fieldPath=".minValues"
type NodeSelectorRequirementWithMinValues struct {
	// Key is the node label the requirement constrains.
	// +kubebuilder:validation:MaxLength=316
	// The name part's 63-character bound is checked at run time
	// (RuntimeValidate), as the peer's pattern does not bound it.
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists,
	// DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values: one or more for In and NotIn, none for Exists and
	// DoesNotExist, exactly one integer for Gt, Lt, Gte and Lte. Each value
	// must be a label value; like the peer, that is checked at run time
	// (RuntimeValidate), not by the schema, and so is "no values with
	// Exists or DoesNotExist".
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
	// MinValues is the least number of distinct values of Key that the
	// instance types considered for a launch must span (1..50).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MinValues *int `json:"minValues,omitempty"`
}

// NodeSelectorRequirement returns the requirement as a Kubernetes
// node-selector requirement (minValues dropped; the values are copied).
func (r NodeSelectorRequirementWithMinValues) NodeSelectorRequirement() corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: append([]string(nil), r.Values...)}
}
