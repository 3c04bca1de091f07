package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeClaim is one planned or running node: what was asked for (spec,
// immutable) and what the cloud gave (status).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodeclaims,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type="string",JSONPath=".metadata.labels.node\\.kubernetes\\.io/instance-type"
// +kubebuilder:printcolumn:name="Capacity",type="string",JSONPath=".metadata.labels.karpenter\\.sh/capacity-type"
// +kubebuilder:printcolumn:name="Zone",type="string",JSONPath=".metadata.labels.topology\\.kubernetes\\.io/zone"
// +kubebuilder:printcolumn:name="Node",type="string",JSONPath=".status.nodeName"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="ImageID",type="string",JSONPath=".status.imageID",priority=1
// +kubebuilder:printcolumn:name="ID",type="string",JSONPath=".status.providerID",priority=1
// +kubebuilder:printcolumn:name="NodePool",type="string",JSONPath=".metadata.labels.karpenter\\.sh/nodepool",priority=1
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.nodeClassRef.name",priority=1
// +kubebuilder:printcolumn:name="Drifted",type="string",JSONPath=".status.conditions[?(@.type==\"Drifted\")].status",priority=1
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:XValidation:rule="self.requirements == oldSelf.requirements && self.nodeClassRef == oldSelf.nodeClassRef && has(self.taints) == has(oldSelf.taints) && (!has(self.taints) || self.taints == oldSelf.taints) && has(self.startupTaints) == has(oldSelf.startupTaints) && (!has(self.startupTaints) || self.startupTaints == oldSelf.startupTaints) && has(self.expireAfter) == has(oldSelf.expireAfter) && (!has(self.expireAfter) || self.expireAfter == oldSelf.expireAfter) && has(self.resources) == has(oldSelf.resources) && (!has(self.resources) || self.resources == oldSelf.resources)",message="spec is immutable"
	// +kubebuilder:validation:XValidation:rule="has(self.terminationGracePeriod) == has(oldSelf.terminationGracePeriod) && (!has(self.terminationGracePeriod) || duration(self.terminationGracePeriod) == duration(oldSelf.terminationGracePeriod))",message="spec is immutable (terminationGracePeriod)",fieldPath=".terminationGracePeriod"
	// +required
	Spec NodeClaimSpec `json:"spec"`
	// +optional
	Status NodeClaimStatus `json:"status,omitempty"`
}

// NodeClaimList is a list of NodeClaims.
//
// +kubebuilder:object:root=true
type NodeClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeClaim `json:"items"`
}

// NodeClaimSpec is what a NodeClaim asks for. It is immutable: the
// apiserver refuses any change, comparing terminationGracePeriod as a
// duration (so "90m" and "1h30m0s" are the same) and everything else as
// written. Quantities in resources.requests are compared as written too, so
// change NodeClaims with a patch (client.MergeFrom) rather than a full Update
// when the spec may not have been written by these Go types.
type NodeClaimSpec struct {
	// Taints are put on the node. Key, value and effect are checked as the
	// peer checks them (see crds.Patch: corev1.Taint carries no markers).
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on the node and expected to be removed by an
	// agent on it.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the node's labels.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key != 'kubernetes.io/hostname')",message="requirements may not use kubernetes.io/hostname"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key in ['karpenter.sh/capacity-type','karpenter.sh/nodepool'] || !(x.key.startsWith('karpenter.sh/') || x.key.contains('.karpenter.sh/')))",message="requirements may not use keys in the karpenter.sh domain, except karpenter.sh/capacity-type and karpenter.sh/nodepool"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.key.startsWith('karpenter.k8s.aws/') || x.key.contains('.karpenter.k8s.aws/')) || x.key in ['karpenter.k8s.aws/ec2nodeclass','karpenter.k8s.aws/instance-category','karpenter.k8s.aws/instance-family','karpenter.k8s.aws/instance-generation','karpenter.k8s.aws/instance-size','karpenter.k8s.aws/instance-cpu','karpenter.k8s.aws/instance-cpu-manufacturer','karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz','karpenter.k8s.aws/instance-memory','karpenter.k8s.aws/instance-ebs-bandwidth','karpenter.k8s.aws/instance-network-bandwidth','karpenter.k8s.aws/instance-gpu-name','karpenter.k8s.aws/instance-gpu-manufacturer','karpenter.k8s.aws/instance-gpu-count','karpenter.k8s.aws/instance-gpu-memory','karpenter.k8s.aws/instance-accelerator-name','karpenter.k8s.aws/instance-accelerator-manufacturer','karpenter.k8s.aws/instance-accelerator-count','karpenter.k8s.aws/instance-hypervisor','karpenter.k8s.aws/instance-encryption-in-transit-supported','karpenter.k8s.aws/instance-local-nvme','karpenter.k8s.aws/capacity-reservation-id','karpenter.k8s.aws/capacity-reservation-type'])",message="requirements may use keys in the karpenter.k8s.aws domain only if they are well-known instance labels or karpenter.k8s.aws/ec2nodeclass"
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// Resources are the requests the node must be able to hold.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty,omitzero"`
	// NodeClassRef names the provider node class the node launches with.
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is how long the node's drain may take (a Go
	// duration in hours, minutes and seconds, e.g. "48h", as the peer's CRD
	// allows; "1 day" is refused).
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long the node lives before it is replaced, or Never.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty,omitzero"`
}

