// Package oracle checks the scheduling engine against the real
// kube-scheduler. TestOracle generates seeded workloads that mix every
// constraint the engine models (resources, including init containers,
// sidecars and ephemeral storage; daemonset overhead; kubelet maxPods; node
// selectors; required node affinity with In, NotIn, Gt and ORed terms;
// preferred node affinity; taints and tolerations
// with team NodePools, pod affinity and anti-affinity on zone and hostname,
// topology spread on zone, hostname and capacity type with DoNotSchedule
// and ScheduleAnyway, minDomains, nodeAffinityPolicy, host ports, zonal
// volumes, weighted spot/on-demand pools, arm64/amd64), plans each through
// pkg/snapshot and engine.Solve exactly as `dovetail simulate` does, then
// builds the plan on a real control plane (etcd, kube-apiserver,
// kube-scheduler, kwok) and requires the scheduler to bind every pod to
// the node the engine planned for it. Every generated workload is feasible
// by construction, so the engine may leave no pod unschedulable either.
//
//	Generate(seed) ─▶ snapshot.Build ─▶ engine.Solve ─▶ plan
//	plan ─▶ Nodes (labels, taints, capacity, allocatable of the launched
//	        offering) + PVs/PVCs + daemonset pods + pinned pods
//	     ─▶ kube-scheduler ─▶ every pod bound to its planned node?
//
// # Pinning a pod to its planned node without changing what the scheduler
// checks
//
// spec.nodeName would bypass the scheduler, so each pod is steered with a
// constraint the scheduler's filters evaluate like any other. Every real
// node carries the taint oracle.dovetail.sh/pin-<workload>=<node>:NoSchedule,
// which the engine never sees.
//
//   - A pod whose topology spread constraints honour node affinity (the
//     default nodeAffinityPolicy) gets one extra toleration for its planned
//     node's pin taint. Every other node is then filtered out by
//     TaintToleration, while the spread computation is untouched: with the
//     default nodeTaintsPolicy (Ignore) the scheduler counts domains and
//     matching pods on every node that matches the pod's node selector and
//     affinity, taints notwithstanding, which is exactly what it would do
//     without the pin. Pinning through node affinity instead would shrink
//     the spread domains to the one pinned node and make every spread
//     check vacuous.
//   - A pod whose spread constraints set nodeAffinityPolicy Ignore is
//     pinned with a nodeSelector on the node's own label
//     (oracle.dovetail.sh/node), which such constraints do not look at.
//     The generator gives these constraints nodeTaintsPolicy Honor and the
//     pod a toleration of any pin taint of its own workload, in the
//     engine's input as well: the scheduler then counts exactly the
//     workload's nodes whose other taints the pod tolerates, as the engine
//     does. A pod never mixes the two policies (one pin could not serve
//     both).
//   - Daemonset pods are created by the oracle, one per node the DaemonSet
//     selects (node selector, affinity, taints), pinned as the DaemonSet
//     controller pins them (required node affinity on metadata.name), and
//     bound before the workload's pods, so the scheduler sees the same
//     overhead the engine planned for.
//
// # Isolation
//
// One control plane serves all workloads, several at a time. Each workload
// has its own namespace (pod affinity, anti-affinity and spread count only
// pods of the pod's own namespace), its NodePools stamp the label
// oracle.dovetail.sh/workload on their nodes and every pod selects it
// (so spread constraints that honour node affinity count only the
// workload's nodes), and its pin taints keep other workloads' pods off its
// nodes and out of taint-honouring spread counts. A workload's nodes are
// deleted once its pods are bound.
//
// # Order
//
// The scheduler judges each pod against the pods bound before it, so the
// oracle submits pods in an order in which each is placeable when it comes
// (bindOrder: a greedy pass with a model of the spread and pod-affinity
// filters). The model only chooses the order; the scheduler still decides,
// so a model error can cause a false failure but never a false pass.
//
// # Limits
//
// Existing nodes (with running pods that spread and affinity count) and
// in-flight NodeClaims (one instance type, zone and capacity type each, so
// the node they become is known) are generated too; pods the engine puts
// there must bind there.
//
// Not generated: nodeTaintsPolicy Honor together with nodeAffinityPolicy
// Honor (the pin taint would then exclude every other node from the
// count), matchLabelKeys, namespaceSelector, NodePool limits, unbound
// WaitForFirstConsumer claims (no provisioner runs), and, with
// nodeAffinityPolicy Ignore, a capacity-type spread on a pod bound to one
// capacity type: the engine then counts the other capacity type as a
// domain (as Karpenter does), while kube-scheduler counts only the domains
// of nodes that exist, so the two legitimately disagree.
//
// Run it with `go test ./test/oracle/` (200 workloads);
// ORACLE_WORKLOADS=n and ORACLE_SEED=s pick other workloads, and
// ORACLE_DUMP=s with -run TestWorkloadYAMLRoundTrips -v prints workload s as
// manifests that `dovetail simulate -f` replays.
package oracle
