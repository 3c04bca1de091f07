package snapshot_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

func chunk(cpu string) *corev1.PodSpec {
	return &corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}
}

// The count: replicas and percentage take the larger, limits cap it (or
// alone give as many as fit); bad values name the field.
func TestBufferCount(t *testing.T) {
	scalable := &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "web"}
	cpus := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
	}
	for _, tc := range []struct {
		name     string
		spec     autoscalingv1beta1.CapacityBufferSpec
		replicas *int32
		want     int32
		err      string
	}{
		{"replicas", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3)}, nil, 3, ""},
		{"percentage rounds up", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr.To[int32](20)}, ptr.To[int32](11), 3, ""},
		{"percentage at least 1", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr.To[int32](1)}, ptr.To[int32](2), 1, ""},
		{"larger of replicas and percentage", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Replicas: ptr.To[int32](2), Percentage: ptr.To[int32](50)}, ptr.To[int32](10), 5, ""},
		{"limits cap", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](10), Limits: cpus("2500m")}, nil, 2, ""},
		{"limits alone", autoscalingv1beta1.CapacityBufferSpec{Limits: cpus("4")}, nil, 4, ""},
		{"limits on a resource not requested", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](3), Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}, nil, 3, ""},
		{"percentage over 100", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: scalable, Percentage: ptr.To[int32](150)}, ptr.To[int32](2), 0, "spec.percentage"},
		{"percentage without scalable", autoscalingv1beta1.CapacityBufferSpec{Percentage: ptr.To[int32](10)}, nil, 0, "spec.percentage"},
		{"too many", autoscalingv1beta1.CapacityBufferSpec{Replicas: ptr.To[int32](engine.MaxBufferPods + 1)}, nil, 0, "at most"},
	} {
		got, err := snapshot.BufferCount(&tc.spec, chunk("1"), tc.replicas)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}

// Only resolved buffers (ReadyForProvisioning, replicas, a template that
// exists) become engine buffers.
func TestBuffers(t *testing.T) {
	ready := []metav1.Condition{{Type: autoscalingv1beta1.ConditionReadyForProvisioning, Status: metav1.ConditionTrue}}
	cb := func(name, tmpl string, n int32, conds []metav1.Condition) *autoscalingv1beta1.CapacityBuffer {
		b := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		b.Status.Replicas, b.Status.PodTemplateRef, b.Status.Conditions = &n, &autoscalingv1beta1.LocalObjectRef{Name: tmpl}, conds
		return b
	}
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "t"}}
	pt.Template.Spec = *chunk("1")
	got := snapshot.Buffers([]*autoscalingv1beta1.CapacityBuffer{
		cb("z-ok", "t", 2, ready), cb("a-ok", "t", 1, ready), cb("not-ready", "t", 2, nil),
		cb("no-template", "missing", 2, ready), cb("empty", "t", 0, ready),
	}, []*corev1.PodTemplate{pt})
	if len(got) != 2 || got[0].Name != "a-ok" || got[1].Name != "z-ok" || got[1].Count != 2 {
		t.Fatalf("buffers %+v, want a-ok and z-ok", got)
	}
}
