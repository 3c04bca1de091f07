package capacitybuffer

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// Reasons of the ReadyForProvisioning condition (the peer's), and of the
// Provisioning condition this controller writes when there is nothing to
// provision.
const (
	ReasonResolved            = "Resolved"
	ReasonPodTemplateNotFound = snapshot.BufferPodTemplateNotFound
	ReasonScalableRefNotFound = snapshot.BufferScalableRefNotFound
	ReasonResolutionFailed    = snapshot.BufferResolutionFailed

	ReasonNotReadyForProvisioning = "NotReadyForProvisioning"
	ReasonBufferEmpty             = "BufferEmpty"
)

// TemplateSuffix ends the name of the PodTemplate the controller keeps for
// a buffer with a scalableRef: "<buffer>" + TemplateSuffix, owned by the
// buffer (deleted with it).
const TemplateSuffix = "-capacitybuffer"

// Options configure the controller.
type Options struct {
	// Interval is how often a buffer is resolved again besides on events
	// (default 1 minute).
	Interval time.Duration
}

// Controller resolves CapacityBuffers into status (see the package doc).
type Controller struct {
	kube     client.Client
	clock    clock.Clock
	recorder events.EventRecorder
	opts     Options
}

// New returns the controller.
func New(kube client.Client, clk clock.Clock, rec events.EventRecorder, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	return &Controller{kube: kube, clock: clk, recorder: rec, opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "capacitybuffer" }

// Register watches CapacityBuffers, the PodTemplates they name or own, and
// the Deployments, ReplicaSets and StatefulSets they name.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	b := builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&autoscalingv1beta1.CapacityBuffer{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.PodTemplate{}, handler.EnqueueRequestsFromMapFunc(c.naming(func(cb *autoscalingv1beta1.CapacityBuffer, o client.Object) bool {
			if ref := cb.Spec.PodTemplateRef; ref != nil && ref.Name == o.GetName() {
				return true
			}
			return cb.Name+TemplateSuffix == o.GetName()
		})))
	for _, w := range []struct {
		obj  client.Object
		kind string
	}{{&appsv1.Deployment{}, autoscalingv1beta1.KindDeployment}, {&appsv1.ReplicaSet{}, autoscalingv1beta1.KindReplicaSet}, {&appsv1.StatefulSet{}, autoscalingv1beta1.KindStatefulSet}} {
		kind := w.kind
		b = b.Watches(w.obj, handler.EnqueueRequestsFromMapFunc(c.naming(func(cb *autoscalingv1beta1.CapacityBuffer, o client.Object) bool {
			ref := cb.Spec.ScalableRef
			return ref != nil && ref.Kind == kind && ref.Name == o.GetName() && (ref.APIGroup == "" || ref.APIGroup == appsv1.GroupName)
		})), builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	return b.Complete(c)
}

// naming maps an object to the buffers of its namespace that match.
func (c *Controller) naming(match func(*autoscalingv1beta1.CapacityBuffer, client.Object) bool) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var list autoscalingv1beta1.CapacityBufferList
		if err := c.kube.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if match(&list.Items[i], o) {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
			}
		}
		return out
	}
}

// resolution is a buffer's shape and count, or why it has none.
type resolution struct {
	template   *corev1.PodTemplate // what status.podTemplateRef names
	count      int32
	reason     string // ReasonResolved or the failure's
	message    string
	retryError error // a failure to retry (not the user's)
}

