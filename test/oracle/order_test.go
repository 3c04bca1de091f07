package oracle_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
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
// that the model below accepts, backtracking out of dead ends (a
// depth-first search with a work budget). running pods are bound from the
// start.
//
// The model mirrors kube-scheduler's PodTopologySpread filter (eligible
// nodes per nodeAffinityPolicy and nodeTaintsPolicy, domains, minDomains,
// selfMatch) and the required pod affinity of InterPodAffinity; required
// anti-affinity needs no ordering (a final state without conflicts has
// none at any earlier point). It only chooses the order: the real scheduler
// still judges every pod, so a wrong model can cause a false failure, never
// a false pass. When the search finds no order within its budget, the pods
// go greedily and stuck counts the steps where no pod was acceptable and
// the next one in base order was taken anyway.
func bindOrder(pods map[string]*corev1.Pod, planned map[string]string, nodes map[string]*corev1.Node, running map[string]bool, base []string) (order []string, stuck int) {
	o := &orderer{pods: pods, planned: planned, nodes: nodes, bound: maps.Clone(running), failed: map[string]bool{}, budget: orderBudget}
	if o.search(slices.Clone(base)) {
		return o.order, 0
	}
	// No order found within the budget: greedy, taking the next pod in
	// base order whenever none is placeable.
	bound := maps.Clone(running)
	remaining := slices.Clone(base)
	for len(remaining) > 0 {
		pick := slices.IndexFunc(remaining, func(name string) bool {
			return placeable(pods[name], nodes[planned[name]], pods, planned, nodes, bound)
		})
		if pick < 0 {
			pick = 0
			stuck++
		}
		bound[remaining[pick]] = true
		order = append(order, remaining[pick])
		remaining = slices.Delete(remaining, pick, pick+1)
	}
	return order, stuck
}

// orderBudget caps the placeability checks of the backtracking search.
const orderBudget = 200_000

// orderer is a depth-first search for a bind order, preferring base order
// at every step and remembering dead-end states. Pods with the same labels
// and spec on the same node are interchangeable, so a state is the
// multiset of (pod signature, node) bound so far.
type orderer struct {
	pods    map[string]*corev1.Pod
	planned map[string]string
	nodes   map[string]*corev1.Node
	bound   map[string]bool
	order   []string
	failed  map[string]bool
	budget  int
	sigs    map[string]string
}

func (o *orderer) sig(name string) string {
	if o.sigs == nil {
		o.sigs = map[string]string{}
	}
	s, ok := o.sigs[name]
	if !ok {
		s = signature(o.pods[name]) + "@" + o.planned[name]
		o.sigs[name] = s
	}
	return s
}

func (o *orderer) search(remaining []string) bool {
	if len(remaining) == 0 {
		return true
	}
	key := o.key()
	if o.failed[key] {
		return false
	}
	tried := map[string]bool{}
	for i, name := range remaining {
		if o.budget <= 0 {
			return false
		}
		// Interchangeable pods need trying once per step.
		sig := o.sig(name)
		if tried[sig] {
			continue
		}
		tried[sig] = true
		o.budget--
		if !placeable(o.pods[name], o.nodes[o.planned[name]], o.pods, o.planned, o.nodes, o.bound) {
			continue
		}
		o.bound[name] = true
		o.order = append(o.order, name)
		rest := append(slices.Clone(remaining[:i]), remaining[i+1:]...)
		if o.search(rest) {
			return true
		}
		delete(o.bound, name)
		o.order = o.order[:len(o.order)-1]
	}
	if o.budget > 0 {
		o.failed[key] = true
	}
	return false
}

func (o *orderer) key() string {
	var parts []string
	for name, b := range o.bound {
		if b {
			parts = append(parts, o.sig(name))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, "|")
}

// signature identifies pods that constraints cannot tell apart: same
// namespace, labels and spec.
func signature(p *corev1.Pod) string {
	spec := p.Spec.DeepCopy()
	spec.Volumes = nil // per-pod claims; zones are in the planned node
	data, _ := json.Marshal(struct {
		NS     string
		Labels map[string]string
		Spec   *corev1.PodSpec
	}{p.Namespace, p.Labels, spec})
	return string(data)
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
