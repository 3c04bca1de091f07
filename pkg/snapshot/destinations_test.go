package snapshot_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// ownedBy gives a viewPod the controller owner's UID, its creation time,
// and leaves it untried (no PodScheduled condition) when it is unbound.
func ownedBy(owner types.UID, created time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: string(owner), UID: owner, Controller: ptr.To(true)}}
		p.CreationTimestamp = metav1.NewTime(created)
		if p.Spec.NodeName == "" {
			p.Status.Conditions = nil
		}
	}
}

// The new pods of an evicted owner are nominated where the command planned
// them, as many as it planned beyond those already there; pods of other
// owners, pods the scheduler already tried, and pods already nominated
// (here or in a write not yet seen) are left alone. Provisioning's view
// then counts the nominated pods on their nodes, not as pending.
func TestNominationsFollowTheCommandsDestinations(t *testing.T) {
	t0 := viewNow
	dest := snapshot.Destinations{}
	dest.Add("web", "n1", 2, 1) // two more web pods onto n1, which has one
	dest.Add("web", "r1", 1, 0) // one onto the replacement's node
	dest.Add("api", "n2", 1, 0)
	dest.Add("api", "n2", 1, 0) // a second command: adds up
	pods := []*corev1.Pod{
		viewPod("web-old", "n1", ownedBy("web", t0)),                          // the Base pod
		viewPod("web-a", "", ownedBy("web", t0.Add(1*time.Second)), gatedPod), // -> n1 (held by the placement gate: not tried)
		viewPod("web-b", "", ownedBy("web", t0.Add(2*time.Second))),           // -> n1 (n1 has 2 left, r1 1)
		viewPod("web-c", "", ownedBy("web", t0.Add(3*time.Second))),           // -> r1
		viewPod("web-d", "", ownedBy("web", t0.Add(4*time.Second))),           // nothing left
		viewPod("api-a", "", ownedBy("api", t0.Add(time.Second))),             // written before, not seen yet
		viewPod("api-b", "", ownedBy("api", t0.Add(2*time.Second)), // tried: the scheduler's
			func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
			}),
		viewPod("api-c", "", ownedBy("api", t0.Add(3*time.Second))), // -> n2 (one left after api-a)
		viewPod("other", "", ownedBy("other", t0)),                  // not evicted by a command
	}
	got := snapshot.Nominations(snapshot.NominationInput{
		Destinations: dest, Pods: pods, Written: map[types.UID]string{"uid-api-a": "n2"},
	})
	want := map[string]string{"web-a": "n1", "web-b": "n1", "web-c": "r1", "api-c": "n2"}
	if len(got) != len(want) {
		t.Errorf("got %d nominations, want %d: %v", len(got), len(want), got)
	}
	for _, w := range got {
		if want[w.Pod.Name] != w.Node {
			t.Errorf("pod %s nominated to %q, want %q", w.Pod.Name, w.Node, want[w.Pod.Name])
		}
	}
	for _, p := range pods {
		if p.Status.NominatedNodeName != "" {
			t.Fatalf("Nominations modified pod %s", p.Name)
		}
	}

	// Once written, the nominated pods count on their nodes in the view
	// provisioning and disruption read, and nothing is pending but the
	// pods left alone.
	var written []*corev1.Pod
	for _, p := range pods {
		cp := p.DeepCopy()
		for _, w := range got {
			if w.Pod.Name == p.Name {
				cp.Status.NominatedNodeName = w.Node
			}
		}
		if cp.Name == "api-a" {
			cp.Status.NominatedNodeName = "n2"
		}
		if cp.Status.NominatedNodeName == "" && cp.Spec.NodeName == "" && cp.Name != "api-b" {
			cp.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		}
		written = append(written, cp)
	}
	v := snapshot.NewView(snapshot.ViewInput{
		Now: viewNow, Nodes: []*corev1.Node{viewNode("n1"), viewNode("n2"), viewNode("r1")},
		Pods: written, NominationTTL: time.Minute,
	})
	for name, node := range map[string]string{"web-a": "n1", "web-b": "n1", "web-c": "r1", "api-a": "n2", "api-c": "n2"} {
		if _, pending := v.Pending[engine.PodRef{Namespace: "default", Name: name}]; pending {
			t.Errorf("nominated pod %s is pending in the view", name)
		}
		found := false
		for _, p := range v.Pods {
			if at, _ := snapshot.Place(p, v.Placed); p.Name == name && at == node {
				found = true
			}
		}
		if !found {
			t.Errorf("nominated pod %s does not count on %s in the view", name, node)
		}
	}
	for _, name := range []string{"web-d", "api-b", "other"} {
		if _, pending := v.Pending[engine.PodRef{Namespace: "default", Name: name}]; !pending {
			t.Errorf("pod %s, not nominated, is not pending in the view", name)
		}
	}
}

func TestOwnerOf(t *testing.T) {
	p := viewPod("x", "", ownedBy("rs-uid", viewNow))
	if got := snapshot.OwnerOf(p); got != "rs-uid" {
		t.Errorf("OwnerOf(ReplicaSet pod) = %q", got)
	}
	p.OwnerReferences[0].Kind, p.OwnerReferences[0].APIVersion = "DaemonSet", "apps/v1"
	if got := snapshot.OwnerOf(p); got != "" {
		t.Errorf("OwnerOf(DaemonSet pod) = %q, want none", got)
	}
	p.OwnerReferences = nil
	if got := snapshot.OwnerOf(p); got != "" {
		t.Errorf("OwnerOf(bare pod) = %q, want none", got)
	}
}

// gatedPod is a pod the API server created behind a scheduling gate: it
// carries PodScheduled=False, reason SchedulingGated, until the gate goes.
func gatedPod(p *corev1.Pod) {
	p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "dovetail.sh/disruption-placement"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
}

// A gated pod waits for its gate, not for capacity: provisioning leaves
// it alone (and so launches nothing for a pod disruption is about to
// nominate), while Nominations still places it.
func TestGatedPodWaitsForItsGateNotForCapacity(t *testing.T) {
	p := viewPod("web-a", "", ownedBy("web", viewNow), gatedPod)
	if snapshot.WaitsForCapacity(p) {
		t.Error("a gated pod waits for capacity")
	}
	dest := snapshot.Destinations{}
	dest.Add("web", "n1", 1, 0)
	got := snapshot.Nominations(snapshot.NominationInput{Destinations: dest, Pods: []*corev1.Pod{p}})
	if len(got) != 1 || got[0].Node != "n1" {
		t.Errorf("nominations of a gated pod: %v, want n1", got)
	}
}
