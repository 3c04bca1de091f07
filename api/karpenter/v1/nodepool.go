package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool is a template for nodes plus the policy (limits, weight,
// disruption) that governs the nodes made from it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=nodepools,scope=Cluster,categories=karpenter
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.nodes
// +kubebuilder:printcolumn:name="NodeClass",type="string",JSONPath=".spec.template.spec.nodeClassRef.name",description="The node class the pool launches with"
// +kubebuilder:printcolumn:name="Nodes",type="string",JSONPath=".status.nodes",description="Nodes currently in the pool"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Weight",type="integer",JSONPath=".spec.weight",priority=1,description="Higher weights are tried first"
// +kubebuilder:printcolumn:name="CPU",type="string",JSONPath=".status.resources.cpu",priority=1,description="CPU of the pool's nodes"
// +kubebuilder:printcolumn:name="Memory",type="string",JSONPath=".status.resources.memory",priority=1,description="Memory of the pool's nodes"
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec NodePoolSpec `json:"spec"`
	// +optional
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolList is a list of NodePools.
//
// +kubebuilder:object:root=true
type NodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodePool `json:"items"`
}

// NodePoolSpec is the desired shape of a pool's nodes and its policy.
//
// +kubebuilder:validation:XValidation:rule="has(self.replicas) == has(oldSelf.replicas)",message="spec.replicas cannot be added or removed: a pool is static or dynamic for life"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits)",message="a static pool (spec.replicas) may limit only nodes"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.weight)",message="a static pool (spec.replicas) takes no weight"
type NodePoolSpec struct {
	// Template describes the NodeClaims (and so the nodes) made from this pool.
	// +required
	Template NodeClaimTemplate `json:"template"`

	// Replicas makes the pool static: it keeps exactly this many
	// NodeClaims whatever the pods, within limits.nodes, and provisions
	// nothing for pending pods (the peer's alpha StaticCapacity). It needs
	// the StaticCapacity feature gate; with the gate off the pool gets
	// ValidationSucceeded=False (so Ready=False) and no nodes. The scale
	// subresource maps to it (kubectl scale nodepool NAME --replicas N).
	// Static nodes are never consolidated; drift replaces them.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int64 `json:"replicas,omitempty"`

	// Disruption says when nodes of this pool may be consolidated, and how
	// many at a time.
	// +kubebuilder:default={consolidateAfter: "0s"}
	// +optional
	Disruption Disruption `json:"disruption"`

	// Limits caps the total resources of the pool's nodes; no launch may take
	// the pool over any of them.
	// +optional
	Limits Limits `json:"limits,omitempty"`

	// Weight orders pools: higher weights are tried first.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// NodeClaimTemplate is the part of a NodePool copied into each NodeClaim.
type NodeClaimTemplate struct {
	// +optional
	ObjectMeta `json:"metadata,omitempty,omitzero"`
	// +required
	Spec NodeClaimTemplateSpec `json:"spec"`
}

// ObjectMeta is the metadata a NodePool puts on every node: labels and
// annotations only.
type ObjectMeta struct {
	// Labels are put on every node of the pool. The schema refuses
	// restricted keys and checks the values (pattern and length, added by
	// crds.Patch as controller-gen cannot mark map values); key syntax is
	// checked by RuntimeValidate (the CRD cost budget does not allow a
	// regular expression over unbounded map keys).
	// +kubebuilder:validation:MaxProperties=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x != 'kubernetes.io/hostname')",message="labels may not set kubernetes.io/hostname"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x == 'karpenter.sh/capacity-type' || !(x.startsWith('karpenter.sh/') || x.contains('.karpenter.sh/')))",message="labels may not use keys in the karpenter.sh domain, except karpenter.sh/capacity-type"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.startsWith('karpenter.k8s.aws/') || x.contains('.karpenter.k8s.aws/')) || x in ['karpenter.k8s.aws/ec2nodeclass','karpenter.k8s.aws/instance-category','karpenter.k8s.aws/instance-family','karpenter.k8s.aws/instance-generation','karpenter.k8s.aws/instance-size','karpenter.k8s.aws/instance-cpu','karpenter.k8s.aws/instance-cpu-manufacturer','karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz','karpenter.k8s.aws/instance-memory','karpenter.k8s.aws/instance-ebs-bandwidth','karpenter.k8s.aws/instance-network-bandwidth','karpenter.k8s.aws/instance-gpu-name','karpenter.k8s.aws/instance-gpu-manufacturer','karpenter.k8s.aws/instance-gpu-count','karpenter.k8s.aws/instance-gpu-memory','karpenter.k8s.aws/instance-accelerator-name','karpenter.k8s.aws/instance-accelerator-manufacturer','karpenter.k8s.aws/instance-accelerator-count','karpenter.k8s.aws/instance-hypervisor','karpenter.k8s.aws/instance-encryption-in-transit-supported','karpenter.k8s.aws/instance-local-nvme','karpenter.k8s.aws/capacity-reservation-id','karpenter.k8s.aws/capacity-reservation-type'])",message="labels may use keys in the karpenter.k8s.aws domain only if they are well-known instance labels or karpenter.k8s.aws/ec2nodeclass"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations are put on every node of the pool.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is NodeClaimSpec without resources: the resources
// of a NodeClaim are decided when it is made.
type NodeClaimTemplateSpec struct {
	// Taints are put on every node of the pool. Key, value and effect are
	// checked as the peer checks them (see crds.Patch: corev1.Taint carries
	// no markers).
	// +optional
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on new nodes and expected to be removed by an
	// agent on the node; pods need not tolerate them to be scheduled.
	// +optional
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// Requirements constrain the labels of the pool's nodes: instance types,
	// zones, capacity types, architectures and so on.
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key != 'kubernetes.io/hostname')",message="requirements may not use kubernetes.io/hostname"
	// +kubebuilder:validation:XValidation:rule="self.all(x, x.key == 'karpenter.sh/capacity-type' || !(x.key.startsWith('karpenter.sh/') || x.key.contains('.karpenter.sh/')))",message="requirements may not use keys in the karpenter.sh domain, except karpenter.sh/capacity-type"
	// +kubebuilder:validation:XValidation:rule="self.all(x, !(x.key.startsWith('karpenter.k8s.aws/') || x.key.contains('.karpenter.k8s.aws/')) || x.key in ['karpenter.k8s.aws/ec2nodeclass','karpenter.k8s.aws/instance-category','karpenter.k8s.aws/instance-family','karpenter.k8s.aws/instance-generation','karpenter.k8s.aws/instance-size','karpenter.k8s.aws/instance-cpu','karpenter.k8s.aws/instance-cpu-manufacturer','karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz','karpenter.k8s.aws/instance-memory','karpenter.k8s.aws/instance-ebs-bandwidth','karpenter.k8s.aws/instance-network-bandwidth','karpenter.k8s.aws/instance-gpu-name','karpenter.k8s.aws/instance-gpu-manufacturer','karpenter.k8s.aws/instance-gpu-count','karpenter.k8s.aws/instance-gpu-memory','karpenter.k8s.aws/instance-accelerator-name','karpenter.k8s.aws/instance-accelerator-manufacturer','karpenter.k8s.aws/instance-accelerator-count','karpenter.k8s.aws/instance-hypervisor','karpenter.k8s.aws/instance-encryption-in-transit-supported','karpenter.k8s.aws/instance-local-nvme','karpenter.k8s.aws/capacity-reservation-id','karpenter.k8s.aws/capacity-reservation-type'])",message="requirements may use keys in the karpenter.k8s.aws domain only if they are well-known instance labels or karpenter.k8s.aws/ec2nodeclass"
	// +required
	Requirements []NodeSelectorRequirementWithMinValues `json:"requirements"`
	// NodeClassRef names the provider node class the nodes launch with. Its
	// group and kind cannot change.
	// +kubebuilder:validation:XValidation:rule="self.group == oldSelf.group",message="nodeClassRef.group is immutable"
	// +kubebuilder:validation:XValidation:rule="self.kind == oldSelf.kind",message="nodeClassRef.kind is immutable"
	// +required
	NodeClassRef *NodeClassReference `json:"nodeClassRef"`
	// TerminationGracePeriod is how long a node's drain may take before its
	// remaining pods are deleted regardless of disruption budgets (hours,
	// minutes and seconds, e.g. "48h").
	// +kubebuilder:validation:Pattern=`^([0-9]+(s|m|h))+$`
	// +kubebuilder:validation:Type="string"
	// +optional
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	// ExpireAfter is how long a node lives before it is replaced, or Never.
	// +kubebuilder:default="720h"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	ExpireAfter NillableDuration `json:"expireAfter,omitempty,omitzero"`
}

// ConsolidationPolicy says which nodes consolidation may remove or replace.
// +kubebuilder:validation:Enum=WhenEmpty;WhenEmptyOrUnderutilized;Balanced
type ConsolidationPolicy string

// Consolidation policies.
const (
	ConsolidationPolicyWhenEmpty                = ConsolidationPolicy("WhenEmpty")
	ConsolidationPolicyWhenEmptyOrUnderutilized = ConsolidationPolicy("WhenEmptyOrUnderutilized")
	// ConsolidationPolicyBalanced consolidates underutilized nodes only when
	// the savings are worth the disruption (score >= 1/2, see docs/disruption.md).
	ConsolidationPolicyBalanced = ConsolidationPolicy("Balanced")
)

// Disruption is the voluntary disruption policy of a pool.
type Disruption struct {
	// ConsolidateAfter is how long a node must have had no pod scheduled or
	// removed before consolidation considers it, or Never.
	// +kubebuilder:default="0s"
	// +kubebuilder:validation:Pattern=`^(([0-9]+(s|m|h))+|Never)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	ConsolidateAfter NillableDuration `json:"consolidateAfter,omitempty,omitzero"`
	// ConsolidationPolicy: WhenEmpty, WhenEmptyOrUnderutilized (default), or Balanced.
	// +kubebuilder:default=WhenEmptyOrUnderutilized
	// +optional
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	// Budgets limit how many nodes may be disrupted at once. The most
	// restrictive active budget wins.
	// +kubebuilder:default={{nodes: "10%"}}
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Budgets []Budget `json:"budgets,omitempty"`
}

// DisruptionReason is why a node is voluntarily disrupted; budgets may be
// limited to some reasons.
// +kubebuilder:validation:Enum=Underutilized;Empty;Drifted;Unhealthy
type DisruptionReason string

// Disruption reasons.
const (
	DisruptionReasonUnderutilized = DisruptionReason("Underutilized")
	DisruptionReasonEmpty         = DisruptionReason("Empty")
	DisruptionReasonDrifted       = DisruptionReason("Drifted")
	DisruptionReasonUnhealthy     = DisruptionReason("Unhealthy")
)

// Budget limits the nodes of a pool that may be disrupted at once, always
// or during a scheduled window.
//
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="schedule and duration must be set together"
type Budget struct {
	// Reasons restricts the budget to these disruption reasons; empty means
	// all reasons.
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Nodes is a count ("5") or a percentage of the pool's nodes ("10%",
	// rounded up).
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:Pattern=`^((100|[0-9]{1,2})%|[0-9]+)$`
	Nodes string `json:"nodes"`
	// Schedule is a cron expression (UTC) at which the budget becomes active
	// for Duration. Without it the budget is always active. Five fields
	// (minute hour day-of-month month day-of-week) or one of @yearly,
	// @annually, @monthly, @weekly, @daily, @midnight, @hourly.
	// The schema checks the shape as the peer does (five fields or a
	// macro); RuntimeValidate parses the fields.
	// +kubebuilder:validation:Pattern=`^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$`
	// +optional
	Schedule *string `json:"schedule,omitempty"`
	// Duration is how long the budget stays active after each Schedule tick.
	// +kubebuilder:validation:Pattern=`^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$`
	// +kubebuilder:validation:Type="string"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// Limits caps the total resources of a pool's nodes.
type Limits corev1.ResourceList

// NodePoolStatus is the observed state of a pool.
type NodePoolStatus struct {
	// Resources is the total capacity of the pool's nodes, plus "nodes", the
	// node count.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Nodes is the number of nodes in the pool.
	// +optional
	Nodes *int64 `json:"nodes,omitempty"`
	// NodeClassObservedGeneration is the generation of the node class last
	// used to compute the NodeClassReady condition.
	// +optional
	NodeClassObservedGeneration int64 `json:"nodeClassObservedGeneration,omitempty"`
	// Conditions: Ready, ValidationSucceeded, NodeClassReady,
	// NodeRegistrationHealthy, DisruptionSupported.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NodePool condition types.
const (
	ConditionTypeValidationSucceeded     = "ValidationSucceeded"
	ConditionTypeNodeClassReady          = "NodeClassReady"
	ConditionTypeNodeRegistrationHealthy = "NodeRegistrationHealthy"
	// ConditionTypeDisruptionSupported (dovetail's own) is False, reason
	// Unsupported, when a disruption field or value is set that dovetail
	// does not act on; absent otherwise. It does not affect Ready.
	ConditionTypeDisruptionSupported = "DisruptionSupported"
)
