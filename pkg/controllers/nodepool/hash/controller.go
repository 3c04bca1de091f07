package hash

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
)

// Controller keeps the hash annotations of NodePools current, and moves
// NodeClaims stamped with an older hash version (nodepoolhash.Version) to the current hash.
type Controller struct {
	kube client.Client
}

// NewController returns the controller.
func NewController(kube client.Client) *Controller { return &Controller{kube: kube} }

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodepool.hash" }

// Register adds the controller to the manager: it reconciles a NodePool
// when its spec (generation) or annotations change.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodePool{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Complete(c)
}

// Reconcile writes the annotations when they differ from the template.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	want := nodepoolhash.Annotations(np)
	if np.Annotations[karpv1.NodePoolHashAnnotationKey] != want[karpv1.NodePoolHashAnnotationKey] ||
		np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != nodepoolhash.Version {
		base := np.DeepCopy()
		if np.Annotations == nil {
			np.Annotations = map[string]string{}
		}
		for k, v := range want {
			np.Annotations[k] = v
		}
		if err := nodeclaimutil.Patch(ctx, c.kube, np, base); err != nil {
			return nodeclaimutil.RequeueOnConflict(err)
		}
	}
	return reconcile.Result{}, c.migrateNodeClaims(ctx, np, want)
}

// migrateNodeClaims restamps the pool's NodeClaims whose hash version is
// not Version: their hash was computed by another scheme, so comparing it
// would report drift that is not there.
func (c *Controller) migrateNodeClaims(ctx context.Context, np *karpv1.NodePool, want map[string]string) error {
	var ncs karpv1.NodeClaimList
	if err := c.kube.List(ctx, &ncs, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}); err != nil {
		return err
	}
	for i := range ncs.Items {
		nc := &ncs.Items[i]
		if nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == nodepoolhash.Version || !nc.DeletionTimestamp.IsZero() {
			continue
		}
		base := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		for k, v := range want {
			nc.Annotations[k] = v
		}
		if err := c.kube.Patch(ctx, nc, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
