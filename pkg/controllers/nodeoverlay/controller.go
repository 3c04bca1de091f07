package nodeoverlay

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// ReasonNotSupported is the Ready condition's reason on every overlay.
const ReasonNotSupported = "NotSupported"

// Message is the Ready condition's message on every overlay.
const Message = "dovetail does not apply NodeOverlays yet (feature gate NodeOverlay is off): this overlay changes no instance type's price or capacity"

// Controller keeps every NodeOverlay's Ready condition at False,
// NotSupported.
type Controller struct {
	kube  client.Client
	clock clock.Clock
}

// NewController returns the controller.
func NewController(kube client.Client, clk clock.Clock) *Controller {
	return &Controller{kube: kube, clock: clk}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeoverlay.status" }

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
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&karpv1alpha1.NodeOverlay{}).Complete(c)
}

// Reconcile writes Ready=False, NotSupported when the overlay lacks it
// (or it is stale for the overlay's generation).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	no := &karpv1alpha1.NodeOverlay{}
	if err := c.kube.Get(ctx, req.NamespacedName, no); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := no.DeepCopy()
	no.SetCondition(karpv1alpha1.ConditionTypeReady, metav1.ConditionFalse, ReasonNotSupported, Message, c.clock.Now())
	if equality.Semantic.DeepEqual(base.Status, no.Status) {
		return reconcile.Result{}, nil
	}
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, no, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}
