// Package repair holds the AWS provider's node repair policies (the
// conditions repaired under the NodeRepair gate, with their tolerations and
// drain bounds), apart from the provider so that offline tools (explain,
// simulate) read the same list without the provider's dependencies.
//
// It must not call AWS or the cluster.
package repair
