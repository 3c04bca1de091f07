package snapshot_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

var viewNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func viewNode(name string, mut ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"own": "yes"}}}
	n.Spec.ProviderID = "aws:///z1/" + name
	for _, m := range mut {
		m(n)
	}
	return n
}

func viewClaim(name, node string, initialized bool, mut ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"own": "claim", "from-claim": "x"}}}
	if node != "" {
		nc.Status.ProviderID = "aws:///z1/" + node
		nc.Status.NodeName = node
	}
	if initialized {
		nc.Status.Conditions = []karpv1.Condition{{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue}}
	}
	for _, m := range mut {
		m(nc)
	}
	return nc
}

// viewPod: an owned (movable) pod; bound when node != "", else unschedulable.
func viewPod(name, node string, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := pod("default", name, func(p *corev1.Pod) {
		p.UID = types.UID("uid-" + name)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
		p.Spec.NodeName = node
		if node == "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
		}
	})
	for _, m := range mut {
		m(p)
	}
	return p
}

func owner(kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: "o", Controller: ptr.To(true)}}
		if kind == "" {
			p.OwnerReferences = nil
		}
	}
}

// where summarises a pod of the view: "bound:N", "nominated:C", "pending".
func where(v *snapshot.View, p *corev1.Pod) string {
	node, nominated := snapshot.Place(p, v.Placed)
	switch {
	case node != "":
		return "bound:" + node
	case nominated != "":
		return "nominated:" + nominated
	}
	return "pending"
}

func taintKeys(n *corev1.Node) []string {
	var out []string
	for _, t := range n.Spec.Taints {
		out = append(out, t.Key+":"+string(t.Effect))
	}
	return out
}

