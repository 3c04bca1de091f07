package simulate

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// bufferTemplatePrefix starts the name of the PodTemplate a resolved
// buffer is planned from (a colon is in no real object's name, so it
// cannot collide with the input's PodTemplates).
const bufferTemplatePrefix = "capacitybuffer:"

// bufferSource is the object a buffer's shape comes from and the path of
// its pod template in that object (to locate the engine's complaints about
// a buffer pod).
type bufferSource struct {
	key  ObjectKey
	path string
}

// buffers resolves the input's CapacityBuffers against its PodTemplates,
// Deployments, ReplicaSets and StatefulSets, as the capacity buffer
// controller does with the CapacityBuffer gate on (snapshot.ResolveBuffer),
// and returns them with their status resolved and the PodTemplates their
// status names, for snapshot.Build to plan as engine.Buffers. A buffer that
// does not resolve (a missing PodTemplate or scalable, a percentage over
// 100, ...), or whose provisioningStrategy is another autoscaler's, is
// left out with a warning naming its file, document and field; nothing else
// changes. sources maps "namespace/name" of each planned buffer to where
// its shape comes from.
func (m *Manifests) buffers() (cbs []*autoscalingv1beta1.CapacityBuffer, pts []*corev1.PodTemplate, sources map[string]bufferSource, warnings []string) {
	if len(m.CapacityBuffers) == 0 {
		return nil, nil, nil, nil
	}
	byKey := map[ObjectKey]any{}
	for _, pt := range m.PodTemplates {
		byKey[ObjectKey{Kind: "PodTemplate", Namespace: pt.Namespace, Name: pt.Name}] = pt
	}
	for _, d := range m.Deployments {
		byKey[ObjectKey{Kind: autoscalingv1beta1.KindDeployment, Namespace: d.Namespace, Name: d.Name}] = d
	}
	for _, rs := range m.ReplicaSets {
		byKey[ObjectKey{Kind: autoscalingv1beta1.KindReplicaSet, Namespace: rs.Namespace, Name: rs.Name}] = rs
	}
	for _, s := range m.StatefulSets {
		byKey[ObjectKey{Kind: autoscalingv1beta1.KindStatefulSet, Namespace: s.Namespace, Name: s.Name}] = s
	}
	lookup := func(kind, ns, name string) (any, error) {
		return byKey[ObjectKey{Kind: kind, Namespace: ns, Name: name}], nil
	}
	sorted := slices.Clone(m.CapacityBuffers)
	slices.SortFunc(sorted, func(a, b *autoscalingv1beta1.CapacityBuffer) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	sources = map[string]bufferSource{}
	total := 0
	for _, cb := range sorted {
		o, _ := m.Origin(ObjectKey{Kind: "CapacityBuffer", Namespace: cb.Namespace, Name: cb.Name})
		where := func(fe *field.Error) string {
			return o.errorf("CapacityBuffer", cb.Name, field.ErrorList{fe}, nil).Error()
		}
		if s := cb.Spec.ProvisioningStrategy; s != nil && *s != autoscalingv1beta1.ActiveCapacityStrategy {
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s not planned (another autoscaler's): %s", cb.Namespace, cb.Name,
				where(field.NotSupported(field.NewPath("spec", "provisioningStrategy"), *s, []string{autoscalingv1beta1.ActiveCapacityStrategy}))))
			continue
		}
		r, err := snapshot.ResolveBuffer(cb, lookup)
		if err != nil {
			be, ok := err.(*snapshot.BufferError)
			if !ok {
				be = &snapshot.BufferError{Reason: snapshot.BufferResolutionFailed, Field: field.InternalError(field.NewPath("spec"), err)}
			}
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s not planned (%s): %s", cb.Namespace, cb.Name, be.Reason, where(be.Field)))
			continue
		}
		var src bufferSource
		if r.PodTemplate != nil {
			src = bufferSource{key: ObjectKey{Kind: "PodTemplate", Namespace: cb.Namespace, Name: r.PodTemplate.Name}, path: "template."}
		} else {
			ref := cb.Spec.ScalableRef
			src = bufferSource{key: ObjectKey{Kind: ref.Kind, Namespace: cb.Namespace, Name: ref.Name}, path: "spec.template."}
		}
		if total+int(r.Count) > engine.MaxBufferPods {
			warnings = append(warnings, fmt.Sprintf("CapacityBuffer %s/%s: room for %d of its %d chunks planned: %s", cb.Namespace, cb.Name,
				max(engine.MaxBufferPods-total, 0), r.Count,
				where(field.TooMany(field.NewPath("status", "replicas"), total+int(r.Count), engine.MaxBufferPods))))
		}
		total += int(r.Count)
		name := bufferTemplatePrefix + cb.Name
		pts = append(pts, &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: cb.Namespace, Name: name}, Template: r.Template})
		c := cb.DeepCopy()
		count := r.Count
		c.Status.Replicas = &count
		c.Status.PodTemplateRef = &autoscalingv1beta1.LocalObjectRef{Name: name}
		apimeta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: autoscalingv1beta1.ConditionReadyForProvisioning,
			Status: metav1.ConditionTrue, Reason: "Resolved", Message: fmt.Sprintf("%d chunks shaped like %s", count, r.From)})
		cbs = append(cbs, c)
		sources[cb.Namespace+"/"+cb.Name] = src
	}
	return cbs, pts, sources, warnings
}
