package termination

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// InstancePollInterval is how often a terminating instance is checked.
const InstancePollInterval = 5 * time.Second

// Reasons (conditions and events).
const (
	ReasonInstanceTerminating = "InstanceTerminating"
	ReasonInstanceTerminated  = "InstanceTerminated"
	ReasonDeletingNode        = "DeletingNode"
)

// Controller finishes the deletion of NodeClaims: it stamps the
// termination deadline, deletes the NodeClaim's Nodes (whose own
// termination drains them), then deletes the instance and releases the
// finalizer once no Node is left.
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	clock    clock.Clock
	recorder events.EventRecorder
	metrics  *metrics.Registry
}

// NewController returns the controller.
func NewController(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder, m *metrics.Registry) *Controller {
	return &Controller{kube: kube, cloud: cloud, clock: clk, recorder: recorder, metrics: m}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.termination" }

// Register adds the controller to the manager; it watches NodeClaims and
// their Nodes (to notice when the last one is gone).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, nodeclaimutil.MapNodeToNodeClaim(mgr.GetClient())).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// Reconcile advances the deletion of one NodeClaim.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	if err := c.stampDeadline(ctx, nc); err != nil {
		return reconcile.Result{}, err
	}
	foreign, err := c.anotherClaims(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	var nodes []corev1.Node
	if !foreign {
		all, err := nodeclaimutil.NodesForProviderID(ctx, c.kube, nc.Status.ProviderID)
		if err != nil {
			return reconcile.Result{}, err
		}
		for i := range all {
			if !ownedByAnother(&all[i], nc) {
				nodes = append(nodes, all[i])
			}
		}
	}
	if len(nodes) > 0 {
		for i := range nodes {
			node := &nodes[i]
			if !node.DeletionTimestamp.IsZero() {
				continue
			}
			if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, fmt.Errorf("deleting node %s of nodeclaim %s: %w", node.Name, nc.Name, err)
			}
			c.recorder.Eventf(nc, node, corev1.EventTypeNormal, ReasonDeletingNode, "Delete", "Deleting node %s", node.Name)
		}
		return reconcile.Result{}, nil // the nodes' deletion brings us back
	}

	target := nc
	if foreign {
		// Terminate only what was launched for this claim (the provider
		// finds it by the claim's tag), never the instance its copied
		// providerID names.
		target = nc.DeepCopy()
		target.Status.ProviderID = ""
	}
	gone, err := c.terminateInstance(ctx, nc, target)
	if err != nil {
		return nodeclaimutil.RequeueOnConflict(err)
	}
	if !gone {
		return reconcile.Result{RequeueAfter: InstancePollInterval}, nil
	}
	base := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, karpv1.TerminationFinalizer)
	if err := nodeclaimutil.Patch(ctx, c.kube, nc, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	c.metrics.NodeClaimsTerminated.WithLabelValues(nodeclaimutil.NodePool(nc), nc.Labels[karpv1.CapacityTypeLabelKey], nc.Labels[corev1.LabelTopologyZone]).Inc()
	// How long the instance took to go, from the first termination call
	// (the condition's transition, kept in the cluster, so a restart in
	// between still measures from the first call). Never-launched
	// NodeClaims have no instance and no condition.
	if cond := nc.GetCondition(karpv1.ConditionTypeInstanceTerminating); cond != nil && nc.Status.ProviderID != "" {
		c.metrics.NodeClaimsInstanceTerminationDuration.WithLabelValues(nodeclaimutil.NodePool(nc)).
			Observe(max(0, c.clock.Since(cond.LastTransitionTime.Time).Seconds()))
	}
	return reconcile.Result{}, nil
}

// stampDeadline writes karpenter.sh/nodeclaim-termination-timestamp
// (deletion time + terminationGracePeriod) once, so that every component
// agrees on when the node must be gone.
func (c *Controller) stampDeadline(ctx context.Context, nc *karpv1.NodeClaim) error {
	if nc.Spec.TerminationGracePeriod == nil {
		return nil
	}
	if _, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		return nil
	}
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	deadline := nc.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration)
	nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey] = deadline.UTC().Format(time.RFC3339)
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("stamping the termination deadline of nodeclaim %s: %w", nc.Name, err)
	}
	return nil
}

// anotherClaims reports whether the NodeClaim's providerID is another
// claim's (a status copied from it, which the lifecycle's fence deletes):
// another NodeClaim carries it too, and the cloud says the instance was
// launched for a claim of another name. Such a claim's deletion leaves
// that instance and its node alone.
func (c *Controller) anotherClaims(ctx context.Context, nc *karpv1.NodeClaim) (bool, error) {
	pid := nc.Status.ProviderID
	if pid == "" {
		return false, nil
	}
	var list karpv1.NodeClaimList
	if err := c.kube.List(ctx, &list, client.MatchingFields{nodeclaimutil.IndexNodeClaimProviderID: pid}); err != nil {
		return false, fmt.Errorf("listing nodeclaims with providerID %s: %w", termtext.Escape(termtext.Clip(pid, 256)), err)
	}
	if !slices.ContainsFunc(list.Items, func(o karpv1.NodeClaim) bool { return o.UID != nc.UID }) {
		return false, nil
	}
	inst, err := c.cloud.Get(ctx, pid)
	if err != nil {
		if cloudprovider.IsNodeClaimNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("asking the cloud which NodeClaim instance %s belongs to: %w", termtext.Escape(termtext.Clip(pid, 256)), err)
	}
	return inst.Name != "" && inst.Name != nc.Name, nil
}

// ownedByAnother reports whether the node's owner references name another
// NodeClaim and not this one: registration linked it to that claim.
func ownedByAnother(node *corev1.Node, nc *karpv1.NodeClaim) bool {
	other := false
	for _, o := range node.OwnerReferences {
		if o.UID == nc.UID {
			return false
		}
		other = other || o.Kind == "NodeClaim"
	}
	return other
}

// terminateInstance deletes the instance until the cloud says it is gone,
// recording InstanceTerminating.
func (c *Controller) terminateInstance(ctx context.Context, nc, target *karpv1.NodeClaim) (bool, error) {
	err := c.cloud.Delete(ctx, target)
	gone := cloudprovider.IsNodeClaimNotFound(err)
	if err != nil && !gone {
		return false, fmt.Errorf("terminating the instance of nodeclaim %s: %w", nc.Name, err)
	}
	if !gone && target.Status.ProviderID != "" {
		_, gerr := c.cloud.Get(ctx, target.Status.ProviderID)
		gone = cloudprovider.IsNodeClaimNotFound(gerr)
	}
	if target.Status.ProviderID == "" {
		return true, nil // never launched; Delete found nothing to stop
	}
	reason := ReasonInstanceTerminating
	if gone {
		reason = ReasonInstanceTerminated
	}
	base := nc.DeepCopy()
	if nc.SetCondition(karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, reason, "", c.clock.Now()) {
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	}
	return gone, nil
}