func TestNewView(t *testing.T) {
	disrupted := karpv1.DisruptedTaintKey + ":NoSchedule"
	tests := []struct {
		name string
		in   snapshot.ViewInput
		// pods: where each pod of the view is, by name; absent pods are
		// left out of the view.
		pods      map[string]string
		pending   []string
		evacuated []string
		dropped   []string
		taints    map[string][]string // node -> taints in the view
		labels    map[string]map[string]string
		inFlight  []string
		waiting   int
		nominated int
	}{
		{
			name: "initializing node gets the claim's labels and sheds transient and startup taints",
			in: snapshot.ViewInput{
				Nodes: []*corev1.Node{viewNode("n1", func(n *corev1.Node) {
					n.Spec.Taints = []corev1.Taint{
						{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoExecute},
						{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
						{Key: "startup", Value: "v", Effect: corev1.TaintEffectNoSchedule},
						{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule},
					}
				})},
				NodeClaims: []*karpv1.NodeClaim{viewClaim("c1", "n1", false, func(nc *karpv1.NodeClaim) {
					nc.Spec.StartupTaints = []corev1.Taint{{Key: "startup", Value: "v", Effect: corev1.TaintEffectNoSchedule}}
				})},
			},
			taints: map[string][]string{"n1": {"dedicated:NoSchedule"}},
			labels: map[string]map[string]string{"n1": {"own": "yes", "from-claim": "x"}},
		},
		{
			name: "initialized node is left as it is",
			in: snapshot.ViewInput{
				Nodes: []*corev1.Node{viewNode("n1", func(n *corev1.Node) {
					n.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}}
				})},
				NodeClaims: []*karpv1.NodeClaim{viewClaim("c1", "n1", true)},
			},
			taints: map[string][]string{"n1": {corev1.TaintNodeNotReady + ":NoSchedule"}},
			labels: map[string]map[string]string{"n1": {"own": "yes"}},
		},
		{
			name: "evacuating, replaced-by and leaving nodes get the disrupted taint once; their pods stay",
			in: snapshot.ViewInput{
				Nodes: []*corev1.Node{
					viewNode("evac"),
					viewNode("already", func(n *corev1.Node) {
						n.Spec.Taints = []corev1.Taint{{Key: karpv1.DisruptedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
					}),
					viewNode("replaced"),
					viewNode("deleting", func(n *corev1.Node) { n.DeletionTimestamp = &metav1.Time{Time: viewNow} }),
					viewNode("claimdeleting"),
					viewNode("plain"),
				},
				NodeClaims: []*karpv1.NodeClaim{
					viewClaim("c-replaced", "replaced", true, func(nc *karpv1.NodeClaim) {
						nc.Annotations = map[string]string{snapshot.ReplacedByAnnotationKey: "r1"}
					}),
					viewClaim("c-del", "claimdeleting", true, func(nc *karpv1.NodeClaim) {
						nc.DeletionTimestamp = &metav1.Time{Time: viewNow}
						nc.Finalizers = []string{"f"}
					}),
				},
				Pods:       []*corev1.Pod{viewPod("a", "evac"), viewPod("b", "deleting"), viewPod("c", "replaced")},
				Evacuating: map[string]bool{"evac": true, "already": true},
			},
			pods: map[string]string{"a": "bound:evac", "b": "bound:deleting", "c": "bound:replaced"},
			taints: map[string][]string{
				"evac": {disrupted}, "already": {disrupted}, "replaced": {disrupted},
				"deleting": {disrupted}, "claimdeleting": {disrupted}, "plain": nil,
			},
		},
		{
			name: "evacuate: movable pods become pending; DaemonSet, unowned and mirror pods stay",
			in: snapshot.ViewInput{
				Nodes: []*corev1.Node{viewNode("n1"), viewNode("n2")},
				Pods: []*corev1.Pod{
					viewPod("web", "n1"),
					viewPod("ds", "n1", owner("DaemonSet")),
					viewPod("bare", "n1", owner("")),
					viewPod("mirror", "n1", func(p *corev1.Pod) {
						p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
					}),
					viewPod("other", "n2"),
				},
				Evacuate: map[string]bool{"n1": true},
			},
			pods:      map[string]string{"web": "pending", "ds": "bound:n1", "bare": "bound:n1", "mirror": "bound:n1", "other": "bound:n2"},
			pending:   []string{"web"},
			evacuated: []string{"web"},
			taints:    map[string][]string{"n1": {disrupted}, "n2": nil},
		},
		{
			name: "nominations: held, expired, launched, gone",
			in: snapshot.ViewInput{
				Now:        viewNow,
				Nodes:      []*corev1.Node{viewNode("n1")},
				NodeClaims: []*karpv1.NodeClaim{viewClaim("flying", "", false), viewClaim("landed", "n1", false)},
				Pods: []*corev1.Pod{
					viewPod("to-node", ""), viewPod("to-node-expired", ""), viewPod("to-flying", ""),
					viewPod("to-landed", ""), viewPod("to-gone-node", ""), viewPod("plain", ""),
				},
				Nominations: map[types.UID]snapshot.Nomination{
					"uid-to-node":         {Target: "n1", Until: viewNow.Add(time.Second)},
					"uid-to-node-expired": {Target: "n1", Until: viewNow},
					"uid-to-flying":       {Target: "flying", InFlight: true},
					"uid-to-landed":       {Target: "landed", InFlight: true},
					"uid-to-gone-node":    {Target: "gone", Until: viewNow.Add(time.Hour)},
				},
			},
			pods: map[string]string{
				"to-node": "bound:n1", "to-node-expired": "pending", "to-flying": "nominated:flying",
				"to-landed": "pending", "to-gone-node": "pending", "plain": "pending",
			},
			pending:   []string{"to-node-expired", "to-landed", "to-gone-node", "plain"},
			dropped:   []string{"to-node-expired", "to-landed", "to-gone-node"},
			inFlight:  []string{"flying"},
			waiting:   6,
			nominated: 1,
		},
		{
			name: "a bound pod ends a pending pod's nomination; an evacuee's outlives it while its node evacuates",
			in: snapshot.ViewInput{
				Now:        viewNow,
				Nodes:      []*corev1.Node{viewNode("n1"), viewNode("old"), viewNode("stopped")},
				NodeClaims: []*karpv1.NodeClaim{viewClaim("repl", "", false)},
				Pods: []*corev1.Pod{
					viewPod("was-pending", "n1"), viewPod("evacuee", "old"), viewPod("evacuee-done", "stopped"),
				},
				Nominations: map[types.UID]snapshot.Nomination{
					"uid-was-pending":  {Target: "repl", InFlight: true},
					"uid-evacuee":      {Target: "repl", InFlight: true, Evacuee: true},
					"uid-evacuee-done": {Target: "repl", InFlight: true, Evacuee: true},
				},
				Evacuating: map[string]bool{"old": true},
			},
			pods:     map[string]string{"was-pending": "bound:n1", "evacuee": "nominated:repl", "evacuee-done": "bound:stopped"},
			dropped:  []string{"was-pending", "evacuee-done"},
			inFlight: []string{"repl"},
			taints:   map[string][]string{"old": {disrupted}, "n1": nil},
		},
		{
			name: "scheduler nominations hold room unless handed off longer than the TTL ago",
			in: snapshot.ViewInput{
				Now:   viewNow,
				Nodes: []*corev1.Node{viewNode("n1")},
				Pods: []*corev1.Pod{
					viewPod("sched", "", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }),
					viewPod("handed-recent", "", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }),
					viewPod("handed-old", "", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }),
					viewPod("to-missing", "", func(p *corev1.Pod) { p.Status.NominatedNodeName = "nope" }),
				},
				Nominations:   map[types.UID]snapshot.Nomination{"uid-handed-recent": {Target: "n1", Until: viewNow.Add(time.Minute)}},
				HandedOff:     map[types.UID]time.Time{"uid-handed-recent": viewNow.Add(-time.Second), "uid-handed-old": viewNow.Add(-time.Minute)},
				NominationTTL: 30 * time.Second,
			},
			pods:    map[string]string{"sched": "bound:n1", "handed-recent": "bound:n1", "handed-old": "nominated:n1", "to-missing": "nominated:nope"}, // pending, status untouched,
			pending: []string{"handed-old", "to-missing"},
			dropped: []string{"handed-recent"},
			waiting: 4,
		},
		{
			name: "terminal, deleting and DaemonSet pods are not pending; claims being deleted are not in flight",
			in: snapshot.ViewInput{
				Nodes: []*corev1.Node{viewNode("n1")},
				NodeClaims: []*karpv1.NodeClaim{
					viewClaim("flying", "", false),
					viewClaim("by-name", "n1", false, func(nc *karpv1.NodeClaim) { nc.Status.ProviderID = "" }),
					viewClaim("dying", "", false, func(nc *karpv1.NodeClaim) { nc.DeletionTimestamp = &metav1.Time{Time: viewNow} }),
				},
				Pods: []*corev1.Pod{
					viewPod("done", "", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
					viewPod("done-bound", "n1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
					viewPod("deleting", "", func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: viewNow} }),
					viewPod("ds", "", owner("DaemonSet")),
					viewPod("scheduling", "", func(p *corev1.Pod) { p.Status.Conditions = nil }),
				},
			},
			pods:     map[string]string{},
			inFlight: []string{"flying"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := fmt.Sprintf("%v", tc.in.Nodes)
			v := snapshot.NewView(tc.in)
			if after := fmt.Sprintf("%v", tc.in.Nodes); after != before {
				t.Errorf("NewView modified its input nodes")
			}
			gotPods := map[string]string{}
			// Only the pods moved off an evacuated node are copies; the
			// rest, nominated ones included, are the input's own.
			input := map[*corev1.Pod]bool{}
			for _, p := range tc.in.Pods {
				input[p] = true
			}
			for _, p := range v.Pods {
				if !input[p] && !v.Evacuated[engine.PodRef{Namespace: p.Namespace, Name: p.Name}] {
					t.Errorf("pod %s (%s) is a copy in the view", p.Name, where(v, p))
				}
			}
			for _, p := range v.Pods {
				if _, dup := gotPods[p.Name]; dup {
					t.Errorf("pod %s twice in the view", p.Name)
				}
				gotPods[p.Name] = where(v, p)
			}
			if tc.pods != nil && !reflect.DeepEqual(gotPods, tc.pods) {
				t.Errorf("pods = %v, want %v", gotPods, tc.pods)
			}
			var pending, evacuated, dropped, inFlight []string
			for ref := range v.Pending {
				pending = append(pending, ref.Name)
			}
			for ref := range v.Evacuated {
				evacuated = append(evacuated, ref.Name)
			}
			for _, uid := range v.Dropped {
				dropped = append(dropped, string(uid)[len("uid-"):])
			}
			for name := range v.InFlight {
				inFlight = append(inFlight, name)
			}
			for _, s := range [][]string{pending, evacuated, dropped, inFlight, tc.pending, tc.evacuated, tc.dropped, tc.inFlight} {
				slices.Sort(s)
			}
			check := func(what string, got, want []string) {
				if !slices.Equal(got, want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("pending", pending, tc.pending)
			check("evacuated", evacuated, tc.evacuated)
			check("dropped", dropped, tc.dropped)
			check("in flight", inFlight, tc.inFlight)
			if v.Waiting != tc.waiting || v.Nominated != tc.nominated {
				t.Errorf("waiting, nominated = %d, %d, want %d, %d", v.Waiting, v.Nominated, tc.waiting, tc.nominated)
			}
			byName := map[string]*corev1.Node{}
			for _, n := range v.Nodes {
				byName[n.Name] = n
			}
			for name, want := range tc.taints {
				if got := taintKeys(byName[name]); !slices.Equal(got, want) {
					t.Errorf("node %s taints = %v, want %v", name, got, want)
				}
			}
			for name, want := range tc.labels {
				if got := byName[name].Labels; !reflect.DeepEqual(got, want) {
					t.Errorf("node %s labels = %v, want %v", name, got, want)
				}
			}
		})
	}
}

