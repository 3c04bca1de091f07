// Package v1 holds the karpenter.sh/v1 API types that dovetail serves
// unchanged: NodePool, NodeClaim, and the label, annotation, taint, finalizer
// and condition names that go with them.
//
// # Vocabulary
//
//   - NodePool: a user's template for nodes (requirements, taints, labels,
//     the node class to launch with), plus the limits, weight and disruption
//     policy that govern every node made from it.
//   - NodeClaim: one planned or running node, made from a NodePool template.
//     Its spec is immutable; its status records the launch (providerID,
//     nodeName, capacity) and the lifecycle conditions.
//   - NodeClassReference: the pointer from a NodePool or NodeClaim to the
//     provider's node class (for AWS, an EC2NodeClass in karpenter.k8s.aws).
//   - NillableDuration: a duration that may also be "Never"; used by
//     expireAfter and consolidateAfter.
//
// # Invariants
//
// The validation that users see lives in the CRD schema (OpenAPI and CEL
// x-kubernetes-validations rules generated from the kubebuilder markers in
// this package); the apiserver enforces it, so objects read back from the
// cluster already satisfy it. Defaults (expireAfter 720h, consolidation policy
// WhenEmptyOrUnderutilized, consolidateAfter 0s, budgets [{nodes: "10%"}]) are
// applied by the apiserver, not by Go code.
//
// Some checks are left to run time: those CEL's cost budget cannot afford
// (template label keys), and those the peer's CRD leaves through and the
// peer refuses at run time, so both admit the same manifests (requirement
// keys and values, cron fields of budget schedules; see docs/api.md).
// NodePool.RuntimeValidate and NodeClaim.RuntimeValidate do them and return
// a field.ErrorList for the ValidationSucceeded condition.
//
// NodeClaim specs are immutable. The rule compares terminationGracePeriod as
// a duration and NillableDuration keeps the text it was read from, but
// quantities are compared as written and Go re-spells them ("1000m" becomes
// "1"): change NodeClaims with a patch (client.MergeFrom), not a full
// Update, unless the spec was written by these types.
//
// # What does not live here
//
// No client code and no business logic: the helpers in this package are pure
// accessors (condition getters and setters that take the time as an argument,
// NillableDuration parsing). Scheduling, disruption and cloud code import this
// package, never the other way round.
//
// See ExampleNillableDuration and ExampleNodeClaim_SetCondition.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.sh
package v1
