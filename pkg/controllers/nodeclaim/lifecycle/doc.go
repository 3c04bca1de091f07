// Package lifecycle drives a NodeClaim from creation to Ready.
//
// # Steps, in each reconcile
//
//  1. Adopt: add the karpenter.sh/termination finalizer (and the pool's
//     hash annotations if the creator left them out); count the NodeClaim
//     in karpenter_nodeclaims_created_total.
//  2. Fence (fence.go): a NodeClaim whose status.providerID another
//     NodeClaim also carries, and which is not the rightful one (the claim
//     the cloud says the instance was launched for, else the one the
//     Node's owner reference names, else the older), is unlinked from the
//     node, its providerID and nodeName cleared (Launched=False,
//     ProviderIDInUse, and a Warning event) and deleted; a status.nodeName
//     naming a Node of another providerID is cleared (NodeNameMismatch).
//  3. Liveness: a NodeClaim not Launched within LaunchTimeout (5 min) of
//     its creation, or not Registered within RegistrationTimeout (15 min)
//     of its launch, is deleted with an event (LaunchTimeout,
//     RegistrationTimeout) and dovetail_nodeclaims_liveness_timeouts_total.
//     Otherwise the reconcile asks to run again at the deadline.
//  4. Launch: CloudProvider.Create. On success the launched labels
//     (instance type, zone, capacity type, ...) and the hourly price
//     (dovetail.sh/price-per-hour) are written, then providerID, imageID,
//     capacity, allocatable and Launched=True. Insufficient capacity marks
//     the refused offerings in the shared unavailable cache (3 minutes)
//     and deletes the NodeClaim so provisioning re-plans with what remains;
//     other errors set Launched=False with the error's reason and back off
//     exponentially.
//  5. Registration: once a Node with the providerID exists, it gets the
//     NodeClaim's labels, annotations, taints and startup taints (once),
//     the finalizer, an owner reference, karpenter.sh/registered=true, and
//     its karpenter.sh/unregistered:NoExecute taint becomes NoSchedule;
//     status.nodeName is set and Registered=True. Options.RegistrationHold
//     after that, a later reconcile lifts the NoSchedule taint
//     (registration.go's holdLeft says why).
//  6. Initialization: the Node is Ready, has none of the NodeClaim's
//     startup taints, nor the ephemeral not-ready/unreachable/uninitialized
//     taints, nor an unregistered taint, and reports every requested
//     resource with a positive allocatable quantity: Initialized=True and
//     karpenter.sh/initialized.
//
// Ready is Launched && Registered && Initialized (NodeClaim.SetCondition).
//
// # Invariants
//
// Create is called once per NodeClaim: its answer is persisted before
// anything else can fail (a lost answer leaks an instance until garbage
// collection finds it). Metrics and events of a transition are reported by
// the reconcile whose status write won (onCommit), so concurrent
// reconciles never double-count. No sleeps: every wait is a watch (Nodes
// map to their NodeClaim by providerID) or a requeue at a deadline computed
// from the injected clock.
package lifecycle
