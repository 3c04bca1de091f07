package offerings

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// DefaultInterval between checks of the cache.
const DefaultInterval = 10 * time.Second

// Options configure the controller.
type Options struct {
	// Namespace of the ConfigMap (the controller's namespace).
	Namespace string
	// Interval between checks; zero means DefaultInterval.
	Interval time.Duration
}

// Controller publishes the unavailable offerings.
type Controller struct {
	kube    client.Client
	live    client.Reader
	cache   *unavailable.Cache
	opts    Options
	written uint64
	wrote   bool
}

// NewController returns the controller; live reads the ConfigMap uncached.
func NewController(kube client.Client, live client.Reader, cache *unavailable.Cache, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Controller{kube: kube, live: live, cache: cache, opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "offerings.unavailable" }

// Register adds the controller to the manager as a singleton.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(c)
}

// Reconcile writes the ConfigMap when the cache changed since the last
// write, and asks to run again after Interval.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	gen := c.cache.Generation()
	next := reconcile.Result{RequeueAfter: c.opts.Interval}
	if c.wrote && gen == c.written {
		return next, nil
	}
	data, err := unavailable.Encode(c.cache.List())
	if err != nil {
		return reconcile.Result{}, err
	}
	key := client.ObjectKey{Namespace: c.opts.Namespace, Name: unavailable.PublishedConfigMap}
	cm := &corev1.ConfigMap{}
	err = c.live.Get(ctx, key, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "dovetail", "app.kubernetes.io/component": "unavailable-offerings"}},
			Data: map[string]string{unavailable.PublishedKey: string(data)}}
		if err := c.kube.Create(ctx, cm); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating %s: %w", key, err)
		}
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("reading %s: %w", key, err)
	default:
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[unavailable.PublishedKey] = string(data)
		if err := c.kube.Update(ctx, cm); err != nil {
			return reconcile.Result{}, fmt.Errorf("writing %s: %w", key, err)
		}
	}
	c.written, c.wrote = gen, true
	return next, nil
}
