package lifecycle

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Reasons of the initialization step.
const (
	ReasonInitialized           = "Initialized"
	ReasonNodeNotReady          = "NodeNotReady"
	ReasonStartupTaintsExist    = "StartupTaintsExist"
	ReasonResourceNotRegistered = "ResourceNotRegistered"
)

// ephemeralTaints are put on nodes by Kubernetes itself while they come up;
// a node is not initialized while it has one.
var ephemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
	{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: corev1.TaintEffectNoSchedule},
}

// initialize marks the NodeClaim Initialized once its node is Ready, has
// shed its startup and ephemeral taints, and reports every requested
// resource with a positive allocatable quantity; the node then gets the
// initialized label.
func (c *Controller) initialize(ctx context.Context, st *state) (reconcile.Result, error) {
	nc := st.nc
	if !nc.IsTrue(karpv1.ConditionTypeRegistered) || nc.IsTrue(karpv1.ConditionTypeInitialized) {
		return reconcile.Result{}, nil
	}
	nodes, err := nodeclaimutil.NodesForProviderID(ctx, c.kube, nc.Status.ProviderID)
	if err != nil || len(nodes) != 1 {
		return reconcile.Result{}, err
	}
	node := &nodes[0]
	now := c.clock.Now()
	if reason, msg := notInitialized(nc, node); reason != "" {
		nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionUnknown, reason, msg, now)
		return reconcile.Result{}, nil
	}
	if node.Labels[karpv1.NodeInitializedLabelKey] != "true" {
		base := node.DeepCopy()
		node.Labels[karpv1.NodeInitializedLabelKey] = "true"
		if err := c.kube.Patch(ctx, node, client.MergeFrom(base)); err != nil {
			return reconcile.Result{}, fmt.Errorf("labelling node %s initialized: %w", node.Name, err)
		}
	}
	nc.SetCondition(karpv1.ConditionTypeInitialized, metav1.ConditionTrue, ReasonInitialized, "", now)
	return reconcile.Result{}, nil
}

// notInitialized returns why the node is not initialized yet, or "".
func notInitialized(nc *karpv1.NodeClaim, node *corev1.Node) (reason, message string) {
	ready := false
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
		}
	}
	if !ready {
		return ReasonNodeNotReady, "node " + node.Name + " is not Ready"
	}
	var present []string
	for _, t := range append(append([]corev1.Taint(nil), nc.Spec.StartupTaints...), ephemeralTaints...) {
		if hasTaint(node.Spec.Taints, t) {
			present = append(present, t.Key+":"+string(t.Effect))
		}
	}
	for _, t := range []corev1.Taint{karpv1.UnregisteredNoExecuteTaint, unregisteredHold} {
		if hasTaint(node.Spec.Taints, t) {
			present = append(present, t.Key+":"+string(t.Effect))
		}
	}
	if len(present) > 0 {
		return ReasonStartupTaintsExist, "node " + node.Name + " still has taints " + strings.Join(present, ", ")
	}
	var missing []string
	for name := range nc.Spec.Resources.Requests {
		if q, ok := node.Status.Allocatable[name]; !ok || q.Sign() <= 0 {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return ReasonResourceNotRegistered, "node " + node.Name + " does not report requested resources " + strings.Join(missing, ", ")
	}
	return "", ""
}
