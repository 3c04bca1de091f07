// Package iampolicy builds the IAM policies dovetail's controller needs on
// AWS, least privilege and scoped by the cluster's tags, split into managed
// policies that each stay under IAM's 6,144-character limit even with a
// 100-character cluster name; and evaluates IAM policy documents (Action
// and Resource matching with * and ? wildcards), so tests can check that
// every AWS call the provider makes is allowed.
//
// docs/iam holds the generated documents (ControllerPolicies with
// TemplateParams placeholders); TestGoldenFiles keeps them in step and
// rewrites them with -update.
//
// See ExampleControllerPolicies.
//
// # Policies
//
//	NodeLifecycle      launch (CreateFleet, RunInstances, launch templates),
//	                   tag and terminate instances; every write is
//	                   conditioned on the kubernetes.io/cluster/<name>=owned,
//	                   eks:eks-cluster-name and karpenter.sh/nodepool tags.
//	IAMIntegration     pass the node role to EC2; create, tag, fill and
//	                   delete the instance profiles dovetail manages (tagged
//	                   with the cluster, region and EC2NodeClass).
//	EKSIntegration     eks:DescribeCluster for endpoint discovery.
//	Interruption       receive and delete messages on the interruption queue.
//	ResourceDiscovery  read-only EC2 describes (region-scoped), the public
//	                   EKS/Bottlerocket SSM parameters, Pricing, and
//	                   instance-profile reads.
//
// # Evaluation
//
// Document.Allows implements the part of IAM evaluation that depends on
// the request's action and resource: an explicit Deny wins, then any
// matching Allow; actions match case-insensitively, resources
// case-sensitively. Condition blocks are treated as satisfied (they depend
// on request tags this package does not see); Allows says so by returning
// the conditions it assumed.
package iampolicy
