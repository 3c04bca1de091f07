package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
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
