// Package v1 holds the karpenter.k8s.aws/v1 API types that dovetail serves
// unchanged: EC2NodeClass, and the AWS instance labels, AMI families, tags and
// condition names that go with it.
//
// # Vocabulary
//
//   - EC2NodeClass: how to launch an EC2 instance for a node: which subnets,
//     security groups and AMIs (found by selector terms), which IAM role or
//     instance profile, user data, block devices, instance metadata options
//     and kubelet settings. NodePools point at one via nodeClassRef.
//   - Selector term: one way of finding a resource (by tags, ID, name, ...);
//     a resource matches when any term matches it, and within a term every
//     given field must match.
//   - AMI alias: "family@version", e.g. "al2023@latest", a shortcut for the
//     AMIs EKS publishes for that family.
//
// # Invariants
//
// Validation lives in the CRD schema (OpenAPI and CEL rules generated from
// the markers here) and is enforced by the apiserver: exactly one of role
// and instanceProfile, non-empty selector terms, an amiFamily unless an alias
// is given, and so on. Defaults (the instance metadata options) are applied
// by the apiserver. What CEL's cost budget cannot afford (parsing kubelet
// reserved quantities and eviction thresholds) EC2NodeClass.RuntimeValidate
// checks, returning a field.ErrorList.
//
// # What does not live here
//
// No AWS SDK calls and no business logic: resolving selector terms, building
// launch templates and rendering user data belong to the AWS provider. The
// helpers here are pure (AMIFamily derives the family from an alias).
//
// See ExampleEC2NodeClass_AMIFamily.
//
// +kubebuilder:object:generate=true
// +groupName=karpenter.k8s.aws
package v1
