package engine

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Input is everything one Solve call decides on: a snapshot of the cluster
// and the NodePools, taken by the caller. Solve reads it and never modifies
// it (nor any object it points to).
type Input struct {
	// Pods are the pending pods to place.
	Pods []*corev1.Pod
	// Buffers are spare capacity kept on purpose: room for pods of a
	// shape that no pod asks for yet, planned after Pods (see Buffer).
	Buffers []Buffer
	// Nodes are the nodes that exist, with the pods bound to them.
	Nodes []ExistingNode
	// InFlight are NodeClaims being launched: capacity on its way.
	InFlight []InFlightNodeClaim
	// DaemonSets run a pod on every new node they would schedule on; that pod
	// takes its requests (and a pod slot) from the node.
	DaemonSets []*appsv1.DaemonSet
	// NodePools are the templates new nodes are made from.
	NodePools []NodePool
	// Volumes maps "namespace/claimName" of a PersistentVolumeClaim to the
	// zones its volume may be used in (the bound PV's node affinity, or the
	// StorageClass's allowedTopologies). A claim that is absent may be used
	// in any zone.
	Volumes map[string][]string
	// Unavailable lists offerings known to be out of capacity; they are never
	// planned (as if their Available flag were false).
	Unavailable []OfferingKey
	// NamespaceLabels maps a namespace to its labels, for the
	// namespaceSelector of pod (anti-)affinity terms. A namespace that is
	// absent has no labels.
	NamespaceLabels map[string]map[string]string
	// Region, when set, is the topology.kubernetes.io/region label of every
	// new node.
	Region string
	// Commitments are the Savings Plans and Reserved Instances that make
	// on-demand capacity cost about nothing at the margin
	// (pkg/commitment): existing on-demand nodes and in-flight claims use
	// them first, and new on-demand NodeClaims they cover whole are
	// priced at commitment.PriceFactor of their price. The zero value is
	// none.
	Commitments commitment.Spec
	// Options are the deterministic knobs of the solve.
	Options Options
}

// ExistingNode is a node that exists in the cluster.
type ExistingNode struct {
	// Node supplies the name, labels, taints, allocatable and
	// spec.unschedulable.
	Node *corev1.Node
	// Pods are the pods bound to the node (daemonset pods included); they use
	// its resources and host ports and count for topology and affinity.
	Pods []*corev1.Pod
	// NodePool is the NodePool the node was made from, "" if unmanaged.
	NodePool string
	// MarkedForDeletion nodes are about to go away: nothing is placed on
	// them and their pods do not count for topology.
	MarkedForDeletion bool
	// PricePerHour is what the node costs (its offering's price, 0 when
	// unknown); Plan.FleetPricePerHour adds it up.
	PricePerHour float64
}

// InFlightNodeClaim is a NodeClaim that is launching: its node does not exist
// yet, but pods may be planned onto it.
type InFlightNodeClaim struct {
	// Name is the NodeClaim's name (also its planned hostname).
	Name string
	// NodePool is the NodePool it was made from.
	NodePool string
	// Requirements are the NodeClaim's requirements; single-valued keys are
	// the labels its node will carry.
	Requirements requirements.Requirements
	// Taints block pods that do not tolerate them; StartupTaints do not.
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// InstanceTypeOptions are the instance types it may launch as.
	InstanceTypeOptions []string
	// Allocatable estimates what pods may use on the node before daemonsets;
	// the engine subtracts the daemonset overhead as for a new node.
	Allocatable corev1.ResourceList
	// Pods are the pods already nominated to it.
	Pods []*corev1.Pod
	// PricePerHour is what it will cost (0 when unknown).
	PricePerHour float64
}

// NodePool is a template for new nodes.
type NodePool struct {
	// Name is the NodePool's name (the karpenter.sh/nodepool label).
	Name string
	// Weight orders NodePools: a new node comes from the highest-weight
	// NodePool that can take the pod.
	Weight int32
	// Requirements constrain the nodes (instance types, zones, capacity
	// types, any label); minValues are kept.
	Requirements requirements.Requirements
	// Labels are the template labels every node gets.
	Labels map[string]string
	// Taints block pods that do not tolerate them; StartupTaints are
	// expected to be removed by a node agent and do not block.
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// Limits cap the pool's total capacity (cpu, memory, "nodes", any
	// resource); Usage is what it already has, in-flight NodeClaims included.
	Limits corev1.ResourceList
	Usage  corev1.ResourceList
	// InstanceTypes are the shapes the pool's node class can launch, with
	// Overhead already computed for its kubelet settings.
	InstanceTypes []*cloudprovider.InstanceType
	// UnsupportedReason, when set, says why nodes of this pool cannot be
	// provisioned yet (e.g. "Windows AMI families are not supported yet");
	// pods that only this pool could take get it as their reason.
	UnsupportedReason string
}

// OfferingKey names one offering: an instance type in a zone at a capacity
// type.
type OfferingKey struct {
	InstanceType string
	Zone         string
	CapacityType string
}

// PreferencePolicy says what Solve does with soft constraints: preferred
// node affinity, preferred pod (anti-)affinity, ScheduleAnyway topology
// spread and PreferNoSchedule taints.
type PreferencePolicy string

const (
	// PreferenceRespect (the default) treats preferences as requirements and
	// relaxes them, lowest weight first, only for pods that cannot be
	// placed otherwise.
	PreferenceRespect PreferencePolicy = "Respect"
	// PreferenceIgnore ignores preferences.
	PreferenceIgnore PreferencePolicy = "Ignore"
)

