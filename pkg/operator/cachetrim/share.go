package cachetrim

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
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
	mu         sync.Mutex
	maps       map[string]map[string]string
	owners     map[string][]metav1.OwnerReference
	tols       map[string][]corev1.Toleration
	resources  map[string]corev1.ResourceList
	containers map[string][]corev1.Container
	affinities map[string]*corev1.Affinity
	spreads    map[string][]corev1.TopologySpreadConstraint
	// noSecurityContext is the shared empty pod security context (the API
	// server's defaulting gives every pod one).
	noSecurityContext *corev1.PodSecurityContext
}

func newSharer() *sharer {
	return &sharer{
		maps: map[string]map[string]string{}, owners: map[string][]metav1.OwnerReference{},
		tols: map[string][]corev1.Toleration{}, resources: map[string]corev1.ResourceList{},
		containers: map[string][]corev1.Container{}, affinities: map[string]*corev1.Affinity{},
		spreads: map[string][]corev1.TopologySpreadConstraint{}, noSecurityContext: &corev1.PodSecurityContext{},
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
	return share(s.resources, resourcesKey(r), r)
}

func resourcesKey(r corev1.ResourceList) string {
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
	return b.String()
}

// containersKey spells out what Pod keeps of each container.
func containersKey(cs []corev1.Container) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%q %s %s %s [", c.Name, resourcesKey(c.Resources.Requests), resourcesKey(c.Resources.Limits), restartKey(c.RestartPolicy))
		for _, r := range c.Resources.Claims {
			fmt.Fprintf(&b, "%q %q ", r.Name, r.Request)
		}
		b.WriteString("] [")
		for _, r := range c.ResizePolicy {
			fmt.Fprintf(&b, "%q %q ", r.ResourceName, r.RestartPolicy)
		}
		b.WriteString("] [")
		for _, port := range c.Ports {
			fmt.Fprintf(&b, "%q %d %d %q %q ", port.Name, port.HostPort, port.ContainerPort, port.Protocol, port.HostIP)
		}
		b.WriteString("];")
	}
	return b.String()
}

func restartKey(p *corev1.ContainerRestartPolicy) string {
	if p == nil {
		return "-"
	}
	return string(*p)
}

// marshaller is what the API types' generated protobuf code gives each
// type; its bytes are a key that spells out every field.
type marshaller interface{ Marshal() ([]byte, error) }

func protoKey(v marshaller) (string, bool) {
	b, err := v.Marshal()
	return string(b), err == nil
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
	p.Annotations = s.stringMap(p.Annotations)
	if sc := p.Spec.SecurityContext; sc != nil && equality.Semantic.DeepEqual(sc, s.noSecurityContext) {
		p.Spec.SecurityContext = s.noSecurityContext
	}
	if a := p.Spec.Affinity; a != nil {
		if key, ok := protoKey(a); ok {
			p.Spec.Affinity = share(s.affinities, key, a)
		}
	}
	if len(p.Spec.TopologySpreadConstraints) > 0 {
		var key strings.Builder
		ok := true
		for i := range p.Spec.TopologySpreadConstraints {
			k, good := protoKey(&p.Spec.TopologySpreadConstraints[i])
			ok = ok && good
			fmt.Fprintf(&key, "%d:%s", len(k), k)
		}
		if ok {
			p.Spec.TopologySpreadConstraints = share(s.spreads, key.String(), slices.Clip(p.Spec.TopologySpreadConstraints))
		}
	}
	for _, cs := range []*[]corev1.Container{&p.Spec.Containers, &p.Spec.InitContainers} {
		for i := range *cs {
			c := &(*cs)[i]
			c.Name = intern(c.Name)
			c.Resources.Requests = s.resourceList(c.Resources.Requests)
			c.Resources.Limits = s.resourceList(c.Resources.Limits)
		}
		if len(*cs) > 0 {
			*cs = share(s.containers, containersKey(*cs), slices.Clip(*cs))
		}
	}
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		c.Reason, c.Message = intern(c.Reason), intern(c.Message)
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

// internMap returns m with its keys and values interned: the nodes of a
// fleet carry the same thirty-odd label keys, and mostly the same values
// (instance type, zone, architecture, the pool), so their strings are held
// once. A new map: m may be shared.
func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// node interns the node's repeated strings (labels, annotations, taints,
// conditions, address types) and points its capacity and allocatable at
// the shared instance of equal lists (the nodes of one instance type).
func (s *sharer) node(n *corev1.Node) {
	n.Labels = internMap(n.Labels)
	n.Annotations = internMap(n.Annotations)
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		t.Key, t.Value = intern(t.Key), intern(t.Value)
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type = corev1.NodeConditionType(intern(string(c.Type)))
		c.Reason, c.Message = intern(c.Reason), intern(c.Message)
	}
	for i := range n.Status.Addresses {
		a := &n.Status.Addresses[i]
		a.Type = corev1.NodeAddressType(intern(string(a.Type)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n.Status.Capacity = s.resourceList(n.Status.Capacity)
	n.Status.Allocatable = s.resourceList(n.Status.Allocatable)
}

// nodeClaim interns the NodeClaim's repeated strings: labels, annotations,
// the requirements (the instance-type options of one pool's NodeClaims
// are mostly the same names), taints and conditions.
func nodeClaim(nc *karpv1.NodeClaim) {
	nc.Labels = internMap(nc.Labels)
	nc.Annotations = internMap(nc.Annotations)
	for i := range nc.Spec.Requirements {
		r := &nc.Spec.Requirements[i]
		r.Key = intern(r.Key)
		r.Operator = corev1.NodeSelectorOperator(intern(string(r.Operator)))
		for j := range r.Values {
			r.Values[j] = intern(r.Values[j])
		}
	}
	for _, ts := range [][]corev1.Taint{nc.Spec.Taints, nc.Spec.StartupTaints} {
		for i := range ts {
			ts[i].Key, ts[i].Value = intern(ts[i].Key), intern(ts[i].Value)
		}
	}
	for i := range nc.Status.Conditions {
		c := &nc.Status.Conditions[i]
		c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
	}
}