// TestViewBuildsMarkedForDeletion: a node the view gave the disrupted taint
// is MarkedForDeletion in the snapshot, so the engine places nothing there.
func TestViewBuildsMarkedForDeletion(t *testing.T) {
	v := snapshot.NewView(snapshot.ViewInput{
		Nodes:      []*corev1.Node{viewNode("evac"), viewNode("keep")},
		Evacuating: map[string]bool{"evac": true},
	})
	in, err := snapshot.Build(&snapshot.Cluster{Nodes: v.Nodes}, snapshot.StaticSource(nil), snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range in.Nodes {
		got[n.Node.Name] = n.MarkedForDeletion
	}
	if want := map[string]bool{"evac": true, "keep": false}; !reflect.DeepEqual(got, want) {
		t.Errorf("MarkedForDeletion = %v, want %v", got, want)
	}
}

// The untried pods of a controller with a pod waiting for capacity are
// pending with it (a burst the scheduler has not worked through yet is
// planned whole); untried pods of other controllers, gated ones, those
// without a controller and those the scheduler tried and bound are not.
func TestViewPendsTheUntriedPodsOfAShortController(t *testing.T) {
	untried := func(p *corev1.Pod) { p.Status.Conditions = nil }
	ownedBy := func(uid string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: uid, UID: types.UID(uid), Controller: ptr.To(true)}}
		}
	}
	gated := func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "hold"}} }
	v := snapshot.NewView(snapshot.ViewInput{Now: viewNow, Nodes: []*corev1.Node{viewNode("n1")}, Pods: []*corev1.Pod{
		viewPod("web-0", "", ownedBy("web")),
		viewPod("web-1", "", ownedBy("web"), untried),
		viewPod("web-2", "", ownedBy("web"), untried),
		viewPod("web-gated", "", ownedBy("web"), untried, gated),
		viewPod("web-bound", "n1", ownedBy("web")),
		viewPod("api-0", "", ownedBy("api"), untried),
		viewPod("bare", "", owner(""), untried),
	}})
	var got []string
	for ref := range v.Pending {
		got = append(got, ref.Name)
	}
	slices.Sort(got)
	if want := []string{"web-0", "web-1", "web-2"}; !slices.Equal(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
	if v.Waiting != 3 {
		t.Errorf("waiting %d, want 3", v.Waiting)
	}
	// Without the pod waiting for capacity, none is pending.
	v = snapshot.NewView(snapshot.ViewInput{Now: viewNow, Pods: []*corev1.Pod{viewPod("web-1", "", ownedBy("web"), untried)}})
	if len(v.Pending) != 0 {
		t.Errorf("an untried pod of a controller with no pod waiting is pending: %v", v.Pending)
	}
}
