package spreaddefaults_test

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

const peerDoc = `podTopologySpread:
  defaultConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: DoNotSchedule
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
`

func TestParseAcceptsThePeersDocument(t *testing.T) {
	for name, raw := range map[string]string{
		"yaml": peerDoc,
		"json": `{"podTopologySpread":{"defaultConstraints":[{"maxSkew":1,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule"},{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"DoNotSchedule"}]}}`,
	} {
		c, err := spreaddefaults.Parse([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := c.Constraints()
		if len(got) != 2 || got[0].TopologyKey != corev1.LabelHostname || got[1].TopologyKey != corev1.LabelTopologyZone ||
			got[1].MaxSkew != 1 || got[1].WhenUnsatisfiable != corev1.DoNotSchedule {
			t.Errorf("%s: constraints %+v", name, got)
		}
	}
	for _, empty := range []string{"", "  \n", "{}", "podTopologySpread: {}"} {
		c, err := spreaddefaults.Parse([]byte(empty))
		if err != nil || len(c.Constraints()) != 0 {
			t.Errorf("Parse(%q) = %v, %v; want no constraints", empty, c.Constraints(), err)
		}
	}
}

func TestParseRefusesEachRuleNamingTheField(t *testing.T) {
	one := func(body string) string {
		return "podTopologySpread:\n  defaultConstraints:\n    - " + strings.ReplaceAll(strings.TrimSpace(body), "\n", "\n      ") + "\n"
	}
	ok := "maxSkew: 1\ntopologyKey: topology.kubernetes.io/zone\nwhenUnsatisfiable: DoNotSchedule"
	for _, tc := range []struct {
		name, raw string
		want      []string
	}{
		{"maxSkew zero", one("maxSkew: 0\ntopologyKey: topology.kubernetes.io/zone\nwhenUnsatisfiable: DoNotSchedule"),
			[]string{"podTopologySpread.defaultConstraints[0].maxSkew", "greater than 0"}},
		{"maxSkew negative", one("maxSkew: -2\ntopologyKey: topology.kubernetes.io/zone\nwhenUnsatisfiable: DoNotSchedule"),
			[]string{"defaultConstraints[0].maxSkew"}},
		{"topologyKey missing", one("maxSkew: 1\nwhenUnsatisfiable: DoNotSchedule"),
			[]string{"podTopologySpread.defaultConstraints[0].topologyKey", "Required"}},
		{"topologyKey not a qualified name", one("maxSkew: 1\ntopologyKey: 'a b/c'\nwhenUnsatisfiable: DoNotSchedule"),
			[]string{"podTopologySpread.defaultConstraints[0].topologyKey", "a b/c"}},
		{"whenUnsatisfiable missing", one("maxSkew: 1\ntopologyKey: kubernetes.io/hostname"),
			[]string{"podTopologySpread.defaultConstraints[0].whenUnsatisfiable", "DoNotSchedule", "ScheduleAnyway"}},
		{"whenUnsatisfiable other", one("maxSkew: 1\ntopologyKey: kubernetes.io/hostname\nwhenUnsatisfiable: Sometimes"),
			[]string{"podTopologySpread.defaultConstraints[0].whenUnsatisfiable", "Sometimes"}},
		{"labelSelector", one(ok + "\nlabelSelector: {matchLabels: {app: web}}"),
			[]string{"podTopologySpread.defaultConstraints[0].labelSelector", "deduced"}},
		{"matchLabelKeys", one(ok + "\nmatchLabelKeys: [pod-template-hash]"),
			[]string{"podTopologySpread.defaultConstraints[0].matchLabelKeys"}},
		{"duplicate", "podTopologySpread:\n  defaultConstraints:\n" +
			"    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n" +
			"    - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}\n" +
			"    - {maxSkew: 3, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n",
			[]string{"podTopologySpread.defaultConstraints[2]", "Duplicate", "as [0]"}},
		{"unknown top-level field", "podTopologySpread: {}\nprofiles: []\n", []string{"profiles"}},
		{"unknown constraint field", one(ok + "\nmaxskew: 2"), []string{"maxskew"}},
		{"malformed", "podTopologySpread: [", []string{"decoding"}},
		{"wrong type", "podTopologySpread:\n  defaultConstraints:\n    maxSkew: 1\n", []string{"decoding"}},
	} {
		_, err := spreaddefaults.Parse([]byte(tc.raw))
		if err == nil {
			t.Errorf("%s: accepted:\n%s", tc.name, tc.raw)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
	// The same constraint key with the other whenUnsatisfiable is not a duplicate.
	if _, err := spreaddefaults.Parse([]byte("podTopologySpread:\n  defaultConstraints:\n" +
		"    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n" +
		"    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}\n")); err != nil {
		t.Errorf("zone DoNotSchedule + ScheduleAnyway: %v", err)
	}
}

func defaults(t *testing.T) []corev1.TopologySpreadConstraint {
	t.Helper()
	c, err := spreaddefaults.Parse([]byte(peerDoc))
	if err != nil {
		t.Fatal(err)
	}
	return c.Constraints()
}

func pod(ns, name string, labels map[string]string, owner ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owner}}
}

func controller(apiVersion, kind, name string) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u-" + "name", Controller: &yes}
}

func TestApplyDeducesTheSelectorAsKubeScheduler(t *testing.T) {
	def := defaults(t)
	web := map[string]string{"app": "web", "tier": "front"}
	objs := spreaddefaults.Objects{
		Services: []*corev1.Service{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "front"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"tier": "front"}}},
			// Other namespace, same selector: not the pod's.
			{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web", "zone": "x"}}},
			// No selector: selects nothing. Empty selector: selects all, adds nothing.
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "external"}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "all"}, Spec: corev1.ServiceSpec{Selector: map[string]string{}}},
			// Does not match the pod.
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "db"}}},
		},
		ReplicationControllers: []*corev1.ReplicationController{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "rc"}, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"rc": "x"}}},
		},
		ReplicaSets: []*appsv1.ReplicaSet{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "rs"}, Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{
				MatchLabels:      map[string]string{"pod-template-hash": "abc", "app": "web"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}}},
			}}},
		},
		StatefulSets: []*appsv1.StatefulSet{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "db"}, Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
		},
	}
	in := func(k string, v ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: v}
	}
	own := []corev1.TopologySpreadConstraint{{MaxSkew: 5, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	withOwn := pod("a", "own", web)
	withOwn.Spec.TopologySpreadConstraints = own
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want *metav1.LabelSelector // nil: untouched
	}{
		{"Service-selected pod", pod("a", "svc", web),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}},
		{"ReplicaSet pod, merged with its Services", pod("a", "rs-1", web, controller("apps/v1", "ReplicaSet", "rs")),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"},
				MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "web"), in("pod-template-hash", "abc"),
					{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}}}}},
		{"ReplicaSet pod, no Service", pod("c", "rs-1", web, controller("apps/v1", "ReplicaSet", "rs")), nil},
		{"StatefulSet pod, no Service", pod("a", "db-0", map[string]string{"app": "dbx"}, controller("apps/v1", "StatefulSet", "db")),
			&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "db")}}},
		{"StatefulSet pod with the db Service", pod("a", "db-1", map[string]string{"app": "db"}, controller("apps/v1", "StatefulSet", "db")),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}, MatchExpressions: []metav1.LabelSelectorRequirement{in("app", "db")}}},
		{"ReplicationController pod: labels merged", pod("a", "rc-1", map[string]string{"rc": "x", "app": "web"}, controller("v1", "ReplicationController", "rc")),
			&metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "rc": "x"}}},
		{"own constraints untouched", withOwn, nil},
		{"nothing deducible", pod("a", "lonely", map[string]string{"app": "lonely"}), nil},
		{"Job pod: not a kind kube-scheduler reads", pod("a", "job-1", map[string]string{"job": "x"}, controller("batch/v1", "Job", "job")), nil},
		{"ReplicaSet of another group", pod("a", "x-1", map[string]string{"job": "x"}, controller("example.com/v1", "ReplicaSet", "rs")), nil},
		{"owner missing", pod("a", "gone-1", map[string]string{"gone": "x"}, controller("apps/v1", "ReplicaSet", "gone")), nil},
	} {
		orig := tc.pod.DeepCopy()
		out := spreaddefaults.Apply(def, []*corev1.Pod{tc.pod}, objs)
		if len(out) != 1 {
			t.Fatalf("%s: %d pods", tc.name, len(out))
		}
		if !reflect.DeepEqual(tc.pod, orig) {
			t.Errorf("%s: the input pod was modified", tc.name)
		}
		got := out[0]
		if tc.want == nil {
			if got != tc.pod {
				t.Errorf("%s: got a new pod with %+v, want the pod untouched", tc.name, got.Spec.TopologySpreadConstraints)
			}
			continue
		}
		if got == tc.pod {
			t.Errorf("%s: pod not defaulted", tc.name)
			continue
		}
		tscs := got.Spec.TopologySpreadConstraints
		if len(tscs) != len(def) {
			t.Fatalf("%s: %d constraints, want %d", tc.name, len(tscs), len(def))
		}
		for i, c := range tscs {
			if c.TopologyKey != def[i].TopologyKey || c.MaxSkew != def[i].MaxSkew || c.WhenUnsatisfiable != def[i].WhenUnsatisfiable {
				t.Errorf("%s: constraint %d = %+v, want %+v", tc.name, i, c, def[i])
			}
			if !reflect.DeepEqual(c.LabelSelector, tc.want) {
				t.Errorf("%s: constraint %d selector = %+v, want %+v", tc.name, i, c.LabelSelector, tc.want)
			}
		}
		if def[0].LabelSelector != nil {
			t.Errorf("%s: the defaults were modified", tc.name)
		}
	}
}

func TestApplyWithoutDefaultsReturnsThePods(t *testing.T) {
	pods := []*corev1.Pod{pod("a", "x", map[string]string{"app": "web"})}
	objs := spreaddefaults.Objects{Services: []*corev1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}}}
	if out := spreaddefaults.Apply(nil, pods, objs); &out[0] != &pods[0] {
		t.Errorf("no defaults: got a new slice")
	}
	// Pods of one workload each get constraints of their own.
	def := defaults(t)
	two := []*corev1.Pod{pod("a", "x", map[string]string{"app": "web"}), pod("a", "y", map[string]string{"app": "web"})}
	out := spreaddefaults.Apply(def, two, objs)
	if &out[0].Spec.TopologySpreadConstraints[0] == &out[1].Spec.TopologySpreadConstraints[0] ||
		out[0].Spec.TopologySpreadConstraints[0].LabelSelector == out[1].Spec.TopologySpreadConstraints[0].LabelSelector {
		t.Errorf("two pods share their constraints")
	}
}
