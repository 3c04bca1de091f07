package oracle_test

import (
	"maps"

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
