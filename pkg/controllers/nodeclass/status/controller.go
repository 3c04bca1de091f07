package status

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Resolver turns an EC2NodeClass's selectors into its status. The AWS
// provider's nodeclass.Resolver implements it.
type Resolver interface {
	// Resolve returns a copy of the class with status (subnets, security
	// groups, AMIs, instance profile, conditions) filled in. It returns an
	// error only when the cloud could not be asked; selectors that match
	// nothing are False conditions on the returned class.
	Resolve(ctx context.Context, nc *awsv1.EC2NodeClass) (*awsv1.EC2NodeClass, error)
}

// Finalizer is implemented by resolvers that own cloud resources per class
// (an instance profile made for spec.role); Finalize removes them once no
// NodeClaim uses the class. It must be idempotent.
type Finalizer interface {
	Finalize(ctx context.Context, nc *awsv1.EC2NodeClass) error
}

// DefaultRefreshInterval is how often a class is re-resolved without
// events (subnets, images and security groups change in the cloud).
const DefaultRefreshInterval = time.Minute

// Event reasons.
const ReasonWaitingOnNodeClaims = "WaitingOnNodeClaims"

// Controller resolves EC2NodeClasses and guards their deletion.
type Controller struct {
	kube     client.Client
	resolver Resolver
	recorder events.EventRecorder
	refresh  time.Duration
}

// NewController returns the controller; refresh <= 0 means
// DefaultRefreshInterval.
func NewController(kube client.Client, resolver Resolver, recorder events.EventRecorder, refresh time.Duration) *Controller {
	if refresh <= 0 {
		refresh = DefaultRefreshInterval
	}
	return &Controller{kube: kube, resolver: resolver, recorder: recorder, refresh: refresh}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclass.status" }

// Register adds the controller to the manager; a NodeClaim's deletion
// brings back the class it used, so that a deletion waiting on it can
// finish. Other NodeClaim events do not: each reconcile resolves the class
// through the cloud's API, and a scale-up changes NodeClaims many times.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&awsv1.EC2NodeClass{}).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if ref := o.(*karpv1.NodeClaim).Spec.NodeClassRef; ref != nil && ref.Group == awsv1.Group {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: ref.Name}}}
			}
			return nil
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(event.CreateEvent) bool { return false },
			UpdateFunc:  func(event.UpdateEvent) bool { return false },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

// Reconcile resolves the class and writes its status, or finishes its
// deletion.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	class := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, req.NamespacedName, class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !class.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, c.finalize(ctx, class)
	}
	if !controllerutil.ContainsFinalizer(class, awsv1.TerminationFinalizer) {
		base := class.DeepCopy()
		controllerutil.AddFinalizer(class, awsv1.TerminationFinalizer)
		if err := nodeclaimutil.Patch(ctx, c.kube, class, base); err != nil {
			return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	resolved, err := c.resolver.Resolve(ctx, class)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("resolving EC2NodeClass %s: %w", class.Name, err)
	}
	if !equality.Semantic.DeepEqual(class.Status, resolved.Status) {
		base := class.DeepCopy()
		class.Status = resolved.Status
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, class, base); err != nil {
			return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	return reconcile.Result{RequeueAfter: c.refresh}, nil
}

// finalize releases the class once no NodeClaim launches with it.
func (c *Controller) finalize(ctx context.Context, class *awsv1.EC2NodeClass) error {
	if !controllerutil.ContainsFinalizer(class, awsv1.TerminationFinalizer) {
		return nil
	}
	var ncs karpv1.NodeClaimList
	if err := c.kube.List(ctx, &ncs, client.MatchingFields{nodeclaimutil.IndexNodeClaimNodeClassName: class.Name}); err != nil {
		return err
	}
	users := 0
	for _, nc := range ncs.Items {
		if ref := nc.Spec.NodeClassRef; ref != nil && ref.Group == awsv1.Group {
			users++
		}
	}
	if users > 0 {
		c.recorder.Eventf(class, nil, corev1.EventTypeNormal, ReasonWaitingOnNodeClaims, "Delete",
			"Waiting for %d NodeClaims using the class to go (e.g. %s)", users, ncs.Items[0].Name)
		return nil // their deletion brings us back
	}
	if f, ok := c.resolver.(Finalizer); ok {
		if err := f.Finalize(ctx, class); err != nil {
			return fmt.Errorf("releasing the cloud resources of EC2NodeClass %s: %w", class.Name, err)
		}
	}
	base := class.DeepCopy()
	controllerutil.RemoveFinalizer(class, awsv1.TerminationFinalizer)
	return client.IgnoreNotFound(nodeclaimutil.Patch(ctx, c.kube, class, base))
}
