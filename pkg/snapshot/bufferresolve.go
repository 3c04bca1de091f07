package snapshot

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
)

// Reasons a CapacityBuffer's spec does not resolve (the peer's reasons of
// its ReadyForProvisioning condition).
const (
	BufferPodTemplateNotFound = "PodTemplateNotFound"
	BufferScalableRefNotFound = "ScalableRefNotFound"
	BufferResolutionFailed    = "ResolutionFailed"
)

// BufferLookup finds an object of a buffer's namespace: kind is
// "PodTemplate", or a scalableRef's kind (Deployment, ReplicaSet,
// StatefulSet); it returns the object (*corev1.PodTemplate,
// *appsv1.Deployment, *appsv1.ReplicaSet or *appsv1.StatefulSet), nil and
// no error when there is none, or an error when it cannot tell.
type BufferLookup func(kind, namespace, name string) (any, error)

// ResolvedBuffer is a CapacityBuffer's spec resolved: the shape of one
// chunk and how many chunks.
type ResolvedBuffer struct {
	// Template is the chunk's shape: the named PodTemplate's template, or
	// the scalable's pod template (labels, annotations and spec).
	Template corev1.PodTemplateSpec
	// PodTemplate is the PodTemplate named by spec.podTemplateRef (nil for
	// a scalableRef).
	PodTemplate *corev1.PodTemplate
	// Count is the number of chunks (BufferCount).
	Count int32
	// From names the source of the shape ("PodTemplate x", "Deployment y").
	From string
}

// BufferError is why a CapacityBuffer's spec does not resolve: the reason
// (BufferPodTemplateNotFound, ...) and the field at fault.
type BufferError struct {
	Reason string
	Field  *field.Error
}

func (e *BufferError) Error() string { return e.Field.Error() }

// ResolveBuffer resolves cb's spec against the objects lookup finds in its
// namespace, as the capacity buffer controller does: spec.podTemplateRef
// names a PodTemplate; spec.scalableRef an apps/v1 Deployment, ReplicaSet
// or StatefulSet whose pod template is the shape and whose spec.replicas
// (default 1) spec.percentage counts from. The count is BufferCount's. It
// returns a *BufferError for a spec that does not resolve (a missing
// object, an unsupported kind or group, a bad count), and lookup's error
// unwrapped otherwise.
func ResolveBuffer(cb *autoscalingv1beta1.CapacityBuffer, lookup BufferLookup) (*ResolvedBuffer, error) {
	spec := &cb.Spec
	path := field.NewPath("spec")
	count := func(r *ResolvedBuffer, replicas *int32) (*ResolvedBuffer, error) {
		n, err := BufferCount(spec, &r.Template.Spec, replicas)
		if err != nil {
			fe, ok := err.(*field.Error)
			if !ok {
				fe = field.Invalid(path, nil, err.Error())
			}
			return nil, &BufferError{Reason: BufferResolutionFailed, Field: fe}
		}
		r.Count = n
		return r, nil
	}
	switch {
	case spec.PodTemplateRef != nil:
		name := spec.PodTemplateRef.Name
		obj, err := lookup("PodTemplate", cb.Namespace, name)
		if err != nil {
			return nil, err
		}
		pt, _ := obj.(*corev1.PodTemplate)
		if pt == nil {
			return nil, &BufferError{Reason: BufferPodTemplateNotFound, Field: field.NotFound(path.Child("podTemplateRef", "name"),
				fmt.Sprintf("PodTemplate %s/%s", cb.Namespace, name))}
		}
		return count(&ResolvedBuffer{Template: pt.Template, PodTemplate: pt, From: "PodTemplate " + pt.Name}, nil)
	case spec.ScalableRef != nil:
		ref := spec.ScalableRef
		if ref.APIGroup != "" && ref.APIGroup != appsv1.GroupName {
			return nil, &BufferError{Reason: BufferResolutionFailed, Field: field.NotSupported(path.Child("scalableRef", "apiGroup"), ref.APIGroup, []string{appsv1.GroupName})}
		}
		switch ref.Kind {
		case autoscalingv1beta1.KindDeployment, autoscalingv1beta1.KindReplicaSet, autoscalingv1beta1.KindStatefulSet:
		default:
			return nil, &BufferError{Reason: BufferResolutionFailed, Field: field.NotSupported(path.Child("scalableRef", "kind"), ref.Kind,
				[]string{autoscalingv1beta1.KindDeployment, autoscalingv1beta1.KindReplicaSet, autoscalingv1beta1.KindStatefulSet})}
		}
		obj, err := lookup(ref.Kind, cb.Namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		tmpl, replicas, ok := ScalableTemplate(obj)
		if !ok {
			return nil, &BufferError{Reason: BufferScalableRefNotFound, Field: field.NotFound(path.Child("scalableRef", "name"),
				fmt.Sprintf("%s %s/%s", ref.Kind, cb.Namespace, ref.Name))}
		}
		return count(&ResolvedBuffer{Template: tmpl, From: ref.Kind + " " + ref.Name}, &replicas)
	}
	return nil, &BufferError{Reason: BufferResolutionFailed, Field: field.Required(path, "neither podTemplateRef nor scalableRef is set")}
}

// ScalableTemplate is a scalable's pod template (its labels, annotations
// and spec) and spec.replicas (1 when unset, the API server's default);
// ok false when obj is not a (non-nil) Deployment, ReplicaSet or
// StatefulSet.
func ScalableTemplate(obj any) (tmpl corev1.PodTemplateSpec, replicas int32, ok bool) {
	var spec corev1.PodTemplateSpec
	var r *int32
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o == nil {
			return tmpl, 0, false
		}
		spec, r = o.Spec.Template, o.Spec.Replicas
	case *appsv1.ReplicaSet:
		if o == nil {
			return tmpl, 0, false
		}
		spec, r = o.Spec.Template, o.Spec.Replicas
	case *appsv1.StatefulSet:
		if o == nil {
			return tmpl, 0, false
		}
		spec, r = o.Spec.Template, o.Spec.Replicas
	default:
		return tmpl, 0, false
	}
	tmpl.Labels, tmpl.Annotations, tmpl.Spec = spec.Labels, spec.Annotations, spec.Spec
	replicas = 1
	if r != nil {
		replicas = *r
	}
	return tmpl, replicas, true
}
