package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeOverlay adjusts, in scheduling simulations, the price and the
// extended resources of the instance types its requirements match.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeoverlays,scope=Cluster,categories=karpenter,shortName=overlays
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodeOverlaySpec `json:"spec"`
	// +optional
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayList is a list of NodeOverlays.
//
// +kubebuilder:object:root=true
type NodeOverlayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeOverlay `json:"items"`
}

// NodeOverlaySpec says which instance types an overlay applies to and what
// it changes. Price and PriceAdjustment exclude each other.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.price) && has(self.priceAdjustment))",message="price and priceAdjustment are mutually exclusive"
type NodeOverlaySpec struct {
	// Requirements select the instance types (by their well-known labels,
	// or a NodePool's template labels) the overlay applies to.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.operator != 'In' || (has(r.values) && size(r.values) > 0))",message="a requirement with operator In needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.operator != 'NotIn' || (has(r.values) && size(r.values) > 0))",message="a requirement with operator NotIn needs at least one value"
	// +kubebuilder:validation:XValidation:rule="self.all(r, !(r.operator in ['Gt', 'Lt', 'Gte', 'Lte']) || (has(r.values) && size(r.values) == 1 && int(r.values[0]) >= 0))",message="a requirement with operator Gt, Lt, Gte or Lte needs exactly one non-negative integer value"
	// +listType=atomic
	// +required
	Requirements []NodeSelectorRequirement `json:"requirements"`
	// Capacity adds extended resources to the matched instance types; it
	// cannot change cpu, memory, ephemeral-storage or pods.
	// +kubebuilder:validation:XValidation:rule="!self.exists(k, k in ['cpu', 'memory', 'ephemeral-storage', 'pods'])",message="capacity may only add extended resources, not cpu, memory, ephemeral-storage or pods"
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Price replaces the matched instance types' price ($/h, a
	// non-negative decimal).
	// +kubebuilder:validation:Pattern=`^\d+(\.\d+)?$`
	// +optional
	Price *string `json:"price,omitempty"`
	// PriceAdjustment changes the matched instance types' price by a signed
	// amount ("-0.5", "+1.2") or a percentage ("+10%", "-15%", at most
	// "-100%").
	// +kubebuilder:validation:Pattern=`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`
	// +optional
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	// Weight orders overlapping overlays: the higher weight wins; equal
	// weights merge in name order. Unset counts as 0.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeSelectorRequirement is a label requirement on instance types: key,
// operator and values, with the JSON names of
// corev1.NodeSelectorRequirement. Gte and Lte are inclusive integer bounds.
type NodeSelectorRequirement struct {
	// Key is the label the requirement constrains. Keys in the
	// karpenter.sh domain other than karpenter.sh/capacity-type and
	// karpenter.sh/nodepool, keys in the karpenter.k8s.aws domain other than
	// its well-known instance labels, and kubernetes.io/hostname are
	// refused.
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.sh/capacity-type', 'karpenter.sh/nodepool'] || !(self.contains('/') ? self.substring(0, self.indexOf('/')) : self).endsWith('karpenter.sh')",message="keys in the karpenter.sh domain are refused, except karpenter.sh/capacity-type and karpenter.sh/nodepool"
	// +kubebuilder:validation:XValidation:rule="self != 'kubernetes.io/hostname'",message="kubernetes.io/hostname is refused as a key"
	// +kubebuilder:validation:XValidation:rule="self in ['karpenter.k8s.aws/ec2nodeclass', 'karpenter.k8s.aws/instance-category', 'karpenter.k8s.aws/instance-family', 'karpenter.k8s.aws/instance-generation', 'karpenter.k8s.aws/instance-size', 'karpenter.k8s.aws/instance-cpu', 'karpenter.k8s.aws/instance-cpu-manufacturer', 'karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz', 'karpenter.k8s.aws/instance-memory', 'karpenter.k8s.aws/instance-ebs-bandwidth', 'karpenter.k8s.aws/instance-network-bandwidth', 'karpenter.k8s.aws/instance-gpu-name', 'karpenter.k8s.aws/instance-gpu-manufacturer', 'karpenter.k8s.aws/instance-gpu-count', 'karpenter.k8s.aws/instance-gpu-memory', 'karpenter.k8s.aws/instance-accelerator-name', 'karpenter.k8s.aws/instance-accelerator-manufacturer', 'karpenter.k8s.aws/instance-accelerator-count', 'karpenter.k8s.aws/instance-hypervisor', 'karpenter.k8s.aws/instance-encryption-in-transit-supported', 'karpenter.k8s.aws/instance-local-nvme', 'karpenter.k8s.aws/instance-capability-flex'] || !(self.contains('/') ? self.substring(0, self.indexOf('/')) : self).endsWith('karpenter.k8s.aws')",message="keys in the karpenter.k8s.aws domain are refused unless they are well-known instance labels"
	// +required
	Key string `json:"key"`
	// Operator relates the key to the values: In, NotIn, Exists,
	// DoesNotExist, Gt, Lt, Gte or Lte.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt;Gte;Lte
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values: one or more for In and NotIn, exactly one non-negative integer
	// for Gt, Lt, Gte and Lte.
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// NodeOverlayStatus is the observed state of an overlay.
type NodeOverlayStatus struct {
	// Conditions report the overlay's state (Ready, as the peer's).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
