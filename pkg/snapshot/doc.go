// Package snapshot converts Kubernetes and dovetail API objects into the
// scheduling engine's input (engine.Input). It is pure: no client, no clock,
// no randomness; the same objects always give the same input. `dovetail
// simulate` feeds it objects read from manifest files; the provisioning
// controller feeds it objects from its informer caches, through NewView.
//
//	NodePool + EC2NodeClass ──InstanceTypeSource──▶ (NodeOverlays, pkg/overlay) ──▶ engine.NodePool
//	Nodes, NodeClaims, Pods  ──────────────────────▶ existing / in-flight / pending
//	PVC + PV / StorageClass  ──────────────────────▶ volume zones
//
// # Vocabulary
//
//   - Instance type source: where a NodePool's instance types come from
//     (InstanceTypeSource). CatalogSource reads the built-in catalog and
//     computes allocatable from the EC2NodeClass (kubelet settings, AMI
//     family, ephemeral volume); the controller plugs in the AWS provider.
//   - In flight: a NodeClaim whose Node is not in the snapshot yet; pods
//     nominated to it (status.nominatedNodeName) ride along.
//   - Usage: what a NodePool already has (node and in-flight capacity, and
//     "nodes"), for its limits.
//   - View: the cluster as provisioning and disruption both read it
//     (NewView): nominations and their expiry, nodes being evacuated or
//     leaving (tainted karpenter.sh/disrupted:NoSchedule, so they take no
//     new pods), pods relocated to where they were planned, initializing
//     nodes without their transient taints. It takes what a reader
//     remembers between passes as input and returns what to forget.
//   - Destinations: where a disruption command planned the pods it evicts,
//     by the owner that recreates them (Destinations, OwnerOf);
//     Nominations says which new pods of those owners to nominate where.
//   - Buffers: the CapacityBuffers whose status is resolved, with the
//     PodTemplates they name, become engine.Buffers (Buffers, BufferCount:
//     the count from a buffer's spec; ResolveBuffer: a spec resolved
//     against the objects it names, shared by the capacity buffer
//     controller and simulate).
//   - Unsupported: a pool the engine must not plan nodes for yet (Windows
//     node classes, reserved-only capacity); its pods get the reason.
//
// # Invariants
//
// Build never modifies its input; the engine.Input shares pointers into it.
// Every NodePool must reference an EC2NodeClass present in the snapshot, or
// Build fails with a *NodeClassNotFoundError naming both. Errors about one
// object are *InvalidObjectError values with field paths rooted at that
// object; the tools call LeaveOutBroken first, which leaves such objects
// out with a notice, as the controllers do. A node's NodeClaim (for its
// price) is NodeClaimsByNode's: by providerID first, never a claim whose
// status contradicts the node's. See ExampleBuild.
package snapshot
