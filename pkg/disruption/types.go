package disruption

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// Reason is why a command disrupts its nodes; budgets are per reason.
type Reason string

// Disruption reasons, as budgets name them.
const (
	ReasonEmpty         Reason = "Empty"
	ReasonDrifted       Reason = "Drifted"
	ReasonUnderutilized Reason = "Underutilized"
	// ReasonUnhealthy is node repair (Options.NodeRepair).
	ReasonUnhealthy Reason = "Unhealthy"
)

// Consolidation policies (NodePool spec.disruption.consolidationPolicy).
const (
	PolicyWhenEmpty                = "WhenEmpty"
	PolicyWhenEmptyOrUnderutilized = "WhenEmptyOrUnderutilized"
	PolicyBalanced                 = "Balanced"
)

// Input is everything one planning pass decides on.
type Input struct {
	// Now is the time the plan is for (budget schedules, consolidateAfter,
	// do-not-disrupt durations, expiry).
	Now time.Time
	// Cluster is the scheduling snapshot: pending pods, nodes with their
	// pods, in-flight NodeClaims, DaemonSets and NodePools with their
	// instance types (as provisioning builds it).
	Cluster *engine.Input
	// Pools are the disruption settings of each NodePool, by name.
	Pools map[string]PoolPolicy
	// Nodes are the per-node facts the planner needs, by node name. A node
	// of Cluster without an entry here (or whose entry has no NodePool) is
	// unmanaged: never disrupted, reported Unmanaged.
	Nodes map[string]NodeState
	// PDBs are the PodDisruptionBudgets with what they allow now.
	PDBs []PDB
	// RepairPolicies are the cloud provider's unhealthy node conditions
	// (Options.NodeRepair).
	RepairPolicies []cloudprovider.RepairPolicy
	// Options are the planner's switches.
	Options Options
}

// PoolPolicy is a NodePool's disruption settings.
type PoolPolicy struct {
	// ConsolidationPolicy is WhenEmpty, WhenEmptyOrUnderutilized ("" means
	// this) or Balanced.
	ConsolidationPolicy string
	// ConsolidateAfter is how long a node must have had no pod event
	// before consolidation (and emptiness) consider it; nil means Never.
	ConsolidateAfter *time.Duration
	// Budgets limit concurrent disruptions; nil means the default, one
	// budget of 10%. An empty non-nil slice means no budget (unlimited).
	Budgets []Budget
	// ExpireAfter is the node lifetime (nil: Never); the planner uses it
	// for disruption cost and reports nodes that expire soon.
	ExpireAfter *time.Duration
	// Static marks a static pool (spec.replicas): its nodes are never
	// consolidated (Empty, Underutilized), only replaced when drifted; its
	// count is the static controller's.
	Static bool
	// Replicas is a static pool's spec.replicas (nil when not given): the
	// reason a static node is kept says it and how many nodes the pool has.
	Replicas *int64
	// MinSavings is the pool's consolidation savings threshold (the
	// NodePool's dovetail.sh/consolidation-min-savings and
	// dovetail.sh/consolidation-min-savings-per-pod annotations); a nil
	// field takes Options.MinSavings'.
	MinSavings PoolMinSavings
}

// PoolMinSavings overrides Options.MinSavings for one pool, field by field
// (nil: the global value).
type PoolMinSavings struct {
	PerCommand, PerPod *float64
}

// MinSavings is a consolidation savings threshold, in $/h. An Underutilized
// command (deleting or replacing nodes that have pods) is refused, with
// CodeMinSavings, when it saves less than PerCommand, or less than PerPod
// times the number of pods it evicts. Empty, Drifted and Unhealthy
// commands are never held by it: deleting an empty node disrupts no pod,
// and drift and repair are not about savings. Zero (the default) is off.
type MinSavings struct {
	// PerCommand: the least $/h one consolidation command must save.
	PerCommand float64
	// PerPod: the least $/h a consolidation must save per evicted pod.
	PerPod float64
}

// Budget is one NodePool disruption budget.
type Budget struct {
	// Nodes is a count ("5") or a percentage ("10%", rounded up) of the
	// pool's nodes.
	Nodes string
	// Reasons it applies to; empty means all.
	Reasons []Reason
	// Schedule (cron, UTC) and Duration make the budget active only in
	// windows; both or neither.
	Schedule string
	Duration time.Duration
}

