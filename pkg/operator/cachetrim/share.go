package cachetrim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// shareLimit bounds each table of shared values: when a table is full it
// starts over, so a cluster whose pods all differ (a label unique to each
// pod) costs a bounded table, not one entry per pod.
const shareLimit = 4096

// sharer hands out one shared instance of equal values: the pods of one
// ReplicaSet carry equal labels, owner references, node selectors,
// tolerations and container resources, and a cached pod is never changed
// (see ByObject), so they can all point at one copy. Strings that repeat
// across pods (namespace, generateName, scheduler and service account
// names) are interned with package unique.
type sharer struct {
	mu        sync.Mutex
	maps      map[string]map[string]string
	owners    map[string][]metav1.OwnerReference
	tols      map[string][]corev1.Toleration
	resources map[string]corev1.ResourceList
}

var shared = newSharer()

func newSharer() *sharer {
	return &sharer{
		maps: map[string]map[string]string{}, owners: map[string][]metav1.OwnerReference{},
		tols: map[string][]corev1.Toleration{}, resources: map[string]corev1.ResourceList{},
	}
}

func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// share returns the table's instance of v (keyed by key), adding v when
// absent.
func share[V any](table map[string]V, key string, v V) V {
	if got, ok := table[key]; ok {
		return got
	}
	if len(table) >= shareLimit {
		clear(table)
	}
	table[key] = v
	return v
}

func mapKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q,", k, m[k])
	}
	return b.String()
}

func (s *sharer) stringMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	return share(s.maps, mapKey(m), m)
}

func (s *sharer) resourceList(r corev1.ResourceList) corev1.ResourceList {
	if len(r) == 0 {
		return r
	}
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, string(k))
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		q := r[corev1.ResourceName(k)]
		fmt.Fprintf(&b, "%s=%s,", k, q.String())
	}
	return share(s.resources, b.String(), r)
}

// pod points the pod's repeated parts at shared instances.
func (s *sharer) pod(p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.Namespace = intern(p.Namespace)
	p.GenerateName = intern(p.GenerateName)
	p.Labels = s.stringMap(p.Labels)
	if len(p.OwnerReferences) > 0 {
		// Clipped: an append to a shared slice must not write into its
		// spare capacity, where another pod's append would land too.
		p.OwnerReferences = share(s.owners, ownersKey(p.OwnerReferences), slices.Clip(p.OwnerReferences))
	}
	p.Spec.NodeSelector = s.stringMap(p.Spec.NodeSelector)
	if len(p.Spec.Tolerations) > 0 {
		p.Spec.Tolerations = share(s.tols, tolerationsKey(p.Spec.Tolerations), slices.Clip(p.Spec.Tolerations))
	}
	p.Spec.SchedulerName = intern(p.Spec.SchedulerName)
	p.Spec.ServiceAccountName = intern(p.Spec.ServiceAccountName)
	p.Spec.DeprecatedServiceAccount = intern(p.Spec.DeprecatedServiceAccount)
	p.Spec.NodeName = intern(p.Spec.NodeName)
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			cs[i].Name = intern(cs[i].Name)
			cs[i].Resources.Requests = s.resourceList(cs[i].Resources.Requests)
			cs[i].Resources.Limits = s.resourceList(cs[i].Resources.Limits)
		}
	}
}

func boolKey(b *bool) string {
	if b == nil {
		return "-"
	}
	return fmt.Sprint(*b)
}

// ownersKey and tolerationsKey spell out the pointed-to values (%v would
// print the pointers).
func ownersKey(refs []metav1.OwnerReference) string {
	var b strings.Builder
	for _, r := range refs {
		fmt.Fprintf(&b, "%q %q %q %q %s %s;", r.APIVersion, r.Kind, r.Name, r.UID, boolKey(r.Controller), boolKey(r.BlockOwnerDeletion))
	}
	return b.String()
}

func tolerationsKey(tols []corev1.Toleration) string {
	var b strings.Builder
	for _, t := range tols {
		secs := "-"
		if t.TolerationSeconds != nil {
			secs = fmt.Sprint(*t.TolerationSeconds)
		}
		fmt.Fprintf(&b, "%q %q %q %q %s;", t.Key, t.Operator, t.Value, t.Effect, secs)
	}
	return b.String()
}
