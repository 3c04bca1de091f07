package v1

// dovetail's own annotations. They sit beside the karpenter.sh keys because
// the controllers that write them and the commands that read them share these
// types; the peer ignores them.
const (
	// AnnotationPricePerHour is the $/h of the offering a NodeClaim was
	// launched on, written by the lifecycle controller at launch
	// (decimal, e.g. "0.0416").
	AnnotationPricePerHour = "dovetail.sh/price-per-hour"
	// AnnotationOffering is the offering a NodeClaim was launched on:
	// "<instance-type>/<zone>/<capacity-type>".
	AnnotationOffering = "dovetail.sh/offering"
	// AnnotationPlannedOffering is the offering the engine priced a
	// NodeClaim at, written by the provisioner when it creates the
	// NodeClaim: "<instance-type>/<zone>/<capacity-type>". The cloud
	// provider keeps its capacity type at launch.
	AnnotationPlannedOffering = "dovetail.sh/planned-offering"
	// AnnotationPriceOverlays names the NodeOverlays (comma-separated, in
	// name order) that set the price of an offering of a NodeClaim's
	// instance-type options, written by the provisioner: its options are
	// ranked by overlaid prices, so the cloud provider launches them in
	// that order (on AWS an on-demand fleet's prioritized allocation)
	// rather than by the cloud's own prices.
	AnnotationPriceOverlays = "dovetail.sh/price-overlays"
	// AnnotationConsolidationMinSavings on a NodePool is the least $/h
	// one consolidation command of its nodes must save (a non-negative
	// decimal, e.g. "0.05"); it overrides the controller's
	// --consolidation-min-savings for the pool. Emptiness is never held.
	AnnotationConsolidationMinSavings = "dovetail.sh/consolidation-min-savings"
	// AnnotationConsolidationMinSavingsPerPod on a NodePool is the least
	// $/h a consolidation of its nodes must save per pod it evicts (e.g.
	// "0.01"); it overrides --consolidation-min-savings-per-pod.
	AnnotationConsolidationMinSavingsPerPod = "dovetail.sh/consolidation-min-savings-per-pod"
	// AnnotationPodDeletionCostManaged marks a pod whose
	// controller.kubernetes.io/pod-deletion-cost dovetail wrote (feature
	// gate PodDeletionCostManagement); a pod with a deletion cost and
	// without it is left alone.
	AnnotationPodDeletionCostManaged = "dovetail.sh/pod-deletion-cost-managed"
)