// NodeState is what the planner knows about one node beyond its labels and
// pods.
type NodeState struct {
	// NodeClaim is the node's NodeClaim ("" when it has none).
	NodeClaim string
	// NodePool is the pool the node belongs to ("" unmanaged).
	NodePool string
	// Adopted marks a node without a karpenter.sh/nodepool label that was
	// given to NodePool by its requirements (snapshot of a cluster the
	// peer or Cluster Autoscaler manages).
	Adopted bool
	// Initialized nodes are ready for pods; others are never disrupted.
	Initialized bool
	// NotReady nodes count as disrupting for budgets.
	NotReady bool
	// Created is when the NodeClaim (or node) was created.
	Created time.Time
	// CreationReason is why the NodeClaim was made
	// (CreationReasonAnnotation: "provisioning", or the lower-case reason
	// of the disruption command that launched it as a replacement).
	CreationReason string
	// ReplacedTypes are the instance types the command that launched the
	// node removed (net of the types it launched again), from
	// ReplacedTypesAnnotation: consolidation does not launch them again in
	// place of the node within ReplacementHold (no A -> B -> A).
	ReplacedTypes []string
	// LastPodEvent is status.lastPodEventTime (or, when unknown, the
	// initialization time); consolidateAfter counts from it.
	LastPodEvent time.Time
	// MarkedForDeletion nodes are going away already.
	MarkedForDeletion bool
	// Drifted is the drift reason ("" when not drifted).
	Drifted string
	// NominatedUntil: pending pods were nominated to the node (by the
	// scheduler or provisioning) until then; NominatedPods counts them.
	NominatedUntil time.Time
	NominatedPods  int
	// DoNotDisrupt is the node's karpenter.sh/do-not-disrupt annotation.
	DoNotDisrupt bool
	// TerminationGracePeriod, when set, lets drift ignore blocking pods.
	TerminationGracePeriod *time.Duration
	// Conditions are the Node's status conditions, matched against
	// Input.RepairPolicies.
	Conditions []corev1.NodeCondition
	// DoNotRepair is the node's DoNotRepairAnnotation: it is never
	// repaired (rebooted or replaced).
	DoNotRepair bool
	// Rebooting: a reboot for repair is in progress (the node is kept,
	// and counts against its pool's budgets as a node being deleted).
	Rebooting bool
	// RepairReboots counts the reboots for repair the node had, and
	// LastReboot is when the last one ended: a fault of a reboot policy
	// must outlast its toleration after it to be acted on again, and
	// after cloudprovider.MaxRepairReboots reboots it is repaired by
	// replacement.
	RepairReboots int
	LastReboot    time.Time
	// InstanceType, CapacityType, Zone and PricePerHour describe what the
	// node costs. Empty fields are taken from the node's labels; a zero
	// price from the engine's ExistingNode.PricePerHour, else the pool's
	// instance types and offerings.
	InstanceType, CapacityType, Zone string
	PricePerHour                     float64
}

// PDB is a PodDisruptionBudget as the planner needs it.
type PDB struct {
	Namespace, Name string
	// Selector picks the pods it covers (in Namespace). A nil selector
	// covers nothing.
	Selector labels.Selector
	// DisruptionsAllowed is status.disruptionsAllowed now.
	DisruptionsAllowed int32
}

