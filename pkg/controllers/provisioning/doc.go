// Package provisioning launches capacity for pods the kube-scheduler cannot
// place: it batches them, snapshots the cluster (pkg/snapshot), asks the
// engine for a plan (engine.Solve) and creates the NodeClaims the plan
// needs. The NodeClaim lifecycle controller launches them.
//
//	pod events ──▶ Batcher (idle 1 s / max 10 s, injected clock)
//	          ──▶ read: NodePools (Ready), EC2NodeClasses, Nodes + bound pods,
//	              NodeClaims (from the API server), pending pods + nominations,
//	              DaemonSets, PV/PVC/StorageClass, namespaces, unavailable offerings
//	          ──▶ snapshot.NewView (nominations, evacuated nodes, relocated pods)
//	          ──▶ snapshot.Build (instance types from CloudProvider.GetInstanceTypes)
//	          ──▶ engine.Solve
//	          ──▶ nominate pods placed on existing nodes / in-flight NodeClaims
//	              create NodeClaims (generateName "<nodepool>-"), nominate their pods
//	              FailedScheduling events; NodePool limit events
//
// # Vocabulary
//
//   - Provisionable pod: PodScheduled=False with reason Unschedulable, not
//     bound, not nominated by the scheduler, not being deleted, not a
//     DaemonSet pod (Provisionable).
//   - Nomination: the provisioner's in-memory note that a pod is planned
//     onto an in-flight NodeClaim (held while the NodeClaim launches) or an
//     existing node (held for NominationTTL). Nominated pods are given to
//     the next snapshot where they were planned, so they are not planned
//     twice, and their status updates do not trigger new passes. When the
//     NodeClaim's node is registered and can take pods, its nominations
//     move to the node (held for NominationTTL, and kept while the
//     scheduler has not tried the pod since) and, where another waiting
//     pod could take their room, are handed to the kube-scheduler as
//     status.nominatedNodeName (handoff). A hand-off the scheduler clears
//     is planned again at once. A Nominated event is recorded once per
//     pod and target.
//   - In flight: a NodeClaim with no Node yet. It counts as capacity in
//     every snapshot, with or without nominations.
//   - Replacement: capacity planned by Replace for the movable pods of
//     nodes about to go (interruption, rebalance), before any eviction.
//
// # Invariants
//
//   - Crash safety: nominations are lost on restart, in-flight NodeClaims
//     are not. A restarted provisioner plans the pending pods onto the
//     in-flight NodeClaims first (engine.Input.InFlight), so a restart does
//     not launch twice. NodeClaims are listed from the API server, not the
//     cache, so a NodeClaim created by the previous pass is never missed.
//   - A node that registered but whose NodeClaim is not initialized is
//     seen with the NodeClaim's labels and without the taints it will shed
//     (unregistered, not-ready, startup taints); otherwise the pods planned
//     onto it would look homeless the moment it registers.
//   - No runaway: a pod the engine cannot place gets one FailedScheduling
//     event per distinct reason code and no launch; a NodePool whose
//     limits stop a scale-up gets one event until they stop doing so.
//   - Only the leader provisions (NeedLeaderElection); one pass runs at a
//     time. Time comes from the injected clock only.
//   - Status churn (node heartbeats, NodePool counters, updates of pods
//     already nominated) never triggers a pass, so a busy cluster cannot
//     hold a batch window open; a pass also runs every ResyncPeriod.
//
// # Metrics
//
// karpenter_scheduler_scheduling_duration_seconds{controller},
// karpenter_scheduler_queue_depth{controller,scheduling_id} (only while a
// solve runs), karpenter_scheduler_unschedulable_pods_count{controller},
// dovetail_provisioning_pending_pods, dovetail_provisioning_nominated_pods,
// dovetail_provisioning_batches_total{outcome}. NodeClaims created here
// carry the creation reason "provisioning" (or "interruption" when they
// hold pods moved by Replace), which the lifecycle controller counts in
// karpenter_nodeclaims_created_total{reason}.
//
// See ExampleNewNodeClaim.
package provisioning
