// Package migrate is `dovetail migrate`: it reads the cluster's EKS managed
// node groups with their Auto Scaling groups and launch templates, and the
// cluster's self-managed Auto Scaling groups (aws-sdk-go-v2; read-only
// calls, listed in docs/migrate.md), converts them with pkg/migrate, and
// creates the NodePools and EC2NodeClasses (with --dry-run it only prints
// them, with a diff against what the cluster has). Then it prints the
// ordered migration checklist and checks every item it can: the queue, the
// EventBridge rules that feed it, the node roles' EKS access entries (or
// aws-auth), the objects, PDBs, Cluster Autoscaler and the groups' sizes.
//
// The manifests go to stdout (or -o FILE); the diff, the notes and the
// checklist to stderr. Options / NewCmd / Run as in cmdutil; exit codes
// 0, 1 (AWS or cluster error), 2 (bad input). See docs/migrate.md.
package migrate
