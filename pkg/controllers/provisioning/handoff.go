package provisioning

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// handoffParallelism bounds concurrent pod status patches.
const handoffParallelism = 16

// handoff tells the kube-scheduler where the pods planned onto a NodeClaim
// go, once the NodeClaim's Node object exists but before it can take pods
// (it still carries the unregistered or not-ready taints). Each pod gets
// status.nominatedNodeName = the node. The scheduler (v1.37, KEP-5278)
// records such nominations: it tries a pod's nominated node first, and
// while filtering any node it counts the pods nominated there, so pods that
// were not planned for the node cannot take the room planned for others.
// Without it, the first nodes to become Ready absorb whichever pods the
// scheduler happens to pick, and the pods planned for them need a second
// launch.
//
// It runs twice per node: when the Node appears, and when the NodeClaim
// registers it (final): the scheduler clears a pod's nomination when it
// tries the pod and the node cannot take it yet, and registration is the
// last step before the node can. If the node can already take pods at
// registration, the scheduler is placing them right now and a nomination
// would come too late to help, so none is written. After the final
// hand-off the nominations point at the node instead of the NodeClaim and
// hold for NominationTTL, like a pod planned onto an existing node (the
// scheduler holds its own nomination too; a snapshot counts the pod on
// that node either way); once they expire, a pod still unbound is planned
// again.
func (p *Provisioner) handoff(ctx context.Context, node *corev1.Node, final bool) {
	if node.Spec.ProviderID == "" {
		return
	}
	nc, err := nodeclaimutil.NodeClaimForProviderID(ctx, p.kube, node.Spec.ProviderID)
	if err != nil || nc == nil {
		return
	}
	write := !final || blocked(node, nc)
	pods := p.mem.handOff(nc.Name, node.Name, final, write, p.clock.Now(), p.opts.NominationTTL)
	if len(pods) == 0 {
		return
	}
	if final {
		// Once the hand-offs expire, pods still unbound are planned again.
		p.after(ctx, p.opts.NominationTTL+time.Second, p.Trigger)
	}
	if !write {
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
	p.log.V(1).Info("handed pods to the scheduler", "nodeClaim", nc.Name, "node", node.Name, "pods", len(pods), "failed", failed, "firstError", firstErr, "final", final)
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
