package garbagecollection

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// Defaults.
const (
	DefaultInterval    = time.Minute
	DefaultGracePeriod = 30 * time.Second
)

// Event reasons and metric kinds.
const (
	ReasonInstanceGone = "InstanceGone"
	ReasonNoNodeClaim  = "NoNodeClaim"
	KindInstance       = "instance"
	KindNodeClaim      = "nodeclaim"
	KindNode           = "node"
)

// Options tunes the sweep.
type Options struct {
	// Interval between sweeps; zero means DefaultInterval.
	Interval time.Duration
	// GracePeriod: an instance (from its launch) or a node (from its
	// creation) without a NodeClaim is left alone this long, so that a
	// launch whose NodeClaim is still being written is not mistaken for a
	// leak. Zero means DefaultGracePeriod.
	GracePeriod time.Duration
	// Live reads around the cache. Before the sweep terminates an instance
	// or deletes a node, it confirms there that no NodeClaim claims it: a
	// cache that lags behind a loaded API server (a NodeClaim created, or
	// its providerID written, since the cache last heard) must never cost
	// a live instance. Nil means the manager's API reader once registered
	// (the client itself when the sweep is driven by hand).
	Live client.Reader
}

// Controller sweeps for leaks between the cloud and the cluster.
type Controller struct {
	kube     client.Client
	live     client.Reader
	cloud    cloudprovider.CloudProvider
	clock    clock.Clock
	recorder events.EventRecorder
	metrics  *metrics.Registry
	opts     Options
}

// NewController returns the controller.
func NewController(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder, m *metrics.Registry, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	live := opts.Live
	if live == nil {
		live = kube
	}
	return &Controller{kube: kube, live: live, cloud: cloud, clock: clk, recorder: recorder, metrics: m, opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.garbagecollection" }

// Register adds the sweep to the manager as a singleton.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	if c.opts.Live == nil {
		c.live = mgr.GetAPIReader()
	}
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(c)
}

// Reconcile runs one sweep and asks for the next one after Interval, or
// sooner when something will leave its grace period before that.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var ncs karpv1.NodeClaimList
	// Read only (a Delete does not write into its object): the cache's
	// own objects, not a copy of every NodeClaim per sweep.
	if err := c.kube.List(ctx, &ncs, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	byProviderID := map[string]*karpv1.NodeClaim{}
	byName := map[string]*karpv1.NodeClaim{}
	for i := range ncs.Items {
		nc := &ncs.Items[i]
		byName[nc.Name] = nc
		if nc.Status.ProviderID != "" {
			byProviderID[nc.Status.ProviderID] = nc
		}
	}
	instances, err := c.cloud.List(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("listing instances: %w", err)
	}
	next := c.opts.Interval
	wake := func(at time.Time) {
		if d := at.Sub(c.clock.Now()); d > 0 && d < next {
			next = d
		}
	}
	errs := []error{
		c.instances(ctx, instances, byProviderID, byName, wake),
		c.nodeClaims(ctx, ncs.Items, instances),
		c.nodes(ctx, byProviderID, wake),
	}
	return reconcile.Result{RequeueAfter: next}, errors.Join(errs...)
}

// instances terminates instances no NodeClaim knows about.
func (c *Controller) instances(ctx context.Context, instances []*karpv1.NodeClaim, byProviderID, byName map[string]*karpv1.NodeClaim, wake func(time.Time)) error {
	var errs []error
	for _, inst := range instances {
		if _, ok := byProviderID[inst.Status.ProviderID]; ok {
			continue
		}
		if nc, ok := byName[inst.Name]; ok && nc.Status.ProviderID == "" {
			continue // its launch is being recorded right now
		}
		if until := inst.CreationTimestamp.Add(c.opts.GracePeriod); c.clock.Now().Before(until) {
			wake(until)
			continue
		}
		if owned, err := c.claimedLive(ctx, inst); err != nil || owned {
			if err != nil {
				errs = append(errs, err)
			}
			continue
		}
		err := c.cloud.Delete(ctx, inst)
		if err != nil && !cloudprovider.IsNodeClaimNotFound(err) {
			errs = append(errs, fmt.Errorf("terminating leaked instance %s: %w", inst.Status.ProviderID, err))
			continue
		}
		c.metrics.GarbageCollected.WithLabelValues(KindInstance).Inc()
		log.FromContext(ctx).Info("terminated an instance no NodeClaim owns", "providerID", inst.Status.ProviderID, "nodeclaim", inst.Name)
	}
	return errors.Join(errs...)
}

