package disruption

// Code is a stable reason a node is kept. Tools match on it; the message
// beside it is for people.
type Code string

// Reasons a node is kept, in the order the planner checks them.
const (
	// CodeUnmanaged: the node belongs to no NodePool of the input.
	CodeUnmanaged Code = "Unmanaged"
	// CodeDeleting: the node is already being deleted.
	CodeDeleting Code = "Deleting"
	// CodeNotInitialized: the node is not initialized yet.
	CodeNotInitialized Code = "NotInitialized"
	// CodeNominated: pending pods were nominated to the node.
	CodeNominated Code = "Nominated"
	// CodeNodeDoNotDisrupt: the node has karpenter.sh/do-not-disrupt.
	CodeNodeDoNotDisrupt Code = "NodeDoNotDisrupt"
	// CodePodDoNotDisrupt: a pod on the node has karpenter.sh/do-not-disrupt.
	CodePodDoNotDisrupt Code = "PodDoNotDisrupt"
	// CodePDB: a PodDisruptionBudget does not allow evicting the node's pods.
	CodePDB Code = "PDBBlocked"
	// CodeConsolidationDisabled: consolidateAfter is Never.
	CodeConsolidationDisabled Code = "ConsolidationDisabled"
	// CodeConsolidateAfter: the node had a pod event too recently.
	CodeConsolidateAfter Code = "ConsolidateAfter"
	// CodeWhenEmpty: the pool only removes empty nodes and this one has pods.
	CodeWhenEmpty Code = "PolicyWhenEmpty"
	// CodeNeededByPending: pending pods would be placed on the node.
	CodeNeededByPending Code = "NeededByPendingPods"
	// CodeUnknownPrice: the node's instance type, capacity type, zone or
	// price is unknown, so it cannot be compared.
	CodeUnknownPrice Code = "UnknownPrice"
	// CodeBudget: the pool's disruption budget for the reason is spent.
	CodeBudget Code = "BudgetExhausted"
	// CodeCannotReschedule: some of its pods fit nowhere else.
	CodeCannotReschedule Code = "CannotReschedule"
	// CodeNoCheaper: re-placing its pods costs at least what the node costs.
	CodeNoCheaper Code = "NoCheaperPlacement"
	// CodeSpotToSpotDisabled: only a spot replacement would be cheaper and
	// SpotToSpotConsolidation is off.
	CodeSpotToSpotDisabled Code = "SpotToSpotDisabled"
	// CodeSpotToSpotTypes: too few cheaper spot types for spot-to-spot.
	CodeSpotToSpotTypes Code = "SpotToSpotTooFewTypes"
	// CodeMinValues: the cheaper options would break a minValues requirement.
	CodeMinValues Code = "MinValues"
	// CodeBalanced: under the Balanced policy the savings are not worth the
	// disruption.
	CodeBalanced Code = "BalancedScoreTooLow"
	// CodeMinSavings: a consolidation would save money, but less than the
	// pool's consolidation savings threshold (MinSavings: per command, or
	// per evicted pod).
	CodeMinSavings Code = "BelowMinSavings"
	// CodeRecentReplacement: consolidation launched the node less than
	// ReplacementHold ago; it is not replaced again (no A -> B -> A), only
	// deleted if its pods fit on the rest of the fleet.
	CodeRecentReplacement Code = "RecentReplacement"
	// CodeDriftBlocked: drifted, but its pods cannot be re-placed now.
	CodeDriftBlocked Code = "DriftReplacementBlocked"
	// CodeDestination: an earlier command of this pass moves pods onto it;
	// it is not disrupted in the same pass (its pods would move twice).
	CodeDestination Code = "Destination"
	// CodeReservedCapacity: the node runs in a capacity reservation, paid
	// for whether used or not: removing it or moving its pods saves
	// nothing, so consolidation leaves it (emptiness, drift, expiry and
	// repair still apply).
	CodeReservedCapacity Code = "ReservedCapacity"
	// CodeStaticPool: the node belongs to a static pool (spec.replicas),
	// whose nodes are not consolidated; only drift replaces them.
	CodeStaticPool Code = "StaticPool"
	// CodeBufferRoom: empty, but it holds the room of a CapacityBuffer
	// (the buffer's pods would be placed on it); deleting or shrinking the
	// buffer lets it go.
	CodeBufferRoom Code = "CapacityBuffer"
	// CodeRepairTolerating: a condition matches a repair policy, but has
	// not lasted its toleration yet.
	CodeRepairTolerating Code = "UnhealthyWithinToleration"
	// CodeRepairDisabled: unhealthy past its toleration, but node repair
	// is off (feature gate NodeRepair).
	CodeRepairDisabled Code = "NodeRepairDisabled"
	// CodeRepairBreaker: more than 20% of the pool's nodes are unhealthy;
	// the pool is not repaired until fewer are.
	CodeRepairBreaker Code = "RepairCircuitBreaker"
	// CodeRepairBlocked: unhealthy, but its pods fit nowhere else, or
	// pods block its drain and no grace period bounds it.
	CodeRepairBlocked Code = "RepairBlocked"
	// CodeDoNotRepair: unhealthy past its toleration, but the node has
	// karpenter.sh/do-not-repair.
	CodeDoNotRepair Code = "DoNotRepair"
	// CodeRebooting: the node is rebooting for repair.
	CodeRebooting Code = "Rebooting"
	// CodeNotCandidate: nothing to do: not empty, drifted or underutilized
	// under the pool's policy (for example, it is part of the cheapest fleet).
	CodeNotCandidate Code = "Kept"
)

// Codes lists every code, for documentation and tests.
func Codes() []Code {
	return []Code{CodeUnmanaged, CodeDeleting, CodeNotInitialized, CodeNominated, CodeNodeDoNotDisrupt,
		CodePodDoNotDisrupt, CodePDB, CodeConsolidationDisabled, CodeConsolidateAfter, CodeWhenEmpty,
		CodeNeededByPending, CodeUnknownPrice, CodeBudget, CodeCannotReschedule, CodeNoCheaper,
		CodeSpotToSpotDisabled, CodeSpotToSpotTypes, CodeMinValues, CodeBalanced, CodeMinSavings, CodeDriftBlocked, CodeDestination, CodeReservedCapacity, CodeStaticPool,
		CodeBufferRoom, CodeRepairTolerating, CodeRepairDisabled, CodeRepairBreaker, CodeRepairBlocked, CodeDoNotRepair, CodeRebooting, CodeNotCandidate}
}