// ResourceRequirements are the resources a NodeClaim asks for.
type ResourceRequirements struct {
	// Requests are the minimum resources the node must offer.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassReference points at a provider node class. The schema checks
// what the peer's does (no empty value, no '/' in the group); a reference
// that names no node class leaves the pool's NodeClassReady False.
type NodeClassReference struct {
	// Kind of the node class, e.g. EC2NodeClass.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="kind may not be empty"
	// +required
	Kind string `json:"kind"`
	// Name of the node class.
	// +kubebuilder:validation:XValidation:rule="self != ''",message="name may not be empty"
	// +required
	Name string `json:"name"`
	// Group of the node class, e.g. karpenter.k8s.aws.
	// +kubebuilder:validation:Pattern=`^[^/]*$`
	// +kubebuilder:validation:XValidation:rule="self != ''",message="group may not be empty"
	// +required
	Group string `json:"group"`
}

// NodeClaimStatus is what the cloud gave and how far the node has come.
type NodeClaimStatus struct {
	// NodeName is the name of the node that registered for this NodeClaim.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// ProviderID is the cloud's ID of the instance (aws:///<zone>/<id>).
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// ImageID is the image the instance booted from.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Capacity is the node's estimated capacity.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Allocatable is the node's estimated allocatable resources.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Conditions: Launched, Registered, Initialized, Ready, Drifted,
	// Consolidatable, Drained, VolumesDetached, InstanceTerminating,
	// DisruptionReason.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []Condition `json:"conditions,omitempty"`
	// LastPodEventTime is when a pod was last scheduled to or removed from
	// the node; consolidateAfter counts from it.
	// +optional
	LastPodEventTime metav1.Time `json:"lastPodEventTime,omitempty,omitzero"`
}

// Condition types shared by every object here, and NodeClaim's own.
const (
	// ConditionTypeReady is the root condition: True when the object is
	// usable (for a NodeClaim: Launched, Registered and Initialized).
	ConditionTypeReady = "Ready"

	ConditionTypeLaunched            = "Launched"
	ConditionTypeRegistered          = "Registered"
	ConditionTypeInitialized         = "Initialized"
	ConditionTypeDrifted             = "Drifted"
	ConditionTypeConsolidatable      = "Consolidatable"
	ConditionTypeDrained             = "Drained"
	ConditionTypeVolumesDetached     = "VolumesDetached"
	ConditionTypeInstanceTerminating = "InstanceTerminating"
	ConditionTypeDisruptionReason    = "DisruptionReason"
)
