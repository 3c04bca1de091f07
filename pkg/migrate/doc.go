// Package migrate turns Cluster Autoscaler's node groups (EKS managed node
// groups and the Auto Scaling groups behind them, with CAS's tags) into
// NodePools and EC2NodeClasses that keep each group's labels, taints,
// instance types (so its families), architecture, capacity type, subnets,
// security groups, AMI family and node role, with NodePool limits from the
// group's maxSize times its largest instance size (CAS's maxSize is the
// user's cost ceiling). It also diffs the result against what a cluster
// already has.
//
// Pure: it takes the SDK's output structs (no client calls) and the
// built-in catalog; internal/cli/migrate makes the AWS and Kubernetes
// calls and prints the checklist.
package migrate