// Options are the deterministic knobs of a solve. The zero value is the
// default.
type Options struct {
	// PreferencePolicy is Respect ("" means Respect) or Ignore.
	PreferencePolicy PreferencePolicy
	// ImprovementBudget caps the work of the improvement phase, in
	// candidate-move evaluations. 0 picks a default that scales with the
	// input (DefaultImprovementBudget); a negative value disables
	// improvement and the rotated-zone re-solves of small inputs. It is a work count, never a deadline, so the same input
	// always gets the same plan.
	ImprovementBudget int
	// Seed perturbs tie-breaks in the improvement phase. Plans for the same
	// input and seed are identical.
	Seed uint64
	// SkipLowerBound leaves Plan.LowerBound at 0 (saves its computation).
	SkipLowerBound bool
	// IgnoreTopologySpread plans every pod as if it had no topology spread
	// constraints, without the caller copying each pod to drop them (the
	// disruption planner's fleet bound does this for every pod of the
	// cluster).
	IgnoreTopologySpread bool
}

// Plan is the outcome of Solve.
type Plan struct {
	// Existing places pods onto existing nodes and in-flight NodeClaims.
	Existing []Placement
	// NodeClaims are the new nodes to launch, in plan order.
	NodeClaims []NewNodeClaim
	// Unschedulable lists the pods that cannot be placed, with the reason,
	// sorted by namespace and name.
	Unschedulable []PodError
	// PricePerHour is the total price of the new NodeClaims' offerings.
	PricePerHour float64
	// FleetPricePerHour is the whole fleet's $/h once the plan is carried
	// out: the existing nodes not marked for deletion and the in-flight
	// NodeClaims at their PricePerHour, plus PricePerHour.
	FleetPricePerHour float64
	// LowerBound is a proven lower bound on the price of any set of new
	// nodes that holds the pods this plan puts on new NodeClaims and, per
	// pod class, uses the pools of the weight tier this plan used for it
	// (pools are filled by weight, as the engine does; 0 when
	// Options.SkipLowerBound is set). The disruption planner's fleet bound
	// sets every weight to 0 to bound any fleet.
	LowerBound float64
	// Buffers says where each of the input's Buffers is kept, in input
	// order (Solve only; a Model's what-ifs leave it empty).
	Buffers []BufferRoom
	// Stats are counts about the solve.
	Stats Stats
}

// PodRef names a pod.
type PodRef struct {
	Namespace string
	Name      string
}

// String returns "namespace/name".
func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// Placement binds a pod to an existing node or an in-flight NodeClaim.
type Placement struct {
	Pod PodRef
	// Node is the node's name, or the in-flight NodeClaim's name.
	Node string
	// InFlight is true when Node names an in-flight NodeClaim.
	InFlight bool
}

// NewNodeClaim is one planned node.
type NewNodeClaim struct {
	// Name is deterministic: "<nodepool>-<n>", numbered per pool in plan
	// order, skipping names used by existing nodes or in-flight NodeClaims.
	// It is also the planned kubernetes.io/hostname.
	Name     string
	NodePool string
	// Requirements are the pool's requirements narrowed by the pods' and by
	// the chosen options: node.kubernetes.io/instance-type In the options,
	// zone and capacity type narrowed as the pods need, minValues kept.
	Requirements requirements.Requirements
	// Labels are the labels the node will carry: the pool's template labels,
	// karpenter.sh/nodepool, the planned hostname and every label the
	// requirements pin to one value.
	Labels map[string]string
	// Taints and StartupTaints come from the pool.
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	// InstanceTypeOptions are every instance type that holds the pods,
	// cheapest available offering first.
	InstanceTypeOptions []string
	// Offering is the cheapest available offering among the options: what
	// the cloud will launch.
	Offering PlannedOffering
	// Pods are the pods planned onto the node, in the order the scheduler
	// should bind them.
	Pods []PodRef
	// Requests are the pods' requests plus the daemonset overhead of the
	// chosen instance type.
	Requests corev1.ResourceList
}

// PlannedOffering is the offering a NodeClaim is priced at.
type PlannedOffering struct {
	InstanceType string
	Zone         string
	CapacityType string
	// Price is the marginal price: for capacity a commitment covers,
	// commitment.PriceFactor of ListPrice.
	Price float64
	// Commitment names the commitment that covers it (on-demand only);
	// ListPrice is then its price without the commitment.
	Commitment string
	ListPrice  float64
}

// PodError says why a pod cannot be placed.
type PodError struct {
	Pod     PodRef
	Code    ReasonCode
	Message string
}

// Stats are counts about a solve, for logs and metrics.
type Stats struct {
	// Pods is the number of pending pods; Classes the number of pod classes
	// (pods with identical requests and constraints) they formed.
	Pods, Classes int
	// TopologyGroups is the number of distinct spread/affinity/anti-affinity
	// groups tracked.
	TopologyGroups int
	// PlacedExisting, PlacedNew and Unschedulable partition the pods.
	PlacedExisting, PlacedNew, Unschedulable int
	// ConstructionPrice is the plan's price before the improvement phase.
	ConstructionPrice float64
	// ImproveEvaluations is the work the improvement phase spent (candidate
	// moves evaluated); ImproveAccepted the moves it kept.
	ImproveEvaluations, ImproveAccepted int
	// Relaxed counts pods placed after relaxing at least one preference.
	Relaxed int
	// BoundGroups is the number of pod groups given to the lower bound.
	BoundGroups int
}
