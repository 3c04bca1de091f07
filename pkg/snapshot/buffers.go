package snapshot

import (
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// BufferCount is how many chunks a CapacityBuffer's spec asks for, given
// the shape of one chunk (podSpec) and, for a scalableRef, the scalable's
// replicas (nil for a podTemplateRef): spec.replicas and spec.percentage of
// the scalable's replicas (rounded up, at least 1 when both are positive)
// take the larger; spec.limits cap the result at as many chunks as their
// resources hold (floor of limit over the chunk's request, for each
// resource the chunk requests); limits alone give that many. The count is
// also capped at engine.MaxBufferPods. The error names the field: a
// percentage over 100 or without a scalableRef, or a count over the cap.
func BufferCount(spec *autoscalingv1beta1.CapacityBufferSpec, podSpec *corev1.PodSpec, scalableReplicas *int32) (int32, error) {
	path := field.NewPath("spec")
	var candidates []int32
	if spec.Replicas != nil {
		candidates = append(candidates, *spec.Replicas)
	}
	if p := spec.Percentage; p != nil {
		switch {
		case *p > 100:
			return 0, field.Invalid(path.Child("percentage"), *p, "must be at most 100")
		case spec.ScalableRef == nil:
			return 0, field.Invalid(path.Child("percentage"), *p, "needs spec.scalableRef (a percentage of its replicas)")
		}
		if scalableReplicas != nil && *scalableReplicas > 0 {
			n := int32(math.Ceil(float64(*scalableReplicas) * float64(*p) / 100))
			if *p > 0 {
				n = max(n, 1)
			}
			candidates = append(candidates, n)
		}
	}
	count := int32(0)
	if len(candidates) > 0 {
		count = slices.Max(candidates)
	}
	if len(spec.Limits) > 0 && podSpec != nil {
		if fit, ok := fitInLimits(spec.Limits, podSpec); ok {
			if len(candidates) > 0 {
				count = min(count, fit)
			} else {
				count = fit
			}
		}
	}
	if count > engine.MaxBufferPods {
		return 0, field.Invalid(path, count, fmt.Sprintf("the buffer asks for %d chunks; at most %d are planned", count, engine.MaxBufferPods))
	}
	return max(count, 0), nil
}

// fitInLimits is how many chunks of podSpec limits hold; ok false when
// limits name no resource the chunk requests.
func fitInLimits(limits corev1.ResourceList, podSpec *corev1.PodSpec) (int32, bool) {
	req := resourcehelper.PodRequests(&corev1.Pod{Spec: *podSpec}, resourcehelper.PodResourcesOptions{})
	fit, ok := int64(math.MaxInt32), false
	for name, limit := range limits {
		r, has := req[name]
		if !has || r.IsZero() {
			continue
		}
		ok = true
		fit = min(fit, limit.MilliValue()/r.MilliValue())
	}
	return int32(max(fit, 0)), ok
}

// Buffers are the CapacityBuffers the engine keeps room for: those whose
// status says ReadyForProvisioning, with status.replicas above zero and a
// status.podTemplateRef naming a PodTemplate of templates in the buffer's
// namespace (the capacity buffer controller resolves spec into status).
// They are sorted by namespace and name and cut, in that order, to
// engine.MaxBufferPods chunks in all.
func Buffers(cbs []*autoscalingv1beta1.CapacityBuffer, templates []*corev1.PodTemplate) []engine.Buffer {
	byKey := make(map[string]*corev1.PodTemplate, len(templates))
	for _, pt := range templates {
		byKey[pt.Namespace+"/"+pt.Name] = pt
	}
	var out []engine.Buffer
	for _, cb := range cbs {
		st := cb.Status
		if !cb.DeletionTimestamp.IsZero() || st.Replicas == nil || *st.Replicas <= 0 || st.PodTemplateRef == nil ||
			!apimeta.IsStatusConditionTrue(st.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning) {
			continue
		}
		pt := byKey[cb.Namespace+"/"+st.PodTemplateRef.Name]
		if pt == nil {
			continue
		}
		out = append(out, engine.Buffer{Namespace: cb.Namespace, Name: cb.Name, Template: pt.Template, Count: int(*st.Replicas)})
	}
	slices.SortFunc(out, func(a, b engine.Buffer) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	left := engine.MaxBufferPods
	for i := range out {
		out[i].Count = min(out[i].Count, left)
		left -= out[i].Count
	}
	return out
}
