package provisioning

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// TestToHandOff: a planned pod gets a nomination only if an unbound pod of
// another kind (another controller, or no controller) could be placed on
// the node; pods of its own kind, pods that do not tolerate the node's
// taints or select other nodes, and bound pods do not count.
func TestToHandOff(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"team": "a", corev1.LabelArchStable: "arm64"}}}
	node.Spec.Taints = []corev1.Taint{
		{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule},
		{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute}, // shed at registration: ignored
	}
	nc := &karpv1.NodeClaim{}
	tolerates := []corev1.Toleration{{Key: "team", Value: "a", Effect: corev1.TaintEffectNoSchedule}}
	pod := func(uid, owner string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}
		}
		p.Spec.Tolerations = tolerates
		if mutate != nil {
			mutate(&p)
		}
		return &p
	}
	planned := map[types.UID]bool{"web-1": true, "web-2": true, "api-1": true}
	base := []*corev1.Pod{
		pod("web-1", "web", nil), pod("web-2", "web", nil), pod("api-1", "api", nil),
		pod("web-3", "web", nil), // planned elsewhere, same kind as web-1/2
		pod("amd-1", "amd", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"} }),
		pod("b-1", "b", func(p *corev1.Pod) { p.Spec.Tolerations = nil }),
		pod("bound-1", "bound", func(p *corev1.Pod) { p.Spec.NodeName = "elsewhere" }),
	}
	write, _ := toHandOff(base, node, nc, planned)
	// web-3 could take a web pod's room (an exchange, no cost) and an api
	// pod's room (a cost): only api-1 is handed off.
	if !write["api-1"] || write["web-1"] || write["web-2"] {
		t.Errorf("handed off %v, want only api-1 (web-3 is of the web pods' kind)", write)
	}
	// An unowned unbound pod that may run there is another kind for all.
	write, _ = toHandOff(append(base, pod("lonely", "", nil)), node, nc, planned)
	if !write["api-1"] || !write["web-1"] || !write["web-2"] {
		t.Errorf("handed off %v, want every planned pod", write)
	}
	// Nobody else can use the node: no hand-off.
	write, _ = toHandOff(base[:3], node, nc, planned)
	if len(write) != 0 {
		t.Errorf("handed off %v with no other pod able to use the node", write)
	}
}

// TestUnboundKindsAgreeWithTheScan: the counted kinds (what the hand-off
// uses) name the same kinds as a scan of every pod, as pods are added,
// bound, finished and deleted.
func TestUnboundKindsAgreeWithTheScan(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{corev1.LabelArchStable: "arm64"}}}
	nc := &karpv1.NodeClaim{}
	pod := func(uid, owner string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)}}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}
		}
		if mutate != nil {
			mutate(&p)
		}
		return &p
	}
	all := map[types.UID]*corev1.Pod{}
	u := newUnboundKinds()
	put := func(p *corev1.Pod) {
		if old, ok := all[p.UID]; ok {
			u.update(old, p)
		} else {
			u.add(p)
		}
		all[p.UID] = p
	}
	del := func(uid types.UID) {
		u.remove(all[uid])
		delete(all, uid)
	}
	check := func(step string, planned ...types.UID) {
		t.Helper()
		set := map[types.UID]bool{}
		var mine, list []*corev1.Pod
		for _, uid := range planned {
			set[uid] = true
			if p := all[uid]; p != nil {
				mine = append(mine, p)
			}
		}
		for _, p := range all {
			list = append(list, p)
		}
		want := otherKinds(list, node, nc, set)
		got := u.others(mine, snapshot.NodeView(node, nc, false))
		if len(got) != len(want) {
			t.Fatalf("%s: counted kinds %v, the scan finds %v", step, got, want)
		}
		for k := range want {
			if !got[k] {
				t.Fatalf("%s: counted kinds %v, the scan finds %v", step, got, want)
			}
		}
	}
	for i := range 3 {
		put(pod(fmt.Sprintf("web-%d", i), "web", nil))
	}
	put(pod("api-0", "api", nil))
	put(pod("amd-0", "amd", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"} }))
	check("start", "web-0", "web-1")
	check("all web planned", "web-0", "web-1", "web-2")
	check("web and api planned", "web-0", "web-1", "web-2", "api-0")
	// web-2 bound elsewhere: the web kind has no unbound pod left but the planned ones.
	put(pod("web-2", "web", func(p *corev1.Pod) { p.Spec.NodeName = "elsewhere" }))
	check("web-2 bound", "web-0", "web-1")
	// api-0 finished, then a lonely pod appears and is deleted.
	put(pod("api-0", "api", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }))
	check("api-0 finished", "web-0")
	put(pod("lonely", "", nil))
	check("a pod of no controller", "web-0", "web-1")
	del("lonely")
	del("web-1")
	check("deleted", "web-0")
	if n := len(u.count); n != 2 {
		t.Errorf("%d kinds counted (%v), want web and amd", n, u.count)
	}
}