// Options are the planner's switches.
type Options struct {
	// NodeRepair replaces nodes whose conditions match a repair policy
	// past its toleration (the peer's feature gate, default off): method
	// Unhealthy, before the others. Off, such nodes are reported
	// NodeRepairDisabled.
	NodeRepair bool
	// SpotToSpotConsolidation allows replacing spot nodes with cheaper spot
	// nodes (the peer's feature gate, default off). A single node needs at
	// least MinSpotToSpotTypes cheaper spot types, and the replacement
	// launches from the cheapest of them.
	SpotToSpotConsolidation bool
	// TerminateFirstDrift and TerminateFirstRepair (the peer's feature
	// gates, default off): when a drifted (unhealthy) node's replacement
	// cannot launch before it goes because its NodePool's limits would be
	// exceeded (the limits count the node until it is gone), the node is
	// deleted first (a delete-only command, Command.TerminateFirst) and
	// provisioning launches for its pods once its capacity is released.
	// Off, the node is kept (DriftReplacementBlocked, RepairBlocked)
	// naming the limit. Budgets, PDBs and do-not-disrupt hold as for any
	// drift (repair) command.
	TerminateFirstDrift, TerminateFirstRepair bool
	// NominationWindow: a node nominated within this long is not a
	// candidate even after NominatedUntil (0: none beyond NominatedUntil).
	// SkipLowerBound leaves Plan.LowerBoundPricePerHour at 0.
	SkipLowerBound bool
	// ExpiringWithin: nodes that expire within this long are listed in
	// Plan.Expiring (0: one hour).
	ExpiringWithin time.Duration
	// MinSavings is the consolidation savings threshold of pools that do
	// not set their own (PoolPolicy.MinSavings); zero is off.
	MinSavings MinSavings
	// Engine are the engine options for what-ifs (seed, preference policy).
	// Its ImprovementBudget 0 means a small default per what-if.
	Engine engine.Options
}

// MinSpotToSpotTypes is how many cheaper spot instance types a single spot
// node needs before it is replaced by spot (and how many the replacement
// may launch from), as the peer does.
const MinSpotToSpotTypes = 15

// Plan is the outcome of one planning pass.
type Plan struct {
	// Commands to execute, in order; each assumes the ones before it done.
	Commands []Command
	// Kept lists every managed node not in a command, and every unmanaged
	// node, with why, sorted by node name.
	Kept []Kept
	// Expiring lists nodes whose expireAfter ends within
	// Options.ExpiringWithin (expiration itself is forceful and not
	// planned here).
	Expiring []Expiring
	// Allowed is how many nodes each pool may still disrupt now per reason
	// (before the commands), for metrics and explanations; -1 is unlimited.
	Allowed map[string]map[Reason]int
	// FleetPricePerHour is the $/h of every node with a known price;
	// FleetPricePerHourAfter the same once every command is done.
	FleetPricePerHour, FleetPricePerHourAfter float64
	// LowerBoundPricePerHour is a proven lower bound on the $/h of any
	// fleet of the input's NodePools (any weight) that holds every pod now
	// running or pending on managed capacity (unmanaged nodes' pods
	// excluded), topology spreads not assumed (see LowerBound), from the
	// engine's bound; 0 when skipped.
	LowerBoundPricePerHour float64
	// Stats are counts about the pass.
	Stats Stats
}

// Command is one disruption decision.
type Command struct {
	Reason Reason
	// ConsolidationType is "empty", "single" or "multi" (Underutilized and
	// Empty), "" for drift.
	ConsolidationType string
	// Nodes are the nodes removed (NodeClaims in NodeClaims, same order).
	Nodes      []string
	NodeClaims []string
	// Replacements are the NodeClaims to launch first, with their
	// instance-type options (already narrowed so that none costs more than
	// the plan allows).
	Replacements []engine.NewNodeClaim
	// Pods are the pods the command evicts.
	Pods []engine.PodRef
	// Placements are where the evicted pods go on existing nodes and
	// in-flight NodeClaims (the rest go to the replacements, whose Pods
	// list them).
	Placements []engine.Placement
	// PricePerHour is what the removed nodes cost; ReplacementPricePerHour
	// what the replacements cost (planned offerings).
	PricePerHour, ReplacementPricePerHour float64
	// SavingsPerHour is PricePerHour less the added cost of the new plan.
	SavingsPerHour float64
	// DisruptionCost is the eviction cost of the pods, weighted by the
	// nodes' remaining lifetime.
	DisruptionCost float64
	// Message says what the command does, for events.
	Message string
	// TerminationGracePeriod (Unhealthy only) bounds the drain of the
	// removed nodes: the repair policy's bound, or the NodeClaim's when
	// shorter; nil inherits the NodeClaim's. Pods that block the drain
	// (do-not-disrupt, PDBs) are evicted when it runs out.
	TerminationGracePeriod *time.Duration
	// Reboot (Unhealthy only): the command reboots its one node in place
	// (CloudProvider.Reboot) rather than delete it; it has no
	// replacements and evicts no pod.
	Reboot bool
	// TerminateFirst (Drifted, Unhealthy): the NodePool limits keep the
	// replacement from launching before the node goes, so the command
	// deletes first and has no Replacements; provisioning launches for
	// the evicted pods once the node's capacity is released.
	TerminateFirst bool
	// TerminateFirstReason says why the replacement could not launch first
	// (TerminateFirstStaticAtLimit or TerminateFirstPoolAtLimit); set with
	// TerminateFirst.
	TerminateFirstReason string
}

