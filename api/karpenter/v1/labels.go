package v1

import (
	corev1 "k8s.io/api/core/v1"
)

// Labels dovetail puts on nodes (and NodeClaims) in the karpenter.sh domain.
const (
	// NodePoolLabelKey names the NodePool a node or NodeClaim was made from.
	NodePoolLabelKey = Group + "/nodepool"
	// CapacityTypeLabelKey is the purchase option of a node: spot, on-demand
	// or reserved. It is the one karpenter.sh key users may constrain.
	CapacityTypeLabelKey = Group + "/capacity-type"
	// NodeInitializedLabelKey is set to "true" once a node is initialized.
	NodeInitializedLabelKey = Group + "/initialized"
	// NodeRegisteredLabelKey is set to "true" once a node has registered.
	NodeRegisteredLabelKey = Group + "/registered"
	// NodeClaimTagKey is the cloud tag naming the NodeClaim of an instance.
	NodeClaimTagKey = Group + "/nodeclaim"
	// NodePoolTagKey is the cloud tag naming the NodePool of an instance.
	NodePoolTagKey = NodePoolLabelKey
)

// Well-known Kubernetes node labels, repeated here so that callers need a
// single import for every label key the scheduler understands.
const (
	LabelInstanceType   = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	LabelTopologyZone   = corev1.LabelTopologyZone       // topology.kubernetes.io/zone
	LabelTopologyRegion = corev1.LabelTopologyRegion     // topology.kubernetes.io/region
	LabelArch           = corev1.LabelArchStable         // kubernetes.io/arch
	LabelOS             = corev1.LabelOSStable           // kubernetes.io/os
	LabelHostname       = corev1.LabelHostname           // kubernetes.io/hostname
	LabelWindowsBuild   = corev1.LabelWindowsBuild       // node.kubernetes.io/windows-build
)

// Capacity types: the values of CapacityTypeLabelKey.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// Architectures and operating systems as they appear in kubernetes.io/arch and
// kubernetes.io/os.
const (
	ArchitectureAmd64 = "amd64"
	ArchitectureArm64 = "arm64"
	OSLinux           = "linux"
	OSWindows         = "windows"
)

// Annotations.
const (
	// DoNotDisruptAnnotationKey on a pod ("true", or a duration such as
	// "30m") or on a node ("true") blocks voluntary disruption of the node.
	DoNotDisruptAnnotationKey = Group + "/do-not-disrupt"
	// NodePoolHashAnnotationKey carries the hash of the NodePool template a
	// NodeClaim was made from; a different hash means the NodeClaim drifted.
	NodePoolHashAnnotationKey = Group + "/nodepool-hash"
	// NodePoolHashVersionAnnotationKey carries the version of the hashing
	// scheme, so that a new scheme does not mark every node as drifted.
	NodePoolHashVersionAnnotationKey = Group + "/nodepool-hash-version"
	// NodeClaimTerminationTimestampAnnotationKey records when a NodeClaim's
	// node must be gone, whatever blocks its drain (RFC 3339).
	NodeClaimTerminationTimestampAnnotationKey = Group + "/nodeclaim-termination-timestamp"
	// NodeClaimMinValuesRelaxedAnnotationKey is "true" when a NodeClaim was
	// launched after relaxing the minValues of its NodePool.
	NodeClaimMinValuesRelaxedAnnotationKey = Group + "/nodeclaim-min-values-relaxed"
)

// Taints.
const (
	// DisruptedTaintKey marks a node that is being disrupted.
	DisruptedTaintKey = Group + "/disrupted"
	// UnregisteredTaintKey is on a node from launch until registration.
	UnregisteredTaintKey = Group + "/unregistered"
)

var (
	// DisruptedNoScheduleTaint is put on a node that is being disrupted so no
	// new pods land on it.
	DisruptedNoScheduleTaint = corev1.Taint{Key: DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}
	// UnregisteredNoExecuteTaint keeps pods off a node until dovetail has
	// registered it (synced labels and taints from its NodeClaim).
	UnregisteredNoExecuteTaint = corev1.Taint{Key: UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}
)

// TerminationFinalizer is on every NodeClaim and node dovetail manages, so
// that deleting one drains it and terminates its instance first.
const TerminationFinalizer = Group + "/termination"

// RestrictedLabelDomains are label domains users may not set through a
// NodePool template (subdomains included). In requirements the well-known
// CapacityTypeLabelKey is the one exception.
var RestrictedLabelDomains = []string{Group}

// WellKnownLabels are the node label keys whose values dovetail knows for
// every instance type it can launch, provider labels excluded (the provider
// package lists its own).
var WellKnownLabels = []string{
	NodePoolLabelKey,
	CapacityTypeLabelKey,
	LabelInstanceType,
	LabelTopologyZone,
	LabelTopologyRegion,
	LabelArch,
	LabelOS,
	LabelWindowsBuild,
}
