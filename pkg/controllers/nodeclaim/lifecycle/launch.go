package lifecycle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Event and condition reasons of the launch step.
const (
	ReasonLaunched             = "Launched"
	ReasonLaunchFailed         = "LaunchFailed"
	ReasonInsufficientCapacity = "InsufficientCapacity"
	ReasonNodeClassNotReady    = "NodeClassNotReady"
)

// launch creates the instance once. The result is persisted at once (labels
// and annotations, then status). The AWS provider's Create is idempotent
// per NodeClaim UID (a client token, and a lookup by tag for a NodeClaim
// another process may have launched), but a provider need not be, and
// every lost answer costs a lookup: so the answer is written first.
func (c *Controller) launch(ctx context.Context, st *state) (reconcile.Result, error) {
	nc := st.nc
	if nc.IsTrue(karpv1.ConditionTypeLaunched) {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	if nc.Status.ProviderID != "" {
		// Launched earlier; only the condition was lost.
		nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, ReasonLaunched, "", now)
		return reconcile.Result{}, nil
	}
	// The cache may lag behind our own writes: a reconcile queued by the
	// finalizer patch can run after this NodeClaim was deleted for lack
	// of capacity, or after a launch whose status the cache has not seen.
	// A launch costs an instance, so the API server has the last word.
	if stop, err := c.launchedOrGone(ctx, nc); stop || err != nil {
		return reconcile.Result{}, err
	}
	launched, err := c.cloud.Create(ctx, nc)
	if err != nil {
		return c.launchFailed(ctx, nc, err)
	}

	metaBase := nc.DeepCopy()
	if nc.Labels == nil {
		nc.Labels = map[string]string{}
	}
	for k, v := range launched.Labels {
		nc.Labels[k] = v
	}
	price, priced := c.price(ctx, nc, launched)
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	// What it was launched on, for cost and explain: the offering always,
	// the price when the cloud quoted one.
	nc.Annotations[karpv1.AnnotationOffering] = nodeclaimutil.FormatOffering(launched.Labels[corev1.LabelInstanceTypeStable],
		launched.Labels[corev1.LabelTopologyZone], launched.Labels[karpv1.CapacityTypeLabelKey])
	if priced {
		nc.Annotations[karpv1.AnnotationPricePerHour] = nodeclaimutil.FormatPrice(price)
	}
	// Label and annotation maps merge key by key: no lock needed, so a
	// concurrent writer cannot make us drop the launch.
	if err := c.kube.Patch(ctx, nc, client.MergeFrom(metaBase)); err != nil {
		return reconcile.Result{}, fmt.Errorf("recording the launch of %s: %w", launched.Status.ProviderID, err)
	}
	statusBase := nc.DeepCopy()
	nc.Status.ProviderID = launched.Status.ProviderID
	nc.Status.ImageID = launched.Status.ImageID
	nc.Status.Capacity = launched.Status.Capacity
	nc.Status.Allocatable = launched.Status.Allocatable
	nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, ReasonLaunched, "", now)
	if err := c.kube.Status().Patch(ctx, nc, client.MergeFrom(statusBase)); err != nil {
		return reconcile.Result{}, fmt.Errorf("recording the launch of %s: %w", launched.Status.ProviderID, err)
	}
	st.base = nc.DeepCopy()
	note := fmt.Sprintf("Launched %s (%s, %s) as %s", nc.Labels[corev1.LabelInstanceTypeStable],
		nc.Labels[karpv1.CapacityTypeLabelKey], nc.Labels[corev1.LabelTopologyZone], nc.Status.ProviderID)
	if priced {
		note += fmt.Sprintf(" at $%s/h", nodeclaimutil.FormatPrice(price))
	}
	c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonLaunched, "Launch", note)
	return reconcile.Result{}, nil
}

// launchedOrGone reads the NodeClaim from the API server (not the cache)
// and reports whether launching must not happen: it is gone, being
// deleted, or already has an instance. The pipeline then stops quietly
// (errDeleted); the watch event of the write the cache missed brings the
// NodeClaim back when there is more to do.
func (c *Controller) launchedOrGone(ctx context.Context, nc *karpv1.NodeClaim) (bool, error) {
	if c.live == nil {
		return false, nil
	}
	live := &karpv1.NodeClaim{}
	if err := c.live.Get(ctx, client.ObjectKeyFromObject(nc), live); err != nil {
		if apierrors.IsNotFound(err) {
			return true, errDeleted
		}
		return true, fmt.Errorf("reading the NodeClaim before launching: %w", err)
	}
	if live.UID != nc.UID || !live.DeletionTimestamp.IsZero() || live.Status.ProviderID != "" {
		return true, errDeleted
	}
	return false, nil
}

// launchFailed handles a Create error: insufficient capacity deletes the
// NodeClaim (provisioning re-plans with what remains); anything else sets
// Launched=False and returns the error for an exponential backoff.
func (c *Controller) launchFailed(ctx context.Context, nc *karpv1.NodeClaim, err error) (reconcile.Result, error) {
	now := c.clock.Now()
	var ice *cloudprovider.InsufficientCapacityError
	if errors.As(err, &ice) {
		c.unavailable.MarkUnavailable(ice.Offerings...)
		if err := deleteOnce(ctx, c.kube, nc); err != nil {
			return reconcile.Result{}, err
		}
		c.metrics.NodeClaimsInsufficientCapacity.WithLabelValues(nodeclaimutil.NodePool(nc)).Inc()
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, ReasonInsufficientCapacity, "Launch", "%s; deleting the NodeClaim so that provisioning re-plans", err)
		return reconcile.Result{}, errDeleted
	}
	reason := ReasonLaunchFailed
	var create *cloudprovider.CreateError
	switch {
	case cloudprovider.IsNodeClassNotReady(err):
		reason = ReasonNodeClassNotReady
	case errors.As(err, &create) && create.Reason != "":
		reason = create.Reason
	}
	if nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionFalse, reason, err.Error(), now) {
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, ReasonLaunchFailed, "Launch", "%s", err)
	}
	return reconcile.Result{}, fmt.Errorf("launching: %w", err)
}

// price looks up the hourly price of the launched offering among the
// instance types the cloud offers the NodeClaim's pool.
func (c *Controller) price(ctx context.Context, nc, launched *karpv1.NodeClaim) (float64, bool) {
	name := nodeclaimutil.NodePool(nc)
	if name == "" {
		return 0, false
	}
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		return 0, false
	}
	its, err := c.cloud.GetInstanceTypes(ctx, np)
	if err != nil {
		return 0, false
	}
	typ := launched.Labels[corev1.LabelInstanceTypeStable]
	zone := launched.Labels[corev1.LabelTopologyZone]
	ct := launched.Labels[karpv1.CapacityTypeLabelKey]
	for _, it := range its {
		if it.Name != typ {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.Price, true
			}
		}
	}
	return 0, false
}
