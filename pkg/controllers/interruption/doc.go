// Package interruption acts on the cloud's interruption queue: it receives
// provider-neutral events (cloudprovider.InterruptionQueue; on AWS the SQS
// queue named by INTERRUPTION_QUEUE, adapted by the provider's queue
// package), finds the NodeClaim of each affected instance, replaces its
// node, and deletes the event. It imports no cloud's package: a second
// provider implements cloudprovider.InterruptionQueue and nothing here
// changes.
//
//	queue ──Receive──▶ cloudprovider.InterruptionEvent
//	    spot interruption warning ─┐ mark the spot offering unavailable
//	    scheduled change           ├▶ Replace(node) ─▶ cordon + taint ─▶ delete NodeClaim
//	    state change: stopping,    │   (new capacity      (termination drains,
//	      stopped, shutting-down,  ┘    boots now)          honouring PDBs)
//	      terminated
//	    rebalance recommendation ─▶ NodePool annotated
//	                                dovetail.sh/rebalance-recommendation: Replace?
//	                                  yes: Replace(node), annotate the NodeClaim
//	                                       dovetail.sh/replaced-by; once every
//	                                       replacement is Initialized: cordon,
//	                                       taint, delete the NodeClaim
//	                                  no:  record an event only (the peer's behaviour)
//	    ──Delete──▶ queue
//
//	scheduled events (cloudprovider.ScheduledEvents; on AWS
//	DescribeInstanceStatus), polled every minute by the leader:
//	    retirement, stop, reboot of an owned instance ─▶ as a scheduled change
//	    (each event id once per process; the ids of the last poll are kept)
//
// # Why replace before draining
//
// The fastest way to get the pods Running again is to start the new node
// before the old one empties, so its boot overlaps the notice period and
// the drain. The Replacer (provisioning's ReplacementsFor) plans the node's movable pods
// as if they were pending, with the node excluded, and creates the
// NodeClaims at once; the pods stay reserved on that capacity, so no other
// pass gives it away. Only then is the node cordoned, tainted
// karpenter.sh/disrupted:NoSchedule and its NodeClaim deleted: the
// termination controller evicts through the Eviction API, so a
// PodDisruptionBudget holds the eviction until the replacement pods are
// Ready elsewhere. Waiting for provisioning to notice the evicted pods
// instead would add a batch window and a full boot to every interruption.
//
// A rebalance recommendation has no deadline, so for opted-in NodePools
// the old node is cordoned only after its replacements are initialized;
// that state lives in the dovetail.sh/replaced-by annotation, so a restart
// resumes it, and a replacement that fails before initializing is planned
// again.
//
// # Invariants
//
//   - A message is deleted only after it was handled; a failure leaves it
//     on the queue to be received again. Malformed messages, unknown kinds
//     and instances no NodeClaim owns are deleted without action.
//   - Only the leader polls (NeedLeaderElection). With no queue (nil) the
//     poller is off; the rebalance reconciler still runs.
//   - Time comes from the injected clock (backoff, queue-duration metric).
//
// # Metrics
//
// karpenter_interruption_received_messages_total{message_type} (the
// peer's values: spot_interrupted, rebalance_recommendation,
// scheduled_change, instance_stopped, instance_terminated; plus unknown
// and malformed), karpenter_interruption_deleted_messages_total,
// karpenter_interruption_message_queue_duration_seconds (event time to
// deletion), dovetail_interruption_actions_total{action}.
//
// See ExampleMessageType.
package interruption
