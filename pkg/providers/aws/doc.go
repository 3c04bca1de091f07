// Package aws is dovetail's AWS cloud provider: the implementation of
// cloudprovider.CloudProvider on EC2, through the unmodified
// aws-sdk-go-v2, plus the EC2NodeClass resolver its controller calls.
//
// # Layout
//
//	aws (this package)   Provider: Create, Get, List, Delete, IsDrifted,
//	                     GetInstanceTypes; PlanLaunch, the pure launch
//	                     decision
//	nodeclass            selector terms -> subnets, security groups, AMIs,
//	                     instance profile; conditions; static-field hash
//	instancetype         types, offerings, prices, unavailable offerings
//	launchtemplate       content-hashed launch templates
//	instance             CreateFleet / DescribeInstances /
//	                     TerminateInstances, batched
//	userdata             AL2023 / Bottlerocket / AL2 / Custom user data
//	batcher              the generic request batcher
//	sdk                  clients and the retry policy
//	iampolicy            the controller's IAM policies and an evaluator
//	interruption/...     EventBridge message parsing, SQS queue wrapper,
//	                     DescribeInstanceStatus scheduled events
//
// # A launch
//
//	NodeClaim --> EC2NodeClass (status, Ready) --> instance types (cached)
//	  --> a NodeClaim another process may have launched: looked up by its
//	      nodeclaim tag first, and adopted if found (idempotent.go)
//	  --> PlanLaunch: compatible types, capacity type, cheapest 60
//	  --> user data + launch template per image (reused by content hash)
//	  --> per zone the subnet with the most free addresses (subnets.go:
//	      last DescribeSubnets count less launches in flight and since)
//	  --> CreateFleet instant, capacity 1, tagged with the NodeClaim's name,
//	      client token from its UID and the request (batched with
//	      identical launches)
//	  --> InsufficientFreeAddressesInSubnet: again in the zone's next
//	      subnet; insufficient-capacity errors mark offerings unavailable
//	      (3 min)
//	  --> the instance as launched is remembered for drift checks
//	  --> NodeClaim with providerID, labels, capacity, allocatable, image,
//	      node class hash annotations
//
// Spot is used when the claim allows it and some available spot offering
// is cheaper than the cheapest available on-demand one; a claim that does
// not constrain the capacity type gets on-demand. When EC2 launches
// nothing and every failure was a capacity failure, Create returns
// *cloudprovider.InsufficientCapacityError; the caller retries and the
// next plan avoids what was marked.
//
// # Tags
//
// Fleets, instances, volumes and network interfaces carry
// kubernetes.io/cluster/<cluster>=owned, eks:eks-cluster-name,
// karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass and the class's
// tags; instances (and their volumes and interfaces) also get
// karpenter.sh/nodeclaim and Name in the same request. Get, List and
// Delete only ever touch instances with the cluster tag.
//
// # Calls
//
// Calls grow with launches, not with reconciles: a launch is one
// CreateFleet (plus one DescribeInstances, shared by concurrent lookups,
// for a NodeClaim another process may have launched); Get and Delete describe (batched); IsDrifted reads the
// instance as launched or last described, at most DriftMaxAge old, and
// refreshes stale records together (instance.Provider.Recent).
//
// # Time and credentials
//
// Time comes from Options.Clock. Credentials come from the aws.Config and
// are never logged (TestNoCredentialInLogs).
//
// See the package tests for end-to-end runs against pkg/awsemu and a real
// kube-apiserver, and BenchmarkLaunch for launch throughput.
package aws
