package oracle_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// bindOrder picks the order to submit the pods in so that each one is
// placeable on its planned node once the ones before it are bound. The
// scheduler checks topology spread and pod affinity against the pods bound
// at that moment, so a final placement that satisfies every constraint can
// still dead-end when the pods bind in an unlucky order (two pods each
// waiting for the other to even out a different spread). The plan gives a
// placement, not a global order, so the oracle builds one greedily: at each
// step the first pod of base (plan order, interleaved across NodeClaims)
// that the model below accepts. running pods are bound from the start.
//
// The model mirrors kube-scheduler's PodTopologySpread filter (eligible
// nodes per nodeAffinityPolicy and nodeTaintsPolicy, domains, minDomains,
// selfMatch) and the required pod affinity of InterPodAffinity; required
// anti-affinity needs no ordering (a final state without conflicts has
// none at any earlier point). It only chooses the order: the real scheduler
// still judges every pod, so a wrong model can cause a false failure, never
// a false pass. stuck counts the steps where no pod was acceptable and the
// next one in base order was taken anyway.
func bindOrder(pods map[string]*corev1.Pod, planned map[string]string, nodes map[string]*corev1.Node, running map[string]bool, base []string) (order []string, stuck int) {
	bound := maps.Clone(running)
	remaining := append([]string(nil), base...)
	for len(remaining) > 0 {
		pick := -1
		for i, name := range remaining {
			if placeable(pods[name], nodes[planned[name]], pods, planned, nodes, bound) {
				pick = i
				break
			}
		}
		if pick < 0 {
			pick = 0
			stuck++
		}
		name := remaining[pick]
		remaining = append(remaining[:pick], remaining[pick+1:]...)
		bound[name] = true
		order = append(order, name)
	}
	return order, stuck
}

func placeable(p *corev1.Pod, n *corev1.Node, pods map[string]*corev1.Pod, planned map[string]string, nodes map[string]*corev1.Node, bound map[string]bool) bool {
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		if !spreadOK(p, n, c, pods, planned, nodes, bound) {
			return false
		}
	}
	if p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil {
		for _, term := range p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if !affinityOK(p, n, term, pods, planned, nodes, bound) {
				return false
			}
		}
	}
	return true
}

func selectorOf(ls *metav1.LabelSelector) labels.Selector {
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

func spreadOK(p *corev1.Pod, target *corev1.Node, c corev1.TopologySpreadConstraint, pods map[string]*corev1.Pod, planned map[string]string, nodes map[string]*corev1.Node, bound map[string]bool) bool {
	honorAffinity := c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	required := nodeaffinity.GetRequiredNodeAffinity(p)
	eligible := func(n *corev1.Node) bool {
		if _, ok := n.Labels[c.TopologyKey]; !ok {
			return false
		}
		if honorAffinity {
			if ok, _ := required.Match(n); !ok {
				return false
			}
		}
		if honorTaints {
			_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, p.Spec.Tolerations, func(t *corev1.Taint) bool {
				return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
			}, true)
			if untolerated {
				return false
			}
		}
		return true
	}
	sel := selectorOf(c.LabelSelector)
	counts := map[string]int{}
	for _, n := range nodes {
		if eligible(n) {
			counts[n.Labels[c.TopologyKey]] += 0
		}
	}
	for name, ok := range bound {
		if !ok {
			continue
		}
		q := pods[name]
		n := nodes[planned[name]]
		if q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) && eligible(n) {
			counts[n.Labels[c.TopologyKey]]++
		}
	}
	minCount := -1
	for _, v := range counts {
		if minCount < 0 || v < minCount {
			minCount = v
		}
	}
	if minCount < 0 || (c.MinDomains != nil && int32(len(counts)) < *c.MinDomains) {
		minCount = 0
	}
	self := 0
	if sel.Matches(labels.Set(p.Labels)) {
		self = 1
	}
	return int32(counts[target.Labels[c.TopologyKey]]+self-minCount) <= c.MaxSkew
}

func affinityOK(p *corev1.Pod, target *corev1.Node, term corev1.PodAffinityTerm, pods map[string]*corev1.Pod, planned map[string]string, nodes map[string]*corev1.Node, bound map[string]bool) bool {
	sel := selectorOf(term.LabelSelector)
	value, ok := target.Labels[term.TopologyKey]
	if !ok {
		return false
	}
	anywhere := false
	for name, b := range bound {
		if !b {
			continue
		}
		q := pods[name]
		if q.Namespace != p.Namespace || !sel.Matches(labels.Set(q.Labels)) {
			continue
		}
		anywhere = true
		if nodes[planned[name]].Labels[term.TopologyKey] == value {
			return true
		}
	}
	// The first pod of a group that matches its own term may go anywhere.
	return !anywhere && sel.Matches(labels.Set(p.Labels))
}

func TestBindOrder(t *testing.T) {
	node := func(name, zone string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}}}
	}
	nodes := map[string]*corev1.Node{"a1": node("a1", "a"), "a2": node("a2", "a"), "b1": node("b1", "b")}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	spread := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel}}}}
	}
	follower := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "follower", Namespace: "ns", Labels: map[string]string{"app": "f"}},
		Spec: corev1.PodSpec{Affinity: &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "leader"}}, TopologyKey: corev1.LabelTopologyZone}}}}}}
	leader := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "ns", Labels: map[string]string{"app": "leader"}}}
	pods := map[string]*corev1.Pod{"w1": spread("w1"), "w2": spread("w2"), "w3": spread("w3"), "w4": spread("w4"), "follower": follower, "leader": leader}
	planned := map[string]string{"w1": "a1", "w2": "a2", "w3": "b1", "w4": "b1", "follower": "b1", "leader": "b1"}

	tests := []struct {
		name      string
		base      []string
		running   map[string]bool
		want      []string
		wantStuck int
	}{
		{name: "spread is interleaved", base: []string{"w1", "w2", "w3", "w4"}, want: []string{"w1", "w3", "w2", "w4"}},
		{name: "affinity waits for its target", base: []string{"follower", "leader"}, want: []string{"leader", "follower"}},
		{name: "running pods count", base: []string{"w3", "w4"}, running: map[string]bool{"w1": true, "w2": true}, want: []string{"w3", "w4"}},
		{name: "a dead end is reported", base: []string{"w1", "w2"}, want: []string{"w1", "w2"}, wantStuck: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			running := tc.running
			if running == nil {
				running = map[string]bool{}
			}
			got, stuck := bindOrder(pods, planned, nodes, running, tc.base)
			if !slices.Equal(got, tc.want) || stuck != tc.wantStuck {
				t.Errorf("order %v stuck %d, want %v stuck %d", got, stuck, tc.want, tc.wantStuck)
			}
		})
	}
}
