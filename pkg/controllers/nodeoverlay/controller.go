package nodeoverlay

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// ReasonGateOff is the Ready condition's reason on every overlay while the
// NodeOverlay feature gate is off.
const ReasonGateOff = "FeatureGateOff"

// Message is the Ready condition's message on every overlay while the gate
// is off.
const Message = "feature gate NodeOverlay is off: dovetail ignores NodeOverlays, this overlay changes no instance type's price or capacity"

// ReasonApplied is the reason of ValidationSucceeded=True and Ready=True.
const ReasonApplied = "Applied"

// ConditionTypeValidationSucceeded is the peer's condition: the overlay is
// valid and conflicts with no other.
const ConditionTypeValidationSucceeded = "ValidationSucceeded"

// Resync is how often the overlays are evaluated again without a change
// (instance types and prices change under them).
const Resync = 10 * time.Minute

// Options configure the controller.
type Options struct {
	// Enabled is the NodeOverlay feature gate: on, every overlay is
	// evaluated against every NodePool's instance types (pkg/overlay) and
	// its conditions say whether it applies; off, every overlay gets
	// Ready=False, ReasonGateOff.
	Enabled bool
	// Cloud gives the NodePools' instance types (required when Enabled).
	Cloud cloudprovider.CloudProvider
}

// Controller writes each NodeOverlay's Ready and ValidationSucceeded
// conditions.
type Controller struct {
	kube  client.Client
	clock clock.Clock
	opts  Options
}

// NewController returns the controller.
func NewController(kube client.Client, clk clock.Clock, opts Options) *Controller {
	return &Controller{kube: kube, clock: clk, opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeoverlay.status" }

// all is the one request the enabled controller reconciles: every overlay
// is judged against every other, so they are evaluated together.
var all = reconcile.Request{NamespacedName: types.NamespacedName{Name: "all-nodeoverlays"}}

// Register adds the controller to the manager, unless the API server does
// not serve NodeOverlays (the CRD not installed), which is logged.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	gvk := karpv1alpha1.GroupVersion.WithKind("NodeOverlay")
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			log.FromContext(ctx).Info("NodeOverlay CRD not installed; not marking overlays", "controller", c.Name())
			return nil
		}
		return err
	}
	b := builder.ControllerManagedBy(mgr).Named(c.Name())
	if !c.opts.Enabled {
		return b.For(&karpv1alpha1.NodeOverlay{}).Complete(c)
	}
	toAll := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{all} })
	// Overlays by any change (a status edited by hand is written back);
	// pools and classes by spec, since their instance types follow it.
	return b.Watches(&karpv1alpha1.NodeOverlay{}, toAll).
		Watches(&karpv1.NodePool{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&awsv1.EC2NodeClass{}, toAll, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(c)
}

// Reconcile writes the conditions (see Options.Enabled).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if !c.opts.Enabled {
		return c.markGateOff(ctx, req)
	}
	overlays, err := nodeclaimutil.ListNodeOverlays(ctx, c.kube)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(overlays) == 0 {
		return reconcile.Result{}, nil
	}
	var pools karpv1.NodePoolList
	if err := c.kube.List(ctx, &pools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodePools: %w", err)
	}
	var nps []*karpv1.NodePool
	typesOf := map[string][]*cloudprovider.InstanceType{}
	for i := range pools.Items {
		np := &pools.Items[i]
		its, err := c.opts.Cloud.GetInstanceTypes(ctx, np)
		if err != nil {
			// The pool's overlays are judged without it; provisioning
			// reports the pool.
			continue
		}
		nps = append(nps, np)
		typesOf[np.Name] = its
	}
	_, verdicts := snapshot.ApplyOverlays(overlays, nps, typesOf)
	for i, no := range overlays {
		if err := c.write(ctx, no, verdicts[i]); err != nil {
			return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	return reconcile.Result{RequeueAfter: Resync}, nil
}

func (c *Controller) write(ctx context.Context, no *karpv1alpha1.NodeOverlay, v overlay.Verdict) error {
	base := no.DeepCopy()
	now := c.clock.Now()
	if v.Applied() {
		no.SetCondition(ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonApplied, v.Message, now)
		no.SetCondition(karpv1alpha1.ConditionTypeReady, metav1.ConditionTrue, ReasonApplied, v.Message, now)
	} else {
		msg := "not applied: " + v.Message
		no.SetCondition(ConditionTypeValidationSucceeded, metav1.ConditionFalse, v.Reason, msg, now)
		no.SetCondition(karpv1alpha1.ConditionTypeReady, metav1.ConditionFalse, v.Reason, msg, now)
	}
	if equality.Semantic.DeepEqual(base.Status, no.Status) {
		return nil
	}
	return nodeclaimutil.PatchStatus(ctx, c.kube, no, base)
}

// markGateOff writes Ready=False, ReasonGateOff when the overlay lacks it
// (or it is stale for the overlay's generation).
func (c *Controller) markGateOff(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	no := &karpv1alpha1.NodeOverlay{}
	if err := c.kube.Get(ctx, req.NamespacedName, no); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := no.DeepCopy()
	no.SetCondition(karpv1alpha1.ConditionTypeReady, metav1.ConditionFalse, ReasonGateOff, Message, c.clock.Now())
	if equality.Semantic.DeepEqual(base.Status, no.Status) {
		return reconcile.Result{}, nil
	}
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, no, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}
