package spreaddefaults

import (
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Objects are what a pod's selector is deduced from. Each list may hold
// objects of every namespace.
type Objects struct {
	Services               []*corev1.Service
	ReplicationControllers []*corev1.ReplicationController
	ReplicaSets            []*appsv1.ReplicaSet
	StatefulSets           []*appsv1.StatefulSet
	// Deployments are for `dovetail simulate` only, whose expanded pods
	// name their Deployment as controller (it makes no ReplicaSet between
	// them): such a pod's selector adds the Deployment's, as its
	// ReplicaSet's would (the ReplicaSet's pod-template-hash is on every
	// pod of one revision, and simulate has one). The controllers leave it
	// nil: kube-scheduler looks only at the three kinds above.
	Deployments []*appsv1.Deployment
}

var (
	rcKind         = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	rsKind         = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	stsKind        = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	deploymentKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
)

type nsName struct{ namespace, name string }

// Apply returns pods with the defaults given to each pod that has no
// topologySpreadConstraints of its own and a deduced selector (see the
// package doc), each constraint carrying that selector. Other pods are
// returned as they are; with no defaults, pods itself is returned. The
// result is in the order of pods; defaulted pods are new shallow copies.
func Apply(defaults []corev1.TopologySpreadConstraint, pods []*corev1.Pod, objs Objects) []*corev1.Pod {
	if len(defaults) == 0 {
		return pods
	}
	d := newDeducer(objs)
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = p
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			continue
		}
		sel := d.selector(p)
		if sel == nil {
			continue
		}
		cp := *p
		cp.Spec.TopologySpreadConstraints = make([]corev1.TopologySpreadConstraint, len(defaults))
		for j := range defaults {
			c := *defaults[j].DeepCopy()
			c.LabelSelector = sel.DeepCopy()
			cp.Spec.TopologySpreadConstraints[j] = c
		}
		out[i] = &cp
	}
	return out
}

// DeducedSelector is the selector kube-scheduler deduces for pod from objs
// (nil when there is none).
func DeducedSelector(pod *corev1.Pod, objs Objects) *metav1.LabelSelector {
	return newDeducer(objs).selector(pod)
}

type deducer struct {
	services map[string][]*corev1.Service // by namespace, in name order
	rcs      map[nsName]*corev1.ReplicationController
	rss      map[nsName]*appsv1.ReplicaSet
	stss     map[nsName]*appsv1.StatefulSet
	deps     map[nsName]*appsv1.Deployment
	// memo holds the selector of pods that share a namespace, a
	// controller and labels (a workload's pods, usually).
	memo map[string]*metav1.LabelSelector
}

func newDeducer(objs Objects) *deducer {
	d := &deducer{services: map[string][]*corev1.Service{}, rcs: map[nsName]*corev1.ReplicationController{},
		rss: map[nsName]*appsv1.ReplicaSet{}, stss: map[nsName]*appsv1.StatefulSet{}, deps: map[nsName]*appsv1.Deployment{},
		memo: map[string]*metav1.LabelSelector{}}
	for _, s := range objs.Services {
		d.services[s.Namespace] = append(d.services[s.Namespace], s)
	}
	for _, list := range d.services {
		slices.SortFunc(list, func(a, b *corev1.Service) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, o := range objs.ReplicationControllers {
		d.rcs[nsName{o.Namespace, o.Name}] = o
	}
	for _, o := range objs.ReplicaSets {
		d.rss[nsName{o.Namespace, o.Name}] = o
	}
	for _, o := range objs.StatefulSets {
		d.stss[nsName{o.Namespace, o.Name}] = o
	}
	for _, o := range objs.Deployments {
		d.deps[nsName{o.Namespace, o.Name}] = o
	}
	return d
}

func (d *deducer) selector(p *corev1.Pod) *metav1.LabelSelector {
	owner := metav1.GetControllerOfNoCopy(p)
	key := p.Namespace + "\x00" + labels.Set(p.Labels).String()
	if owner != nil {
		key += "\x00" + owner.APIVersion + "\x00" + owner.Kind + "\x00" + owner.Name
	}
	if sel, ok := d.memo[key]; ok {
		return sel
	}
	sel := d.deduce(p, owner)
	d.memo[key] = sel
	return sel
}

func (d *deducer) deduce(p *corev1.Pod, owner *metav1.OwnerReference) *metav1.LabelSelector {
	matchLabels := map[string]string{}
	podLabels := labels.Set(p.Labels)
	for _, svc := range d.services[p.Namespace] {
		// A Service without a selector selects nothing; an empty one
		// selects every pod and adds nothing.
		if svc.Spec.Selector == nil || !labels.SelectorFromValidatedSet(svc.Spec.Selector).Matches(podLabels) {
			continue
		}
		maps.Copy(matchLabels, svc.Spec.Selector)
	}
	var exprs []metav1.LabelSelectorRequirement
	if owner != nil {
		key := nsName{p.Namespace, owner.Name}
		gv, err := schema.ParseGroupVersion(owner.APIVersion)
		if err == nil {
			switch gv.WithKind(owner.Kind) {
			case rcKind:
				if rc := d.rcs[key]; rc != nil {
					maps.Copy(matchLabels, rc.Spec.Selector)
				}
			case rsKind:
				if rs := d.rss[key]; rs != nil {
					exprs = requirements(rs.Spec.Selector)
				}
			case stsKind:
				if sts := d.stss[key]; sts != nil {
					exprs = requirements(sts.Spec.Selector)
				}
			case deploymentKind:
				if dep := d.deps[key]; dep != nil {
					exprs = requirements(dep.Spec.Selector)
				}
			}
		}
	}
	// An empty selector would count every pod of the namespace:
	// kube-scheduler gives such a pod no defaults, and so does this.
	if len(matchLabels) == 0 && len(exprs) == 0 {
		return nil
	}
	sel := &metav1.LabelSelector{MatchExpressions: exprs}
	if len(matchLabels) > 0 {
		sel.MatchLabels = matchLabels
	}
	return sel
}

// requirements is a selector as requirements (matchLabels as single-value
// In, in key order, then its expressions), a copy.
func requirements(sel *metav1.LabelSelector) []metav1.LabelSelectorRequirement {
	if sel == nil {
		return nil
	}
	out := make([]metav1.LabelSelectorRequirement, 0, len(sel.MatchLabels)+len(sel.MatchExpressions))
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		out = append(out, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{sel.MatchLabels[k]}})
	}
	for i := range sel.MatchExpressions {
		out = append(out, *sel.MatchExpressions[i].DeepCopy())
	}
	return out
}
