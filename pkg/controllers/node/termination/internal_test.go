package termination

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

func TestEvictionBackoffDoublesFrom100msTo10s(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newEvictionBackoff(clk)
	const uid = types.UID("pod-1")
	want := []time.Duration{100, 200, 400, 800, 1600, 3200, 6400, 10000, 10000}
	for i, w := range want {
		next, first := b.fail(uid)
		if first != (i == 0) {
			t.Fatalf("refusal %d: first = %v", i, first)
		}
		if got := next.Sub(clk.Now()); got != w*time.Millisecond {
			t.Fatalf("refusal %d: retry after %s, want %s", i, got, w*time.Millisecond)
		}
		if _, waiting := b.waiting(uid, clk.Now()); !waiting {
			t.Fatalf("refusal %d: not waiting right after the refusal", i)
		}
		clk.Step(w * time.Millisecond)
		if _, waiting := b.waiting(uid, clk.Now()); waiting {
			t.Fatalf("refusal %d: still waiting when the backoff has passed", i)
		}
	}
	b.forget(uid)
	if _, first := b.fail(uid); !first {
		t.Fatal("forget did not reset the pod's backoff")
	}
	if _, waiting := b.waiting("other", clk.Now()); waiting {
		t.Fatal("a pod never refused is waiting")
	}
}

func TestDrainGroupsAndProtection(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	ds := []metav1.OwnerReference{{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "DaemonSet", Name: "x", Controller: ptr.To(true)}}
	rs := []metav1.OwnerReference{{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "ReplicaSet", Name: "x", Controller: ptr.To(true)}}
	tests := []struct {
		name      string
		pod       corev1.Pod
		group     int
		protected bool
		drainable bool
	}{
		{"plain", corev1.Pod{}, groupNonCritical, false, true},
		{"replicaset", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: rs}}, groupNonCritical, false, true},
		{"daemonset", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ds}}, groupNonCriticalDaemon, false, true},
		{"cluster critical", corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "system-cluster-critical"}}, groupCritical, false, true},
		{"node critical daemon", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: ds}, Spec: corev1.PodSpec{PriorityClassName: "system-node-critical"}}, groupCriticalDaemon, false, true},
		{"other priority class", corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high"}}, groupNonCritical, false, true},
		{"do-not-disrupt", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}}}, groupNonCritical, true, true},
		{"do-not-disrupt false", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{karpv1.DoNotDisruptAnnotationKey: "false"}}}, groupNonCritical, false, true},
		{"do-not-disrupt for 30m, 10m old", corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			CreationTimestamp: metav1.NewTime(now.Add(-10 * time.Minute)),
			Annotations:       map[string]string{karpv1.DoNotDisruptAnnotationKey: "30m"}}}, groupNonCritical, true, true},
		{"do-not-disrupt for 30m, 40m old", corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			CreationTimestamp: metav1.NewTime(now.Add(-40 * time.Minute)),
			Annotations:       map[string]string{karpv1.DoNotDisruptAnnotationKey: "30m"}}}, groupNonCritical, false, true},
		{"do-not-disrupt for 30m, created 40m ago, started 10m ago", corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			CreationTimestamp: metav1.NewTime(now.Add(-40 * time.Minute)),
			Annotations:       map[string]string{karpv1.DoNotDisruptAnnotationKey: "30m"}},
			Status: corev1.PodStatus{StartTime: ptr.To(metav1.NewTime(now.Add(-10 * time.Minute)))}}, groupNonCritical, true, true},
		{"mirror pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}}, groupNonCritical, false, false},
		{"succeeded", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, groupNonCritical, false, false},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, groupNonCritical, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g := group(&tt.pod); g != tt.group {
				t.Errorf("group = %d, want %d", g, tt.group)
			}
			if _, p := protected(&tt.pod, now); p != tt.protected {
				t.Errorf("protected = %v, want %v", p, tt.protected)
			}
			if d := drainable(&tt.pod); d != tt.drainable {
				t.Errorf("drainable = %v, want %v", d, tt.drainable)
			}
		})
	}
}

func TestDeadline(t *testing.T) {
	del := metav1.NewTime(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	tests := []struct {
		name string
		nc   *karpv1.NodeClaim
		want *time.Time
	}{
		{"no nodeclaim", nil, nil},
		{"no grace period", &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del}}, nil},
		{"grace period", &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del},
			Spec: karpv1.NodeClaimSpec{TerminationGracePeriod: &metav1.Duration{Duration: time.Hour}}}, ptr.To(del.Add(time.Hour))},
		{"annotation wins", &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &del,
			Annotations: map[string]string{karpv1.NodeClaimTerminationTimestampAnnotationKey: "2025-01-01T12:30:00Z"}},
			Spec: karpv1.NodeClaimSpec{TerminationGracePeriod: &metav1.Duration{Duration: time.Hour}}}, ptr.To(del.Add(30 * time.Minute))},
		{"not deleting", &karpv1.NodeClaim{Spec: karpv1.NodeClaimSpec{TerminationGracePeriod: &metav1.Duration{Duration: time.Hour}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Deadline(tt.nc)
			if (got == nil) != (tt.want == nil) || (got != nil && !got.Equal(*tt.want)) {
				t.Fatalf("Deadline = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvictedPodIsNotEvictedAgainWhileTheCacheCatchesUp(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	b := newEvictionBackoff(clk)
	const uid = types.UID("pod-1")
	b.evicted(uid)
	if at, waiting := b.waiting(uid, clk.Now()); !waiting || at.Sub(clk.Now()) != evictedSettle {
		t.Fatalf("right after eviction: waiting=%v until %s, want %s", waiting, at.Sub(clk.Now()), evictedSettle)
	}
	clk.Step(evictedSettle)
	if _, waiting := b.waiting(uid, clk.Now()); waiting {
		t.Fatal("still held back after the settle time")
	}
}
