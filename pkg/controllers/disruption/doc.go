// Package disruption executes the pure disruption planner's decisions
// (package pkg/disruption) on the cluster: consolidation (Empty,
// Underutilized) and drift replacement, within the NodePools' budgets.
//
// # What runs when
//
// One loop (a leader-elected runnable). When the cluster view is in sync
// (the cache has synced and every NodeClaim with a node name has its Node)
// and no command is in progress, a pass builds the snapshot (package
// snapshot, as provisioning does), calls disruption.Compute and acts on the
// plan:
//
//   - Drifted commands start at once;
//   - Empty and Underutilized commands are held for the validation period
//     (Options.ValidationPeriod, 15 s, scaled like the liveness timeouts),
//     then the planner runs again and a command starts only if the new plan
//     has a command of the same reason over exactly the same nodes and, for
//     a delete, still no replacement; the new plan's command is executed.
//     An Empty command whose nodes are all still empty and eligible (and
//     within the budgets now) holds too, even if the new plan picked
//     another subset of the empty nodes.
//
// Commands start in plan order while their nodes fit what the pools'
// budgets allow at that moment (Plan.Allowed, less the commands already
// started in the pass). Starting a command: annotate the candidate
// NodeClaims with the command (CommandAnnotationKey, JSON), taint their
// Nodes karpenter.sh/disrupted:NoSchedule, set their DisruptionReason
// condition, and create the replacement NodeClaims (NewNodeClaim, the way
// provisioning builds them) under deterministic names and the
// CommandLabelKey label. Once every replacement is Initialized, the
// replacement Nodes are held (HoldTaintKey, PreferNoSchedule, so the
// kube-scheduler fills existing nodes' room first, as the plan did) and
// the candidate NodeClaims are deleted; the termination controllers drain
// them (PDBs and do-not-disrupt honoured) and the kube-scheduler moves the
// pods. The hold is lifted once no candidate of the command is left.
// An evicted pod comes back as a new pod of its owner (a ReplicaSet, a
// StatefulSet), which the kube-scheduler would put wherever it scores
// best, not necessarily where the plan put it. So the command also records
// its destinations on the annotation: per owner UID, how many of its pods
// go to which existing node or replacement. Each new, untried, unbound pod
// of such an owner is nominated (status.nominatedNodeName, a patch of only
// that field) to a destination with room left for its owner: at once from
// a pod event handler (nominator), and again by every pass. The scheduler
// tries a nominated node first and counts nominated pods as taking room
// there while it places others; provisioning's view (snapshot.NewView)
// counts them there too, so it launches nothing for them. A pod the
// scheduler already tried is left alone. The scheduler would usually get
// to a new pod first, so with Options.PlacementGate the controller
// installs (server-side apply, at start and every 5 minutes) the
// MutatingAdmissionPolicy PlacementName and its binding: on Pod CREATE it
// adds the scheduling gate GateName to unbound pods whose controller UID
// is an owner of a command in flight (the owners are written into the
// policy's expression when the command starts, and the candidates are
// deleted only gateSettle after that). The nominator writes a gated pod's
// nomination, then removes the gate (JSON patch); it removes every
// GateName gate it finds, nominated or not (no room left, no command, a
// restart), so a gate lasts one nominator round. Where the policy cannot
// be installed, nominations go on without the gate (logged). The pass
// logs how the new pods were first seen once no command is left.
// A replacement that disappears (the lifecycle deletes a NodeClaim that
// fails to launch or register) or a command older than Options.Timeout
// rolls the command back: the candidates are untainted and keep running,
// the replacements are deleted, and the candidates' DisruptionReason
// condition turns False with why. The loop passes every Options.Interval
// (10 s), every second while a command or a validation is in progress or
// a finished command's candidates are still being deleted, and at once
// after a command completes. While candidates are being deleted (they
// count against the budgets) a pass plans again only once one of them is
// gone, or after Interval.
//
// # Restart safety
//
// Everything a command needs to go on lives in the cluster: the annotation
// on the candidates (id, reason, start time, the replacement names, the
// savings, the destinations by owner), the label on the replacements, the
// taints, the pods' nominations and gates, the placement policy's owners
// (rewritten by every pass from the annotations; emptied when the leader
// stops cleanly). After a restart a
// command whose replacements all exist is driven to its end (or timeout);
// one whose replacements were not all created is rolled back (nothing is
// launched twice: replacement names are deterministic, and a command is
// never re-created from memory it lost). A node tainted
// karpenter.sh/disrupted whose NodeClaim carries no command and is not
// being deleted is untainted.
//
// # What users see
//
// Events with the peer's reasons: DisruptionLaunching, DisruptionWaitingReadiness,
// DisruptionTerminating (the planner's message in the note),
// DisruptionBlocked (a kept node blocked by do-not-disrupt, a PDB, a
// budget, a nomination, or a rolled back command) and Unconsolidatable (a
// node consolidation cannot remove or replace), each emitted when a node's
// kept code changes. Metrics: karpenter_voluntary_disruption_* ,
// karpenter_nodepools_allowed_disruptions, karpenter_nodeclaims_disrupted_total,
// dovetail_disruption_savings_dollars_per_hour_total and the fleet prices;
// the fleet's lower bound is computed in the background, only when the
// pods, pools or offerings changed, at most once per
// Options.LowerBoundInterval (see bound).
//
// # Must not
//
// Import other controllers or a cloud's packages (the NodeClaim factory is
// injected), or keep state the cluster cannot rebuild: the in-memory parts
// (the held validation, the last code per node for events, the nominations
// just written and the destinations of a command gone less than 30 s ago)
// only delay or repeat.
package disruption