// Reconcile resolves one buffer and writes its status.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cb := &autoscalingv1beta1.CapacityBuffer{}
	if err := c.kube.Get(ctx, req.NamespacedName, cb); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cb.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	if s := cb.Spec.ProvisioningStrategy; s != nil && *s != autoscalingv1beta1.ActiveCapacityStrategy {
		// Another autoscaler's buffer: its status is not ours to write.
		log.FromContext(ctx).V(1).Info("CapacityBuffer has a provisioning strategy dovetail does not implement; left alone",
			"buffer", req.String(), "strategy", *s)
		return reconcile.Result{}, nil
	}
	r := c.resolve(ctx, cb)
	if r.retryError != nil {
		return reconcile.Result{}, r.retryError
	}
	base := cb.DeepCopy()
	now := metav1.NewTime(c.clock.Now())
	set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
		apimeta.SetStatusCondition(&cb.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: cb.Generation, LastTransitionTime: now})
	}
	cb.Status.ProvisioningStrategy = cb.Spec.ProvisioningStrategy
	if r.reason != ReasonResolved {
		cb.Status.Replicas, cb.Status.PodTemplateRef, cb.Status.PodTemplateGeneration = nil, nil, nil
		set(autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, r.reason, r.message)
		set(autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, ReasonNotReadyForProvisioning, "the buffer is not ReadyForProvisioning: "+r.message)
	} else {
		gen := r.template.Generation
		cb.Status.Replicas = &r.count
		cb.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: r.template.Name}
		cb.Status.PodTemplateGeneration = &gen
		set(autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue, ReasonResolved, r.message)
		if p := apimeta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionProvisioning); r.count == 0 {
			set(autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, ReasonBufferEmpty, "the buffer asks for no chunks")
		} else if p != nil && (p.Reason == ReasonBufferEmpty || p.Reason == ReasonNotReadyForProvisioning) {
			// Provisioning plans it next; until then it is not provisioned.
			set(autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, "Pending", "waiting for the next provisioning pass")
		}
	}
	if equality.Semantic.DeepEqual(base.Status, cb.Status) {
		return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
	}
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, cb, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	if old := apimeta.FindStatusCondition(base.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning); r.reason != ReasonResolved && (old == nil || old.Reason != r.reason) && c.recorder != nil {
		c.recorder.Eventf(cb, nil, corev1.EventTypeWarning, r.reason, "Resolve", "%s", r.message)
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// resolve finds the buffer's shape and count: snapshot.ResolveBuffer
// (the rules simulate applies offline) over the objects of the buffer's
// namespace; a scalable's template is kept in the buffer's own
// PodTemplate, which status.podTemplateRef names.
func (c *Controller) resolve(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer) resolution {
	lookup := func(kind, namespace, name string) (any, error) {
		var obj client.Object
		switch kind {
		case "PodTemplate":
			obj = &corev1.PodTemplate{}
		case autoscalingv1beta1.KindDeployment:
			obj = &appsv1.Deployment{}
		case autoscalingv1beta1.KindReplicaSet:
			obj = &appsv1.ReplicaSet{}
		case autoscalingv1beta1.KindStatefulSet:
			obj = &appsv1.StatefulSet{}
		default:
			return nil, nil
		}
		if err := c.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
		}
		return obj, nil
	}
	r, err := snapshot.ResolveBuffer(cb, lookup)
	var be *snapshot.BufferError
	switch {
	case errors.As(err, &be):
		return resolution{reason: be.Reason, message: be.Error()}
	case err != nil:
		return resolution{retryError: err}
	}
	pt := r.PodTemplate
	if pt == nil {
		var res resolution
		if pt, res = c.ownTemplate(ctx, cb, r.Template); pt == nil {
			return res
		}
	}
	return resolution{template: pt, count: r.Count, reason: ReasonResolved, message: fmt.Sprintf("%d chunks shaped like %s", r.Count, r.From)}
}

// ownTemplate creates or updates the buffer's own PodTemplate to spec.
func (c *Controller) ownTemplate(ctx context.Context, cb *autoscalingv1beta1.CapacityBuffer, spec corev1.PodTemplateSpec) (*corev1.PodTemplate, resolution) {
	name := cb.Name + TemplateSuffix
	want := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: spec.Labels, Annotations: spec.Annotations}, Spec: spec.Spec}
	pt := &corev1.PodTemplate{}
	err := c.kube.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: name}, pt)
	switch {
	case apierrors.IsNotFound(err):
		pt = &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: cb.Namespace, Name: name,
			OwnerReferences: []metav1.OwnerReference{ownerRef(cb)}},
			Template: want}
		if err := c.kube.Create(ctx, pt); err != nil {
			return nil, resolution{retryError: fmt.Errorf("creating PodTemplate %s/%s: %w", cb.Namespace, name, err)}
		}
		return pt, resolution{}
	case err != nil:
		return nil, resolution{retryError: fmt.Errorf("reading PodTemplate %s/%s: %w", cb.Namespace, name, err)}
	}
	if !metav1.IsControlledBy(pt, cb) {
		return nil, resolution{reason: ReasonResolutionFailed,
			message: fmt.Sprintf("PodTemplate %s/%s, where the buffer keeps its scalable's template, exists and is not this buffer's", cb.Namespace, name)}
	}
	if equality.Semantic.DeepEqual(pt.Template, want) {
		return pt, resolution{}
	}
	base := pt.DeepCopy()
	pt.Template = want
	if err := c.kube.Patch(ctx, pt, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return nil, resolution{retryError: fmt.Errorf("updating PodTemplate %s/%s: %w", cb.Namespace, name, err)}
	}
	return pt, resolution{}
}

// ownerRef makes cb the controller of its PodTemplate copy; it does not
// block the buffer's deletion (that would need the buffer's finalizers).
func ownerRef(cb *autoscalingv1beta1.CapacityBuffer) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: autoscalingv1beta1.GroupVersion.String(), Kind: "CapacityBuffer",
		Name: cb.Name, UID: cb.UID, Controller: &yes}
}
