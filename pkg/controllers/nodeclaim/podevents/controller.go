package podevents

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// DedupeWindow is the least time between two writes of a NodeClaim's
// status.lastPodEventTime.
const DedupeWindow = 10 * time.Second

// Reasons of the Consolidatable condition.
const (
	ReasonConsolidatable = "Consolidatable"
)

// Controller records pod events on NodeClaims and keeps their
// Consolidatable condition (see the package doc). It registers two
// reconcilers: one keyed by node name, fed by pod events, and one keyed by
// NodeClaim.
type Controller struct {
	kube  client.Client
	clock clock.Clock
}

// NewController returns the controller.
func NewController(kube client.Client, clk clock.Clock) *Controller {
	return &Controller{kube: kube, clock: clk}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.podevents" }

// Register adds both reconcilers to the manager.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	r := mgr.GetClient()
	if err := builder.ControllerManagedBy(mgr).Named(c.Name()).
		Watches(&corev1.Pod{}, c.podHandler()).
		Complete(reconcile.Func(c.ReconcileNode)); err != nil {
		return err
	}
	return builder.ControllerManagedBy(mgr).Named("nodeclaim.consolidatable").
		For(&karpv1.NodeClaim{}).
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var ncs karpv1.NodeClaimList
			// Only names are read: no copies (this runs on every NodePool
			// status change, i.e. with every launch at fleet size).
			if err := r.List(ctx, &ncs, client.MatchingLabels{karpv1.NodePoolLabelKey: o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
				return nil
			}
			out := make([]reconcile.Request, 0, len(ncs.Items))
			for _, nc := range ncs.Items {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
			}
			return out
			// Only a change of the pool's spec (consolidateAfter) matters,
			// not its status, which changes with every launch.
		}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(reconcile.Func(c.Reconcile))
}

// IsPodEvent reports whether the change of a pod from old to new is a pod
// event of its node: new is nil for a deletion, old nil for a creation
// (counted only when the pod was created bound within DedupeWindow of
// now). DaemonSet pods never count.
func IsPodEvent(old, new *corev1.Pod, now time.Time) bool {
	switch {
	case new == nil && old == nil:
		return false
	case new == nil: // deleted
		return old.Spec.NodeName != "" && !ownedByDaemonSet(old) && !terminal(old) && old.DeletionTimestamp == nil
	case ownedByDaemonSet(new) || new.Spec.NodeName == "":
		return false
	case old == nil: // created
		return now.Sub(new.CreationTimestamp.Time) < DedupeWindow
	}
	return old.Spec.NodeName == "" ||
		(!terminal(old) && terminal(new)) ||
		(old.DeletionTimestamp == nil && new.DeletionTimestamp != nil)
}

func (c *Controller) podHandler() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(q queue, node string) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: node}})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if p, ok := e.Object.(*corev1.Pod); ok && IsPodEvent(nil, p, c.clock.Now()) {
				enqueue(q, p.Spec.NodeName)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			o, ok1 := e.ObjectOld.(*corev1.Pod)
			n, ok2 := e.ObjectNew.(*corev1.Pod)
			if ok1 && ok2 && IsPodEvent(o, n, c.clock.Now()) {
				enqueue(q, n.Spec.NodeName)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) {
			if p, ok := e.Object.(*corev1.Pod); ok && IsPodEvent(p, nil, c.clock.Now()) {
				enqueue(q, p.Spec.NodeName)
			}
		},
	}
}

// ReconcileNode records a pod event on the NodeClaim of the node named by
// the request: lastPodEventTime becomes now, unless it was written less
// than DedupeWindow ago, in which case the write is asked for when the
// window ends.
func (c *Controller) ReconcileNode(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: req.Name}, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	nc, err := nodeclaimutil.NodeClaimForProviderID(ctx, c.kube, node.Spec.ProviderID)
	if err != nil || nc == nil {
		return reconcile.Result{}, err
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	now := c.clock.Now()
	if last := nc.Status.LastPodEventTime.Time; !last.IsZero() {
		if wait := last.Add(DedupeWindow).Sub(now); wait > 0 {
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	base := nc.DeepCopy()
	nc.Status.LastPodEventTime = metav1.NewTime(now)
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}

// Reconcile keeps the NodeClaim's Consolidatable condition and asks to run
// again when it falls due.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var np *karpv1.NodePool
	if name := nodeclaimutil.NodePool(nc); name != "" {
		np = &karpv1.NodePool{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return reconcile.Result{}, err
			}
			np = nil
		}
	}
	base := nc.DeepCopy()
	wait, msg := Due(nc, np, c.clock.Now())
	if wait == 0 {
		nc.SetCondition(karpv1.ConditionTypeConsolidatable, metav1.ConditionTrue, ReasonConsolidatable, msg, c.clock.Now())
	} else {
		nc.ClearCondition(karpv1.ConditionTypeConsolidatable)
	}
	if !equality.Semantic.DeepEqual(base.Status, nc.Status) {
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil {
			return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	return reconcile.Result{}, nil
}

// Due says when the NodeClaim becomes Consolidatable: 0 when it is now
// (with the condition's message), a positive duration when that much time
// is left, or -1 when it will not become so without a change (not
// initialized, no pool, consolidateAfter Never).
func Due(nc *karpv1.NodeClaim, np *karpv1.NodePool, now time.Time) (time.Duration, string) {
	init := nc.GetCondition(karpv1.ConditionTypeInitialized)
	if np == nil || init == nil || init.Status != metav1.ConditionTrue {
		return -1, ""
	}
	after, ok := np.Spec.Disruption.ConsolidateAfter.Duration()
	if np.Spec.Disruption.ConsolidateAfter.IsNever() {
		return -1, ""
	}
	if !ok {
		after = 0 // unset: the API's default, 0s
	}
	since, what := init.LastTransitionTime.Time, "initialization"
	if last := nc.Status.LastPodEventTime.Time; last.After(since) {
		since, what = last, "the last pod event"
	}
	if left := since.Add(after).Sub(now); left > 0 {
		return left, ""
	}
	return 0, fmt.Sprintf("consolidateAfter %s has passed since %s", np.Spec.Disruption.ConsolidateAfter.String(), what)
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}
