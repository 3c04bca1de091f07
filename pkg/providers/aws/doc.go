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
//	  --> CreateFleet instant, batched: the NodeClaims whose requests
//	      differ only in their own parts (name, client token) share one
//	      fleet of TotalTargetCapacity N, then one CreateTags per instance
//	      puts its NodeClaim's name on it (see "Batched launches")
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
// # Batched launches
//
// The launches of one decision (NodeClaims of a pool and class created
// together, with the same launch templates, overrides, capacity type and
// context) go out as one instant CreateFleet for as many instances: the
// batch key (instance.LaunchRequest without ClaimTags and ClientToken)
// leaves out what differs per NodeClaim. The fleet's tags are common to
// the batch; each instance then gets its NodeClaim's karpenter.sh/nodeclaim
// and Name tags by one CreateTags (EC2 tags many resources in one call only
// with the same tags). Each NodeClaim gets one instance, or, when EC2
// launched fewer than asked, the fleet's errors: insufficient capacity
// marks the offerings unavailable and fails the NodeClaim with
// *cloudprovider.InsufficientCapacityError naming them, as for a single
// launch.
//
// Idempotency and leaks, the window between the fleet and the tagging:
//
//   - The fleet's client token is the caller's token alone, or a digest of
//     its callers' sorted tokens (each from its NodeClaim's UID and
//     request, idempotent.go), and instances go to callers in token order:
//     a repeat of the same batch (an SDK retry, another leader with the
//     same NodeClaims) gets EC2's first answer and each NodeClaim the same
//     instance; nothing launches twice.
//   - Every instance carries, from launch, the cluster's tags,
//     dovetail.sh/launch (a digest of capacity type, context and launch
//     template names: what the node boots as) and dovetail.sh/launch-batch
//     (the fleet's token).
//   - A NodeClaim whose tagging failed or whose fleet's answer was lost
//     (not an EC2 error), and one another process may have launched
//     (idempotent.go), is looked up before launching: first by its
//     nodeclaim tag, then, with nothing found, among the instances of its
//     dovetail.sh/launch that carry no nodeclaim tag, launched after it was
//     created, of a type, zone and capacity type its request allows, whose
//     batch this process does not have in flight. The first is tagged with
//     its name and adopted (one NodeClaim per instance in a process;
//     across processes only the leader launches). So a crash between
//     CreateFleet and CreateTags costs no second launch.
//   - Whatever is never adopted (a retried request whose templates changed,
//     a NodeClaim deleted meanwhile) is still listed by List: it carries
//     the cluster tag and karpenter.sh/nodepool, with no name, so garbage
//     collection terminates it after its grace period like any instance no
//     NodeClaim claims.
//
// # Tags
//
// Fleets, instances, volumes and network interfaces carry
// kubernetes.io/cluster/<cluster>=owned, eks:eks-cluster-name,
// karpenter.sh/nodepool, karpenter.k8s.aws/ec2nodeclass, the class's
// tags, dovetail.sh/launch and dovetail.sh/launch-batch; instances also get
// karpenter.sh/nodeclaim and Name by CreateTags right after the fleet
// (their volumes and interfaces do not). Get, List and Delete only ever
// touch instances with the cluster tag.
//
// # Calls
//
// Calls grow with launches, not with reconciles: a batch of launches is
// one CreateFleet and one CreateTags per instance (plus, for NodeClaims
// another process may have launched, one DescribeInstances by nodeclaim
// tag and one for untagged instances, each shared by concurrent lookups);
// Get and Delete describe (batched); IsDrifted reads the
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