// claimedLive asks the API server, not the cache, whether the NodeClaim
// the instance was launched for exists and owns it (or has not recorded
// its launch yet).
func (c *Controller) claimedLive(ctx context.Context, inst *karpv1.NodeClaim) (bool, error) {
	if inst.Name == "" {
		return false, nil
	}
	var nc karpv1.NodeClaim
	if err := c.live.Get(ctx, client.ObjectKey{Name: inst.Name}, &nc); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("confirming instance %s has no NodeClaim: %w", inst.Status.ProviderID, err)
	}
	return nc.Status.ProviderID == "" || nc.Status.ProviderID == inst.Status.ProviderID, nil
}

// nodeClaims deletes launched NodeClaims whose instance is gone; the cloud
// list is confirmed by a Get so that a list that lags never deletes a
// live NodeClaim.
func (c *Controller) nodeClaims(ctx context.Context, ncs []karpv1.NodeClaim, instances []*karpv1.NodeClaim) error {
	live := make(map[string]bool, len(instances))
	for _, inst := range instances {
		live[inst.Status.ProviderID] = true
	}
	var errs []error
	for i := range ncs {
		nc := &ncs[i]
		if live[nc.Status.ProviderID] || nc.Status.ProviderID == "" || !nc.DeletionTimestamp.IsZero() || !nc.IsTrue(karpv1.ConditionTypeLaunched) {
			continue
		}
		if _, err := c.cloud.Get(ctx, nc.Status.ProviderID); !cloudprovider.IsNodeClaimNotFound(err) {
			if err != nil {
				errs = append(errs, fmt.Errorf("checking the instance of nodeclaim %s: %w", nc.Name, err))
			}
			continue
		}
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting nodeclaim %s: %w", nc.Name, err))
			continue
		}
		c.metrics.GarbageCollected.WithLabelValues(KindNodeClaim).Inc()
		c.recorder.Eventf(nc, nil, corev1.EventTypeWarning, ReasonInstanceGone, "Delete",
			"Instance %s no longer exists; deleting the NodeClaim", termtext.Escape(termtext.Clip(nc.Status.ProviderID, 256)))
	}
	return errors.Join(errs...)
}

// nodes deletes managed Nodes that no NodeClaim claims; their termination
// drains them and deletes the instance.
func (c *Controller) nodes(ctx context.Context, byProviderID map[string]*karpv1.NodeClaim, wake func(time.Time)) error {
	var nodes corev1.NodeList
	if err := c.kube.List(ctx, &nodes, client.HasLabels{karpv1.NodePoolLabelKey}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	var errs []error
	var live map[string]bool // the providerIDs NodeClaims carry, read around the cache once
	for i := range nodes.Items {
		node := &nodes.Items[i]
		if node.Spec.ProviderID == "" || !node.DeletionTimestamp.IsZero() {
			continue
		}
		if _, ok := byProviderID[node.Spec.ProviderID]; ok {
			continue
		}
		if until := node.CreationTimestamp.Add(c.opts.GracePeriod); c.clock.Now().Before(until) {
			wake(until)
			continue
		}
		if live == nil {
			var ncs karpv1.NodeClaimList
			if err := c.live.List(ctx, &ncs); err != nil {
				return errors.Join(append(errs, fmt.Errorf("confirming orphan nodes: %w", err))...)
			}
			live = make(map[string]bool, len(ncs.Items))
			for j := range ncs.Items {
				live[ncs.Items[j].Status.ProviderID] = true
			}
		}
		if live[node.Spec.ProviderID] {
			continue // the cache had not heard of its NodeClaim yet
		}
		if err := c.kube.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("deleting node %s: %w", node.Name, err))
			continue
		}
		c.metrics.GarbageCollected.WithLabelValues(KindNode).Inc()
		c.recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonNoNodeClaim, "Delete",
			"No NodeClaim has providerID %s; deleting the node", node.Spec.ProviderID)
	}
	return errors.Join(errs...)
}
