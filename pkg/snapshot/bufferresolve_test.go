package snapshot_test

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// ResolveBuffer: a PodTemplate by name, a scalable's template with a
// percentage of its replicas (rounded up), and each failure naming its
// reason and field.
func TestResolveBuffer(t *testing.T) {
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "shape"},
		Template: corev1.PodTemplateSpec{Spec: *chunk("1")}}
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](7), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: *chunk("500m")}}}
	lookup := func(kind, ns, name string) (any, error) {
		switch {
		case kind == "PodTemplate" && ns == "ns" && name == "shape":
			return pt, nil
		case kind == "Deployment" && ns == "ns" && name == "web":
			return web, nil
		case name == "broken":
			return nil, errors.New("api down")
		}
		return nil, nil
	}
	cb := func(spec autoscalingv1beta1.CapacityBufferSpec) *autoscalingv1beta1.CapacityBuffer {
		return &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"}, Spec: spec}
	}
	r, err := snapshot.ResolveBuffer(cb(autoscalingv1beta1.CapacityBufferSpec{
		PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "shape"}, Replicas: ptr.To[int32](3)}), lookup)
	if err != nil || r.Count != 3 || r.PodTemplate != pt || r.From != "PodTemplate shape" {
		t.Errorf("podTemplateRef: %+v, %v", r, err)
	}
	r, err = snapshot.ResolveBuffer(cb(autoscalingv1beta1.CapacityBufferSpec{
		ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](30)}), lookup)
	if err != nil || r.Count != 3 || r.Template.Labels["app"] != "web" || r.PodTemplate != nil { // ceil(30% of 7) = 3
		t.Errorf("scalableRef: %+v, %v", r, err)
	}
	for _, tc := range []struct {
		name   string
		spec   autoscalingv1beta1.CapacityBufferSpec
		reason string
		field  string
	}{
		{"missing template", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "gone"}, Replicas: ptr.To[int32](1)},
			snapshot.BufferPodTemplateNotFound, "spec.podTemplateRef.name"},
		{"missing scalable", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "StatefulSet", Name: "web"}, Replicas: ptr.To[int32](1)},
			snapshot.BufferScalableRefNotFound, "spec.scalableRef.name"},
		{"other group", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "argoproj.io", Kind: "Rollout", Name: "web"}},
			snapshot.BufferResolutionFailed, "spec.scalableRef.apiGroup"},
		{"other kind", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Job", Name: "web"}},
			snapshot.BufferResolutionFailed, "spec.scalableRef.kind"},
		{"percentage over 100", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](150)},
			snapshot.BufferResolutionFailed, "spec.percentage"},
		{"nothing", autoscalingv1beta1.CapacityBufferSpec{}, snapshot.BufferResolutionFailed, "spec"},
	} {
		_, err := snapshot.ResolveBuffer(cb(tc.spec), lookup)
		var be *snapshot.BufferError
		if !errors.As(err, &be) || be.Reason != tc.reason || be.Field.Field != tc.field {
			t.Errorf("%s: %v, want %s at %s", tc.name, err, tc.reason, tc.field)
		}
	}
	_, err = snapshot.ResolveBuffer(cb(autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "broken"}}), lookup)
	var be *snapshot.BufferError
	if err == nil || errors.As(err, &be) || !strings.Contains(err.Error(), "api down") {
		t.Errorf("lookup error: %v, want it passed through", err)
	}
}