// Why a command terminates first: the values of the
// karpenter_voluntary_disruption_terminate_first_decisions_total
// terminate_first_reason label.
const (
	// TerminateFirstStaticAtLimit: a static NodePool at its limits (the
	// peer's value).
	TerminateFirstStaticAtLimit = "static-at-limit"
	// TerminateFirstPoolAtLimit: a dynamic NodePool at its limits
	// (dovetail's; the peer terminates first only for static pools and
	// full capacity reservations).
	TerminateFirstPoolAtLimit = "nodepool-at-limit"
)

// Kept is a node not disrupted, with why.
type Kept struct {
	Node   string
	Code   Code
	Reason string
}

// Expiring is a node that expires soon.
type Expiring struct {
	Node     string
	ExpireAt time.Time
}

// Stats are counts about a pass.
type Stats struct {
	Candidates int
	WhatIfs    int
	Compiles   int
	Commits    int
}

// pod helpers shared by the planner and its tests.

// DoNotDisruptAnnotation blocks voluntary disruption of a node, or of the
// node of a pod ("true", or a duration from the pod's start).
const DoNotDisruptAnnotation = "karpenter.sh/do-not-disrupt"

// DoNotRepairAnnotation "true" on a Node (or its NodeClaim) vetoes its
// repair (the peer's escape hatch; do-not-disrupt does not).
const DoNotRepairAnnotation = "karpenter.sh/do-not-repair"

// CreationReasonAnnotation on a NodeClaim says why it was made
// ("provisioning", or the lower-case reason of the disruption command
// that launched it: "underutilized", "drifted", ...).
const CreationReasonAnnotation = "dovetail.sh/creation-reason"

// ReplacedTypesAnnotation on a NodeClaim that a consolidation command
// launched lists, comma-separated, the instance types that command
// removed (net of those it launched again).
const ReplacedTypesAnnotation = "dovetail.sh/replaced-types"

// ReplacementHold is how long consolidation does not replace a node it
// launched with one of the instance types the node replaced (no A -> B ->
// A within it). Replacing it with other types, or deleting it when its
// pods fit on the rest of the fleet, stays allowed; drift, expiry and
// repair replace it as any other node.
const ReplacementHold = 30 * time.Minute

// NetReplacedTypes are the instance types of removed that launched does
// not give back one for one, sorted: what a command's replacements carry
// in ReplacedTypesAnnotation.
func NetReplacedTypes(removed, launched []string) []string {
	out := slices.Clone(removed)
	for _, t := range launched {
		if i := slices.Index(out, t); i >= 0 {
			out = slices.Delete(out, i, i+1)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseReplacedTypes reads ReplacedTypesAnnotation: comma-separated
// instance types, blanks dropped (nil for "").
func ParseReplacedTypes(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Reschedulable reports whether a pod on a node must be re-placed when the
// node goes: active, not owned by a DaemonSet, not a mirror pod.
func Reschedulable(p *corev1.Pod) bool {
	if p == nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if p.DeletionTimestamp != nil && !ownedBy(p, "StatefulSet") {
		return false
	}
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return false
	}
	return !ownedBy(p, "DaemonSet")
}

func ownedBy(p *corev1.Pod, kind string) bool {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == kind {
			return true
		}
	}
	return false
}

// labelSet adapts a label map for selectors.
type labelSet map[string]string

func (l labelSet) Has(k string) bool { _, ok := l[k]; return ok }

func (l labelSet) Get(k string) string { return l[k] }

// Lookup implements labels.Labels.
func (l labelSet) Lookup(k string) (string, bool) { v, ok := l[k]; return v, ok }
