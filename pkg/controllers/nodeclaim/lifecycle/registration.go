package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Reasons of the registration step.
const (
	ReasonRegistered     = "Registered"
	ReasonNodeNotFound   = "NodeNotFound"
	ReasonDuplicateNodes = "DuplicateNodes"
)

// unregisteredHold is what karpenter.sh/unregistered:NoExecute becomes at
// registration: a NoSchedule taint of the same key, lifted in a later
// reconcile (see holdLeft).
var unregisteredHold = corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoSchedule}

// register waits for the Node with the NodeClaim's providerID and makes it
// dovetail's: labels, annotations and taints from the NodeClaim (once, at
// registration, so that startup taints removed later are not put back),
// the termination finalizer, an owner reference to the NodeClaim, the
// registered label, and the unregistered taint turned from NoExecute into
// NoSchedule; a later reconcile lifts that too (syncNode, holdLeft).
func (c *Controller) register(ctx context.Context, st *state) (reconcile.Result, error) {
	nc := st.nc
	if !nc.IsTrue(karpv1.ConditionTypeLaunched) {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	nodes, err := nodeclaimutil.NodesForProviderID(ctx, c.kube, nc.Status.ProviderID)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch {
	case len(nodes) == 0:
		if !nc.IsTrue(karpv1.ConditionTypeRegistered) {
			nc.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonNodeNotFound,
				"no node with providerID "+nc.Status.ProviderID+" yet", now)
		}
		return reconcile.Result{}, nil
	case len(nodes) > 1:
		msg := fmt.Sprintf("%d nodes share providerID %s (%s, %s, ...)", len(nodes), nc.Status.ProviderID, nodes[0].Name, nodes[1].Name)
		if nc.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionUnknown, ReasonDuplicateNodes, msg, now) {
			c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, ReasonDuplicateNodes, "Register", msg)
		}
		return reconcile.Result{}, nil
	}
	node := &nodes[0]
	if !node.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	wait, err := c.syncNode(ctx, nc, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	nc.Status.NodeName = node.Name
	if nc.SetCondition(karpv1.ConditionTypeRegistered, metav1.ConditionTrue, ReasonRegistered, "", now) {
		pool, zone, ncCopy, nodeCopy := nodeclaimutil.NodePool(nc), node.Labels[corev1.LabelTopologyZone], nc.DeepCopy(), node.DeepCopy()
		st.onCommit = append(st.onCommit, func() {
			c.metrics.NodeClaimsRegistered.WithLabelValues(pool).Inc()
			c.metrics.NodesCreated.WithLabelValues(pool, zone).Inc()
			c.recorder.Eventf(ncCopy, nodeCopy, corev1.EventTypeNormal, ReasonRegistered, "Register", "Node %s registered", nodeCopy.Name)
		})
	}
	return reconcile.Result{RequeueAfter: wait}, nil
}

// holdLeft is how much of Options.RegistrationHold is left for a node
// whose unregistered taint is already NoSchedule: the hold counts from the
// Registered condition's transition to True (from this reconcile's write
// when it is not True yet).
//
// Why the hold: kube-controller-manager's taint-eviction controller keeps
// each node's NoExecute taints from its Node watch and checks each pod
// bound to a node against them as its Pod watch reports the binding. When
// the NoExecute taint is the last thing keeping pods off a Ready node,
// kube-scheduler binds pods within milliseconds of its removal, and a
// binding that reaches the taint-eviction controller before the taint's
// removal does gets the pod deleted at once (DeletionByTaintManager). A node
// whose agent is Ready before dovetail registers it (a slow or restarting
// controller, a fast-booting image, kwok) is exposed to that. With the
// swap, no NoExecute taint is left when scheduling opens: pods are kept
// off by the NoSchedule taint until the hold has passed.
func (c *Controller) holdLeft(nc *karpv1.NodeClaim) time.Duration {
	cond := nc.GetCondition(karpv1.ConditionTypeRegistered)
	if cond == nil || cond.Status != metav1.ConditionTrue {
		return c.opts.RegistrationHold
	}
	return cond.LastTransitionTime.Add(c.opts.RegistrationHold).Sub(c.clock.Now())
}

// syncNode writes what registration puts on the node, in one patch. The
// unregistered taint goes in two reconciles: NoExecute becomes NoSchedule,
// and a later reconcile (so the manager's cache has shown the swap) lifts
// the NoSchedule taint once the hold has passed. It returns how long to
// wait before looking again, or 0.
func (c *Controller) syncNode(ctx context.Context, nc *karpv1.NodeClaim, node *corev1.Node) (wait time.Duration, err error) {
	base := node.DeepCopy()
	if node.Labels[karpv1.NodeRegisteredLabelKey] != "true" {
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		for k, v := range nc.Labels {
			node.Labels[k] = v
		}
		if len(nc.Annotations) > 0 && node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		for k, v := range nc.Annotations {
			node.Annotations[k] = v
		}
		for _, t := range append(append([]corev1.Taint(nil), nc.Spec.Taints...), nc.Spec.StartupTaints...) {
			if !hasTaint(node.Spec.Taints, t) {
				node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
			}
		}
		node.Labels[karpv1.NodeRegisteredLabelKey] = "true"
	}
	switch {
	case hasTaint(node.Spec.Taints, karpv1.UnregisteredNoExecuteTaint):
		node.Spec.Taints = withoutTaint(node.Spec.Taints, karpv1.UnregisteredNoExecuteTaint)
		if !hasTaint(node.Spec.Taints, unregisteredHold) {
			node.Spec.Taints = append(node.Spec.Taints, unregisteredHold)
		}
		wait = c.opts.RegistrationHold
	case hasTaint(node.Spec.Taints, unregisteredHold):
		if wait = c.holdLeft(nc); wait <= 0 {
			node.Spec.Taints = withoutTaint(node.Spec.Taints, unregisteredHold)
			wait = 0
		}
	}
	controllerutil.AddFinalizer(node, karpv1.TerminationFinalizer)
	// The owner reference as the peer writes it (blockOwnerDeletion true;
	// nodes registered by earlier versions carried false and are corrected).
	if i := ownerIndex(node, nc); i < 0 {
		node.OwnerReferences = append(node.OwnerReferences, metav1.OwnerReference{
			APIVersion: karpv1.GroupVersion.String(), Kind: "NodeClaim", Name: nc.Name, UID: nc.UID,
			BlockOwnerDeletion: ptr.To(true),
		})
	} else if b := node.OwnerReferences[i].BlockOwnerDeletion; b == nil || !*b {
		node.OwnerReferences = slices.Clone(node.OwnerReferences)
		node.OwnerReferences[i].BlockOwnerDeletion = ptr.To(true)
	}
	if equality.Semantic.DeepEqual(base, node) {
		return wait, nil
	}
	if err := nodeclaimutil.Patch(ctx, c.kube, node, base); err != nil {
		return 0, fmt.Errorf("registering node %s: %w", node.Name, err)
	}
	return wait, nil
}

func ownerIndex(node *corev1.Node, nc *karpv1.NodeClaim) int {
	return slices.IndexFunc(node.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == nc.UID })
}

// hasTaint matches by key and effect, as the API server does.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for _, x := range taints {
		if x.Key == t.Key && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

func withoutTaint(taints []corev1.Taint, t corev1.Taint) []corev1.Taint {
	if !hasTaint(taints, t) {
		return taints
	}
	out := make([]corev1.Taint, 0, len(taints))
	for _, x := range taints {
		if x.Key != t.Key || x.Effect != t.Effect {
			out = append(out, x)
		}
	}
	return out
}
