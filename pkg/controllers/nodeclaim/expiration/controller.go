package expiration

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// ReasonExpired is the event reason, and (lower case) the disruption
// metric's reason.
const ReasonExpired = "Expired"

// Controller deletes expired NodeClaims.
type Controller struct {
	kube     client.Client
	clock    clock.Clock
	recorder events.EventRecorder
	metrics  *metrics.Registry
}

// NewController returns the controller.
func NewController(kube client.Client, clk clock.Clock, recorder events.EventRecorder, m *metrics.Registry) *Controller {
	return &Controller{kube: kube, clock: clk, recorder: recorder, metrics: m}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.expiration" }

// Register adds the controller to the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&karpv1.NodeClaim{}).Complete(c)
}

// Reconcile deletes the NodeClaim when it has expired, or asks to run
// again when it will.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	after, ok := nc.Spec.ExpireAfter.Duration()
	if !ok { // Never (or unset on an object written before defaults)
		return reconcile.Result{}, nil
	}
	if left := nc.CreationTimestamp.Add(after).Sub(c.clock.Now()); left > 0 {
		return reconcile.Result{RequeueAfter: left}, nil
	}
	// Delete under a precondition on the UID: a NodeClaim recreated under
	// the same name is not this one.
	if err := c.kube.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonExpired, "Delete",
		"NodeClaim expired: created %s, expireAfter %s", nc.CreationTimestamp.UTC().Format(time.RFC3339), nc.Spec.ExpireAfter.String())
	c.metrics.NodeClaimsDisrupted.WithLabelValues("expired", nodeclaimutil.NodePool(nc), capacityType(nc)).Inc()
	return reconcile.Result{}, nil
}

// capacityType is the launched capacity type (label), or the one the
// NodeClaim asked for when it never launched.
func capacityType(nc *karpv1.NodeClaim) string {
	if ct := nc.Labels[karpv1.CapacityTypeLabelKey]; ct != "" {
		return ct
	}
	for _, r := range nc.Spec.Requirements {
		if r.Key == karpv1.CapacityTypeLabelKey && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			return r.Values[0]
		}
	}
	return ""
}
