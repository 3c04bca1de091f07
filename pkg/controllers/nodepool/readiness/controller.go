package readiness

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Condition reasons.
const (
	ReasonValid                = "Valid"
	ReasonValidationFailed     = "ValidationFailed"
	ReasonNodeClassReady       = "NodeClassReady"
	ReasonNodeClassNotReady    = "NodeClassNotReady"
	ReasonNodeClassNotFound    = "NodeClassNotFound"
	ReasonUnsupportedNodeClass = "UnsupportedNodeClass"
	ReasonAwaitingNodeClass    = "AwaitingReconciliation"
	ReasonUnsupported          = "Unsupported"
)

// Controller keeps a NodePool's ValidationSucceeded and NodeClassReady
// conditions (and so Ready) current.
type Controller struct {
	kube  client.Client
	clock clock.Clock
	opts  Options
}

// Options configure the controller.
type Options struct {
	// NodeRepair is the feature gate: on, a budget reason Unhealthy
	// limits node repair; off, it limits nothing and is reported.
	NodeRepair bool
	// StaticCapacity (the feature gate) admits static pools (spec.replicas);
	// off, such a pool gets ValidationSucceeded=False naming the gate.
	StaticCapacity bool
}

// NewController returns the controller.
func NewController(kube client.Client, clk clock.Clock, opts Options) *Controller {
	return &Controller{kube: kube, clock: clk, opts: opts}
}

// StaticCapacityOffMessage is ValidationSucceeded's message on a static
// pool while the StaticCapacity gate is off.
const StaticCapacityOffMessage = "spec.replicas: static NodePools need the StaticCapacity feature gate (FEATURE_GATES=StaticCapacity=true); with it off this pool gets no nodes"

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodepool.readiness" }

// Register adds the controller to the manager; a node class change
// re-checks the pools that use it.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	r := mgr.GetClient()
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodePool{}).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			var pools karpv1.NodePoolList
			if err := r.List(ctx, &pools); err != nil {
				return nil
			}
			var out []reconcile.Request
			for _, np := range pools.Items {
				if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == o.GetName() {
					out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: np.Name}})
				}
			}
			return out
		})).
		Complete(c)
}

// Reconcile recomputes the conditions and writes them when they changed.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	base := np.DeepCopy()
	now := c.clock.Now()
	if errs := np.RuntimeValidate(); len(errs) > 0 {
		np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, ReasonValidationFailed, errs.ToAggregate().Error(), now)
	} else if np.Spec.Replicas != nil && !c.opts.StaticCapacity {
		np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, ReasonValidationFailed, StaticCapacityOffMessage, now)
	} else {
		np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, ReasonValid, "", now)
	}
	status, reason, msg, gen, err := c.nodeClass(ctx, np.Spec.Template.Spec.NodeClassRef)
	if err != nil {
		return reconcile.Result{}, err
	}
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, status, reason, msg, now)
	if unsupported := UnsupportedDisruption(np, c.opts.NodeRepair); len(unsupported) > 0 {
		np.SetCondition(karpv1.ConditionTypeDisruptionSupported, metav1.ConditionFalse, ReasonUnsupported, strings.Join(unsupported, "; "), now)
	} else {
		np.ClearCondition(karpv1.ConditionTypeDisruptionSupported)
	}
	np.Status.NodeClassObservedGeneration = gen
	if equality.Semantic.DeepEqual(base.Status, np.Status) {
		return reconcile.Result{}, nil
	}
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, np, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}

// UnsupportedDisruption lists the disruption fields and values of a pool
// that dovetail accepts but does not act on, each naming its field. Today
// that is a budget reason Unhealthy while node repair is off (the
// NodeRepair gate, nodeRepair): no node is repaired, so such a budget
// limits nothing.
func UnsupportedDisruption(np *karpv1.NodePool, nodeRepair bool) []string {
	if nodeRepair {
		return nil
	}
	var out []string
	for i, b := range np.Spec.Disruption.Budgets {
		for j, r := range b.Reasons {
			if r == karpv1.DisruptionReasonUnhealthy {
				out = append(out, fmt.Sprintf("spec.disruption.budgets[%d].reasons[%d]: %q is not acted on: node repair is off (feature gate NodeRepair=false), so this reason limits nothing", i, j, string(r)))
			}
		}
	}
	return out
}

// nodeClass derives NodeClassReady from the referenced class's Ready.
func (c *Controller) nodeClass(ctx context.Context, ref *karpv1.NodeClassReference) (metav1.ConditionStatus, string, string, int64, error) {
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != "EC2NodeClass" {
		msg := "dovetail supports nodeClassRef group " + awsv1.Group + ", kind EC2NodeClass"
		return metav1.ConditionFalse, ReasonUnsupportedNodeClass, msg, 0, nil
	}
	class := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.ConditionFalse, ReasonNodeClassNotFound, "EC2NodeClass " + ref.Name + " not found", 0, nil
		}
		return "", "", "", 0, err
	}
	ready := class.GetCondition(awsv1.ConditionTypeReady)
	switch {
	case ready == nil || ready.ObservedGeneration != class.Generation:
		return metav1.ConditionUnknown, ReasonAwaitingNodeClass, "EC2NodeClass " + ref.Name + " has not been resolved yet", class.Generation, nil
	case ready.Status == metav1.ConditionTrue:
		return metav1.ConditionTrue, ReasonNodeClassReady, "", class.Generation, nil
	case ready.Status == metav1.ConditionFalse:
		return metav1.ConditionFalse, ReasonNodeClassNotReady, "EC2NodeClass " + ref.Name + ": " + ready.Message, class.Generation, nil
	default:
		return metav1.ConditionUnknown, ReasonNodeClassNotReady, "EC2NodeClass " + ref.Name + ": " + ready.Message, class.Generation, nil
	}
}
