// Package migrate turns Cluster Autoscaler's node groups (EKS managed node
// groups and the Auto Scaling groups behind them, self-managed Auto Scaling
// groups, with CAS's tags and their launch templates) into
// NodePools and EC2NodeClasses that keep each group's labels, taints,
// instance types (so its families), architecture, capacity type, subnets,
// security groups, AMI (the alias of the amiType, or the launch template's
// AMI by id with its family) and node role or instance profile, with
// NodePool limits from the group's maxSize times its largest instance size
// (CAS's maxSize is the user's cost ceiling). It also judges EventBridge event patterns against
// the four interruption kinds (PatternKinds) for the checklist.
//
// Pure: it takes the SDK's output structs (no client calls) and the
// built-in catalog; internal/cli/migrate makes the AWS and Kubernetes
// calls and prints the checklist.
package migrate
