package disruption_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dovetail-sh/dovetail/pkg/disruption"
)

func staticPod(name string, mutate func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	p.Status.Phase = corev1.PodRunning
	if mutate != nil {
		mutate(p)
	}
	return p
}

// Not launched first, then empty (daemonset or finished pods only), then
// the cheapest to disrupt, do-not-disrupt last; ties by name.
func TestScaleDownOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ds := func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "agent", APIVersion: "apps/v1"}}
	}
	nodes := []disruption.StaticNode{
		{NodeClaim: "dnd", Launched: true, Pods: []*corev1.Pod{staticPod("x", func(p *corev1.Pod) {
			p.Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "true"}
		})}},
		{NodeClaim: "busy", Launched: true, Pods: []*corev1.Pod{staticPod("a", nil), staticPod("b", nil)}},
		{NodeClaim: "one-pod", Launched: true, Pods: []*corev1.Pod{staticPod("c", nil)}},
		{NodeClaim: "empty-ds", Launched: true, Pods: []*corev1.Pod{staticPod("d", ds), staticPod("done", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })}},
		{NodeClaim: "empty", Launched: true},
		{NodeClaim: "launching"},
		{NodeClaim: "dnd-expired", Launched: true, Pods: []*corev1.Pod{staticPod("y", func(p *corev1.Pod) {
			p.Annotations = map[string]string{disruption.DoNotDisruptAnnotation: "1h"}
			p.Status.StartTime = &metav1.Time{Time: now.Add(-2 * time.Hour)}
			p.Spec.Priority = ptr.To(int32(1 << 30)) // dear to evict
		})}},
	}
	want := []string{"launching", "empty", "empty-ds", "one-pod", "busy", "dnd-expired", "dnd"}
	for count := 0; count <= len(want)+1; count++ {
		got := disruption.ScaleDown(disruption.ScaleDownInput{Nodes: nodes, Count: count, Now: now})
		if len(got) != min(count, len(want)) {
			t.Fatalf("count %d: %d picks", count, len(got))
		}
		for i, p := range got {
			if p.NodeClaim != want[i] {
				t.Fatalf("count %d: pick %d is %s (%s), want %s; all %+v", count, i, p.NodeClaim, p.Rank, want[i], got)
			}
		}
	}
	got := disruption.ScaleDown(disruption.ScaleDownInput{Nodes: nodes, Count: 7, Now: now})
	for i, rank := range []string{disruption.RankNotLaunched, disruption.RankEmpty, disruption.RankEmpty, disruption.RankCheapest,
		disruption.RankCheapest, disruption.RankCheapest, disruption.RankDoNotDisrupt} {
		if got[i].Rank != rank {
			t.Errorf("%s ranked %s, want %s", got[i].NodeClaim, got[i].Rank, rank)
		}
	}

	// A node near the end of its life costs less to disrupt.
	ea := 10 * time.Hour
	old := []disruption.StaticNode{
		{NodeClaim: "young", Launched: true, Created: now.Add(-time.Hour), Pods: []*corev1.Pod{staticPod("a", nil)}},
		{NodeClaim: "old", Launched: true, Created: now.Add(-9 * time.Hour), Pods: []*corev1.Pod{staticPod("b", nil), staticPod("c", nil)}},
	}
	if got := disruption.ScaleDown(disruption.ScaleDownInput{Nodes: old, Count: 1, Now: now, ExpireAfter: &ea}); got[0].NodeClaim != "old" {
		t.Errorf("picked %+v, want the old node (2 pods x 10%% of life left < 1 pod x 90%%)", got)
	}
}
