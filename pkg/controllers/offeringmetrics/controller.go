package offeringmetrics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// DefaultInterval between refreshes.
const DefaultInterval = time.Minute

// Options configure the controller.
type Options struct {
	// Interval between refreshes; zero means DefaultInterval.
	Interval time.Duration
}

// Controller sets the offering gauges (see the package doc).
type Controller struct {
	kube        client.Client
	cloud       cloudprovider.CloudProvider
	unavailable *unavailable.Cache
	metrics     *metrics.Registry
	opts        Options
	// set are the offerings with series, to drop those no pool has.
	set map[cloudprovider.OfferingKey]bool
}

// NewController returns the controller; unavailable may be nil.
func NewController(kube client.Client, cloud cloudprovider.CloudProvider, cache *unavailable.Cache, m *metrics.Registry, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Controller{kube: kube, cloud: cloud, unavailable: cache, metrics: m, opts: opts, set: map[cloudprovider.OfferingKey]bool{}}
}

// Name is the controller's name in logs and metrics (the peer's).
func (c *Controller) Name() string { return "cloudprovider.metrics" }

// Register adds the controller to the manager as a singleton.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(c)
}

type offering struct {
	available bool
	price     float64
}

// Reconcile refreshes the gauges and asks to run again after Interval.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	var pools karpv1.NodePoolList
	if err := c.kube.List(ctx, &pools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodePools: %w", err)
	}
	seen := map[cloudprovider.OfferingKey]offering{}
	var errs []error
	for i := range pools.Items {
		np := &pools.Items[i]
		types, err := c.cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			errs = append(errs, fmt.Errorf("instance types of NodePool %s: %w", np.Name, err))
			continue
		}
		for _, it := range types {
			for _, o := range it.Offerings {
				k := cloudprovider.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}
				available := o.Available && (c.unavailable == nil || !c.unavailable.IsUnavailable(k))
				seen[k] = offering{available: seen[k].available || available, price: o.Price}
			}
		}
	}
	for k, o := range seen {
		v := 0.0
		if o.available {
			v = 1
		}
		c.metrics.OfferingAvailable.WithLabelValues(k.InstanceType, k.CapacityType, k.Zone).Set(v)
		c.metrics.OfferingPriceEstimate.WithLabelValues(k.InstanceType, k.CapacityType, k.Zone).Set(o.price)
	}
	// Drop what no pool offers any more, unless a pool could not be read
	// (its offerings are unknown, not gone).
	if len(errs) == 0 {
		for k := range c.set {
			if _, ok := seen[k]; !ok {
				c.metrics.OfferingAvailable.DeleteLabelValues(k.InstanceType, k.CapacityType, k.Zone)
				c.metrics.OfferingPriceEstimate.DeleteLabelValues(k.InstanceType, k.CapacityType, k.Zone)
				delete(c.set, k)
			}
		}
	}
	for k := range seen {
		c.set[k] = true
	}
	if err := errors.Join(errs...); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}
