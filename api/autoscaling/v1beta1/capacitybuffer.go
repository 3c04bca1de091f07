package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ActiveCapacityStrategy is the default provisioning strategy: the buffer
// keeps capacity up by placeholder pods.
const ActiveCapacityStrategy = "buffer.x-k8s.io/active-capacity"

// CapacityBuffer asks an autoscaler to keep spare capacity for a number of
// pod-shaped chunks.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=capacitybuffers,scope=Namespaced,categories=autoscaling,shortName=cb
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Strategy",type="string",JSONPath=".spec.provisioningStrategy",description="How the buffer is provisioned"
// +kubebuilder:printcolumn:name="PodTemplate",type="string",JSONPath=".status.podTemplateRef.name",description="The PodTemplate a chunk is shaped like"
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".status.replicas",description="Chunks currently provisioned"
// +kubebuilder:printcolumn:name="ConditionsType",type="string",JSONPath=".status.conditions[*].type",description="Condition types"
// +kubebuilder:printcolumn:name="ConditionsStatus",type="string",JSONPath=".status.conditions[*].status",description="Condition statuses"
// +kubebuilder:printcolumn:name="ConditionsReason",type="string",JSONPath=".status.conditions[*].reason",description="Condition reasons"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"
type CapacityBuffer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CapacityBufferSpec `json:"spec"`
	// +optional
	Status CapacityBufferStatus `json:"status,omitempty"`
}

// CapacityBufferList is a list of CapacityBuffers.
//
// +kubebuilder:object:root=true
type CapacityBufferList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CapacityBuffer `json:"items"`
}

// CapacityBufferSpec is the buffer wanted: the shape of one chunk (a
// PodTemplate or a scalable object, not both) and how many chunks.
//
// +kubebuilder:validation:XValidation:rule="has(self.podTemplateRef) ? (has(self.replicas) || has(self.limits)) : true",message="podTemplateRef needs replicas or limits"
// +kubebuilder:validation:XValidation:rule="!has(self.podTemplateRef) || !has(self.scalableRef)",message="set podTemplateRef or scalableRef, not both"
type CapacityBufferSpec struct {
	// ProvisioningStrategy is how the buffer is used; the default keeps it
	// up with placeholder pods.
	// +kubebuilder:default="buffer.x-k8s.io/active-capacity"
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
	// PodTemplateRef names a PodTemplate in the buffer's namespace giving
	// the shape of one chunk.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// ScalableRef names an object with a scale subresource (a Deployment,
	// say) whose pods give the shape of one chunk.
	// +optional
	ScalableRef *ScalableRef `json:"scalableRef,omitempty"`
	// Replicas is the number of chunks wanted. With Percentage too, the
	// larger of the two applies (Limits can still lower it).
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Percentage is the number of chunks as a percentage of ScalableRef's
	// replicas, rounded up, at least 1.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Percentage *int32 `json:"percentage,omitempty"`
	// Limits bound the chunks' total resource requests; alone, they ask for
	// as many chunks as fit.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// LocalObjectRef names an object in the same namespace.
type LocalObjectRef struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// ScalableRef names an object with a scale subresource.
type ScalableRef struct {
	// APIGroup of the object; empty for the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// CapacityBufferStatus is the buffer as provisioned.
type CapacityBufferStatus struct {
	// PodTemplateRef is the PodTemplate the buffer was provisioned from.
	// +optional
	PodTemplateRef *LocalObjectRef `json:"podTemplateRef,omitempty"`
	// Replicas is the number of chunks provisioned.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplateGeneration is the PodTemplate's generation the status was
	// computed from.
	// +optional
	PodTemplateGeneration *int64 `json:"podTemplateGeneration,omitempty"`
	// Conditions report the buffer's state (Ready among them).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ProvisioningStrategy is the strategy in use.
	// +optional
	ProvisioningStrategy *string `json:"provisioningStrategy,omitempty"`
}

// Condition types of a CapacityBuffer's status, as the API defines them.
const (
	// ConditionReadyForProvisioning: the buffer's shape and count are
	// resolved (status.podTemplateRef, status.replicas).
	ConditionReadyForProvisioning = "ReadyForProvisioning"
	// ConditionProvisioning: the buffer's room exists (True) or is being
	// made or cannot be (False).
	ConditionProvisioning = "Provisioning"
)

// Kinds a scalableRef may name (group apps).
const (
	KindDeployment  = "Deployment"
	KindReplicaSet  = "ReplicaSet"
	KindStatefulSet = "StatefulSet"
)
