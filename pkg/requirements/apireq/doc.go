// Package apireq converts the requirement lists of the karpenter.sh/v1 API
// (NodePool spec.template.spec.requirements and NodeClaim
// spec.requirements, with minValues) into the requirement algebra of
// pkg/requirements, and reads the ordered values of an In expression (a
// NodeClaim's instance-type options are ordered by preference).
//
// It is the one such conversion: the snapshot, the cloud providers (AWS and
// the in-memory fake) and the drift controller all call it, so minValues
// and error paths agree everywhere.
//
// What must not live here: decisions (which types to launch, whether a
// NodeClaim drifted); the package only translates.
package apireq
