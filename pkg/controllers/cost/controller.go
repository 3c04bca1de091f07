package cost

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/costrecord"
)

// DefaultInterval between writes.
const DefaultInterval = time.Minute

// Options configure the controller.
type Options struct {
	// Namespace of the record's ConfigMap (the controller's namespace).
	Namespace string
	// Interval between writes; zero means DefaultInterval.
	Interval time.Duration
}

// Controller keeps the cost record.
type Controller struct {
	kube client.Client // cached reads of NodeClaims and NodePools; writes
	live client.Reader // uncached reads of the ConfigMap
	clk  clock.Clock
	opts Options
}

// NewController returns the controller. live reads the ConfigMap without a
// cache (manager.GetAPIReader()).
func NewController(kube client.Client, live client.Reader, clk clock.Clock, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Controller{kube: kube, live: live, clk: clk, opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "cost.record" }

// Register adds the controller to the manager as a singleton.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(c)
}

// Reconcile accrues and writes the record, then asks to run again after
// Interval.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	now := c.clk.Now()
	// Read only: the cache's objects, not copies (at 3,000 NodeClaims a
	// copied list is some 12 MB a minute).
	var ncs karpv1.NodeClaimList
	if err := c.kube.List(ctx, &ncs, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	var pools karpv1.NodePoolList
	if err := c.kube.List(ctx, &pools, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	labels := map[string]map[string]string{}
	for _, p := range pools.Items {
		labels[p.Name] = p.Labels
	}
	usages := Usages(ncs.Items, labels)

	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: c.opts.Namespace, Name: costrecord.ConfigMapName}
	exists := true
	rec := &costrecord.Record{}
	if err := c.live.Get(ctx, key, cm); apierrors.IsNotFound(err) {
		exists = false
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("reading the cost record: %w", err)
	} else if data := cm.Data[costrecord.DataKey]; data != "" {
		r, err := costrecord.Decode([]byte(data), now)
		if err != nil {
			// A record we cannot read is replaced, not kept failing.
			log.FromContext(ctx).Error(err, "the cost record is unreadable; starting a new one", "configmap", key.String())
		} else {
			rec = r
		}
	}
	rec.Accrue(usages, now)
	data, err := rec.Encode(now)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("encoding the cost record: %w", err)
	}
	if !exists {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels: map[string]string{"app.kubernetes.io/name": "dovetail", "app.kubernetes.io/component": "cost-record"}}}
		cm.Data = map[string]string{costrecord.DataKey: string(data)}
		if err := c.kube.Create(ctx, cm); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating the cost record: %w", err)
		}
	} else {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[costrecord.DataKey] = string(data)
		if err := c.kube.Update(ctx, cm); err != nil { // resourceVersion: a concurrent writer makes this fail and retry
			return reconcile.Result{}, fmt.Errorf("writing the cost record: %w", err)
		}
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// Usages turns launched, priced NodeClaims into what the record accrues;
// poolLabels gives each NodePool's labels.
func Usages(ncs []karpv1.NodeClaim, poolLabels map[string]map[string]string) []costrecord.Usage {
	var out []costrecord.Usage
	for i := range ncs {
		nc := &ncs[i]
		launched := nc.GetCondition(karpv1.ConditionTypeLaunched)
		if launched == nil || launched.Status != metav1.ConditionTrue {
			continue
		}
		price, ok := nodeclaimutil.HourlyPrice(nc)
		if !ok {
			continue
		}
		pool := nodeclaimutil.NodePool(nc)
		out = append(out, costrecord.Usage{
			Pool: pool, Labels: poolLabels[pool], PricePerHour: price,
			Spot: nc.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot,
			From: launched.LastTransitionTime.Time,
		})
	}
	return out
}
