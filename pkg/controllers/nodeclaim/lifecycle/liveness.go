package lifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Reasons and metric phases of the liveness step.
const (
	ReasonLaunchTimeout       = "LaunchTimeout"
	ReasonRegistrationTimeout = "RegistrationTimeout"
	PhaseLaunch               = "launch"
	PhaseRegistration         = "registration"
)

// liveness deletes a NodeClaim that has not launched within LaunchTimeout
// of its creation, or whose node has not registered within
// RegistrationTimeout of its launch; otherwise it asks to be called again
// at the deadline.
func (c *Controller) liveness(ctx context.Context, st *state) (reconcile.Result, error) {
	nc := st.nc
	if nc.IsTrue(karpv1.ConditionTypeRegistered) {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	var deadline time.Time
	var reason, phase string
	var timeout time.Duration
	if launched := nc.GetCondition(karpv1.ConditionTypeLaunched); launched != nil && launched.Status == "True" {
		timeout, reason, phase = c.opts.RegistrationTimeout, ReasonRegistrationTimeout, PhaseRegistration
		deadline = launched.LastTransitionTime.Add(timeout)
	} else {
		timeout, reason, phase = c.opts.LaunchTimeout, ReasonLaunchTimeout, PhaseLaunch
		deadline = nc.CreationTimestamp.Add(timeout)
	}
	if now.Before(deadline) {
		return reconcile.Result{RequeueAfter: deadline.Sub(now)}, nil
	}
	if err := deleteOnce(ctx, c.kube, nc); err != nil {
		return reconcile.Result{}, err
	}
	c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, reason, "Delete",
		"No %s within %s; deleting the NodeClaim", phase, timeout)
	c.metrics.NodeClaimsLivenessTimeouts.WithLabelValues(nodeclaimutil.NodePool(nc), phase).Inc()
	return reconcile.Result{}, errDeleted
}

// deleteOnce deletes the NodeClaim as read: if another reconcile deleted
// (or changed) it first, the precondition fails and deleteOnce returns
// errDeleted without counting or reporting twice.
func deleteOnce(ctx context.Context, kube client.Client, nc *karpv1.NodeClaim) error {
	uid, rv := nc.UID, nc.ResourceVersion
	err := kube.Delete(ctx, nc, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return errDeleted
	}
	return err
}
