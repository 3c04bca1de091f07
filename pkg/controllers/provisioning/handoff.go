package provisioning

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// handoffParallelism bounds concurrent pod status patches.
const handoffParallelism = 16

// handoffHold is how long a hand-off the scheduler has not acted on yet
// (the pod unbound, its nomination still set) holds the pod's room on the
// node. A loaded scheduler can take that long to reach every pod of a
// burst; planning such a pod again would launch a node for a pod that
// already has one.
const handoffHold = 2 * time.Minute

// handoff tells the kube-scheduler where the pods planned onto a NodeClaim
// go, once its node is registered: each pod gets status.nominatedNodeName
// = the node. The scheduler (v1.37, KEP-5278) tries a pod's nominated node
// first, and while filtering any node it counts the pods nominated there,
// so pods that were not planned for the node cannot take the room planned
// for others. Without it, the first nodes to become Ready absorb whichever
// pods the scheduler happens to pick, and the pods planned for them need a
// second launch.
//
// One write per pod, when the node is registered and can take pods (no
// taint it will shed, not cordoned), and only where it can help:
//
//   - not earlier (when the Node object appears, or while it is still
//     tainted): a nomination to a node that cannot take pods yet makes
//     every scheduling cycle of every pending pod also filter the
//     nominated pods on that node, and the scheduler clears it as soon as
//     it tries the pod there, which a node event soon makes it do;
//   - only for a pod whose room a pod of another kind could take: an
//     unbound pod not planned there that tolerates the node's taints and
//     whose node selector and affinity match it (otherKinds), of another
//     controller than the pod (kindOf). If only pods of the pod's own kind
//     could take its room, the one that does leaves its own planned room,
//     which fits this pod, in exchange; if none can, the scheduler cannot
//     put anything else there. Either way a nomination would only cost a
//     write and the scheduler's time: every nominated pod makes each
//     scheduling cycle of every pending pod costlier on that node, and a
//     loaded scheduler then takes a minute to cycle through a burst.
//
// After the hand-off the nominations point at the node instead of the
// NodeClaim (see memory.handOff). The scheduler clears a pod's nomination
// when it tries the pod and the node cannot take it: then the pod is
// planned again at once (memory.refused). While the nomination stays, the
// scheduler has not tried the pod yet, and the room stays held for it (up
// to handoffHold; see heldHandoffs), rather than a second node launched
// for a pod that is merely waiting its turn.
func (p *Provisioner) handoff(ctx context.Context, node *corev1.Node) {
	if node.Spec.ProviderID == "" {
		return
	}
	nc, err := nodeclaimutil.NodeClaimForProviderID(ctx, p.kube, node.Spec.ProviderID)
	if err != nil || nc == nil || blocked(node, nc) {
		return // a later update of the node (a taint gone) hands off
	}
	refs := p.mem.plannedRefs(nc.Name, node.Name)
	if len(refs) == 0 {
		return
	}
	planned := make(map[types.UID]bool, len(refs))
	for uid := range refs {
		planned[uid] = true
	}
	write, verdicts := map[types.UID]bool{}, map[types.UID]string{}
	switch {
	case p.kinds != nil && p.podStore != nil:
		// The planned pods by key, and the other kinds from their counts:
		// in proportion to the node's pods and the kinds, not to the
		// cluster's pods.
		pods := make([]*corev1.Pod, 0, len(refs))
		for uid, ref := range refs {
			obj, ok, err := p.podStore.GetByKey(ref.Namespace + "/" + ref.Name)
			if pod, isPod := obj.(*corev1.Pod); err == nil && ok && isPod && pod.UID == uid {
				pods = append(pods, pod)
			}
		}
		write, verdicts = decide(pods, p.kinds.others(pods, snapshot.NodeView(node, nc, false)))
	default:
		if all, err := p.listPods(ctx); err != nil {
			for uid := range planned {
				write[uid] = true // unknown: hand every pod off
			}
		} else {
			write, verdicts = toHandOff(all, node, nc, planned)
		}
	}
	moved, pods := p.mem.handOff(nc.Name, node.Name, write, verdicts, p.clock.Now(), p.opts.NominationTTL)
	if moved == 0 {
		return
	}
	// Once the hand-offs expire, pods still unbound are planned again.
	p.after(ctx, p.opts.NominationTTL+time.Second, p.Trigger)
	if len(pods) == 0 {
		p.log.V(1).Info("no pod of another kind can use the node: no hand-off", "nodeClaim", nc.Name, "node", node.Name, "pods", moved)
		return
	}
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"status":{"nominatedNodeName":%q}}`, node.Name)))
	failed := 0
	var firstErr error
	for _, ref := range pods {
		pod := &corev1.Pod{}
		pod.Namespace, pod.Name = ref.Namespace, ref.Name
		err := p.kube.Status().Patch(ctx, pod, patch)
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			// Invalid: the scheduler bound the pod meanwhile (a bound pod
			// takes no nomination); nothing left to hand over.
			continue
		}
		failed++
		if firstErr == nil {
			firstErr = err
		}
	}
	p.log.V(1).Info("handed pods to the scheduler", "nodeClaim", nc.Name, "node", node.Name, "pods", len(pods), "failed", failed, "firstError", firstErr)
}

// toHandOff decides which of the pods planned onto the node get a
// nomination: those a pod of another kind could displace (see handoff),
// and returns the scheduler's last verdict on each planned pod.
func toHandOff(all []*corev1.Pod, node *corev1.Node, nc *karpv1.NodeClaim, planned map[types.UID]bool) (write map[types.UID]bool, verdicts map[types.UID]string) {
	var mine []*corev1.Pod
	for _, pod := range all {
		if planned[pod.UID] {
			mine = append(mine, pod)
		}
	}
	return decide(mine, otherKinds(all, node, nc, planned))
}

// decide picks, of the pods planned onto a node, those to hand off, given
// the other kinds that could take the node's room (otherKinds), and
// returns the scheduler's last verdict on each.
func decide(plannedPods []*corev1.Pod, kinds map[string]bool) (write map[types.UID]bool, verdicts map[types.UID]string) {
	write, verdicts = map[types.UID]bool{}, make(map[types.UID]string, len(plannedPods))
	for _, pod := range plannedPods {
		verdicts[pod.UID] = schedulerVerdict(pod)
		// Only a pod of another kind can take this one's room at a cost:
		// one of the same kind taking it leaves its own planned room, which
		// fits this one, in exchange.
		if len(kinds) > 1 || len(kinds) == 1 && !kinds[kindOf(pod)] {
			write[pod.UID] = true
		}
	}
	return write, verdicts
}

// otherKinds are the kinds (kindOf) of the unbound pods not planned onto
// the node that the scheduler could place there: they tolerate the node's
// taints (those it keeps once initialized) and their node selector and
// required node affinity match its labels (with the NodeClaim's).
// Resources are not compared: a smaller pod fits wherever a planned one
// would.
func otherKinds(pods []*corev1.Pod, node *corev1.Node, nc *karpv1.NodeClaim, planned map[types.UID]bool) map[string]bool {
	view := snapshot.NodeView(node, nc, false)
	kinds := map[string]bool{}
	checked := map[string]bool{} // one pod per kind: they share their spec
	for _, pod := range pods {
		// The field checks first: at fleet size most pods are bound, and
		// this runs over every pod for every node that registers.
		if pod.Spec.NodeName != "" || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || planned[pod.UID] {
			continue
		}
		k := kindOf(pod)
		if checked[k] {
			continue
		}
		checked[k] = true
		if mayRunOn(pod, view) {
			kinds[k] = true
		}
	}
	return kinds
}

// kindOf names the pods that schedule alike: those of one controller (a
// ReplicaSet's pods share their spec); a pod without one is its own kind.
func kindOf(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		return string(ref.UID)
	}
	return "pod/" + string(pod.UID)
}

// mayRunOn: the pod tolerates the node's NoSchedule and NoExecute taints,
// and its node selector and required node affinity match the node.
func mayRunOn(pod *corev1.Pod, node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), &t, false) }) {
			return false
		}
	}
	ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)
	return err != nil || ok
}

// blocked reports whether the node cannot take pods yet: it is cordoned or
// still carries a taint it will shed (unregistered, not-ready, a startup
// taint of its NodeClaim).
func blocked(node *corev1.Node, nc *karpv1.NodeClaim) bool {
	if node.Spec.Unschedulable {
		return true
	}
	for _, t := range node.Spec.Taints {
		if snapshot.IsTransientTaint(t.Key) {
			return true
		}
		if slices.ContainsFunc(nc.Spec.StartupTaints, func(s corev1.Taint) bool { return s.MatchTaint(&t) }) {
			return true
		}
	}
	return false
}
