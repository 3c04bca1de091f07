package simulate

import (
	"fmt"
	"slices"

	"github.com/go-logr/logr"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// Labels the controllers put on the pods of a StatefulSet.
const (
	labelStatefulSetPodName = "statefulset.kubernetes.io/pod-name"
	labelPodIndex           = "apps.kubernetes.io/pod-index"
)

// Cluster expands the manifests into the cluster state a snapshot is taken
// from, as the Kubernetes controllers would have it:
//
//   - Deployments, ReplicaSets, StatefulSets and ReplicationControllers
//     make spec.replicas pods
//     (default 1), Jobs min(parallelism, completions) pods (parallelism
//     defaults to 1; completions, when unset, to parallelism). A pod is
//     named <owner>-<n> (n from 0) in the owner's namespace, with the
//     template's labels and annotations, an ownerReference to the owner
//     and a copy of the template's spec.
//   - A StatefulSet's volumeClaimTemplates make one claim per pod,
//     <template>-<owner>-<n>, unless a claim of that name is in the input;
//     the pod mounts it.
//   - On every existing Node a DaemonSet would run on (node selector,
//     required node affinity, taints), a pod <daemonset>-<node> is bound,
//     unless the input already binds a pod of that DaemonSet there.
//
// Pods of one workload share their template's spec, labels and
// annotations: callers must treat the pods as read-only.
//
// It checks references: a NodePool's EC2NodeClass, a pod's spec.nodeName
// and pod-name collisions between generated and listed pods are errors
// (InputErrors naming the referring object's file and document); a claim a
// pod uses but the input lacks is a warning (the claim then constrains no
// zone).
//
// Before making any pod it counts them: more than DefaultMaxPods is an
// InputError naming the document that goes over (see Options.MaxPods).
func (m *Manifests) Cluster() (c *snapshot.Cluster, warnings []string, err error) {
	return m.cluster(DefaultMaxPods, DefaultMaxNodePools, true)
}

// PodCount is how many pods Cluster makes: the listed pods, the workloads'
// replicas and a DaemonSet pod on every existing node (at most; the
// DaemonSet's node selection is not applied).
func (m *Manifests) PodCount() int {
	n, _ := m.countPods(-1)
	return n
}

// countPods counts the pods the input makes; when limit >= 0 and the count
// goes over it, it stops and returns the error naming the document that
// did.
func (m *Manifests) countPods(limit int) (int, *InputError) {
	total := 0
	over := func(kind, ns, name string, p *field.Path, v any) *InputError {
		if limit < 0 || total <= limit {
			return nil
		}
		o, _ := m.Origin(ObjectKey{Kind: kind, Namespace: ns, Name: name})
		return o.errorf(kind, name, field.ErrorList{field.Invalid(p, v,
			fmt.Sprintf("the input makes at least %d pods, more than the limit of %d (--max-pods)", total, limit))}, nil)
	}
	for _, p := range m.Pods {
		total++
		if e := over("Pod", p.Namespace, p.Name, field.NewPath("metadata", "name"), p.Name); e != nil {
			return total, e
		}
	}
	replicasPath := field.NewPath("spec", "replicas")
	for _, d := range m.Deployments {
		total += replicas(d.Spec.Replicas)
		if e := over("Deployment", d.Namespace, d.Name, replicasPath, replicas(d.Spec.Replicas)); e != nil {
			return total, e
		}
	}
	for _, rs := range m.ReplicaSets {
		total += replicas(rs.Spec.Replicas)
		if e := over("ReplicaSet", rs.Namespace, rs.Name, replicasPath, replicas(rs.Spec.Replicas)); e != nil {
			return total, e
		}
	}
	for _, s := range m.StatefulSets {
		total += replicas(s.Spec.Replicas)
		if e := over("StatefulSet", s.Namespace, s.Name, replicasPath, replicas(s.Spec.Replicas)); e != nil {
			return total, e
		}
	}
	for _, rc := range m.ReplicationControllers {
		total += replicas(rc.Spec.Replicas)
		if e := over("ReplicationController", rc.Namespace, rc.Name, replicasPath, replicas(rc.Spec.Replicas)); e != nil {
			return total, e
		}
	}
	for _, j := range m.Jobs {
		total += jobPods(j)
		if e := over("Job", j.Namespace, j.Name, field.NewPath("spec", "parallelism"), jobPods(j)); e != nil {
			return total, e
		}
	}
	for _, ds := range m.DaemonSets {
		total += len(m.Nodes)
		if e := over("DaemonSet", ds.Namespace, ds.Name, field.NewPath("spec"), fmt.Sprintf("%d existing nodes", len(m.Nodes))); e != nil {
			return total, e
		}
	}
	return total, nil
}

func (m *Manifests) cluster(maxPods, maxNodePools int, strictRefs bool) (c *snapshot.Cluster, warnings []string, err error) {
	if len(m.NodePools) > maxNodePools {
		np := m.NodePools[maxNodePools]
		o, _ := m.Origin(ObjectKey{Kind: "NodePool", Name: np.Name})
		return nil, nil, InputErrors{o.errorf("NodePool", np.Name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), np.Name,
			fmt.Sprintf("the input has %d NodePools, more than the limit of %d (--max-nodepools)", len(m.NodePools), maxNodePools))}, nil)}
	}
	total, ie := m.countPods(maxPods)
	if ie != nil {
		return nil, nil, InputErrors{ie}
	}
	c = &snapshot.Cluster{
		NodePools: m.NodePools, NodeClasses: m.NodeClasses, Nodes: m.Nodes, NodeClaims: m.NodeClaims,
		DaemonSets: m.DaemonSets, PersistentVolumes: m.PersistentVolumes, StorageClasses: m.StorageClasses,
		Namespaces: m.Namespaces, Overlays: m.NodeOverlays,
	}
	c.CapacityBuffers, c.PodTemplates, _, warnings = m.buffers()
	for _, cm := range m.ConfigMaps {
		// Validated when read (validate); the first one is used.
		if spec, errs := commitment.FromConfigMap(cm.Data); len(errs) == 0 && cm.Name == commitment.ConfigMapName {
			c.Commitments = spec
			break
		}
	}
	var errs InputErrors
	origin := func(kind, ns, name string) Origin {
		o, _ := m.Origin(ObjectKey{Kind: kind, Namespace: ns, Name: name})
		return o
	}

	for _, np := range m.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil || !strictRefs {
			continue
		}
		if _, ok := m.origins[ObjectKey{Kind: "EC2NodeClass", Name: ref.Name}]; !ok {
			errs = append(errs, origin("NodePool", "", np.Name).errorf("NodePool", np.Name, field.ErrorList{field.NotFound(
				field.NewPath("spec", "template", "spec", "nodeClassRef", "name"), ref.Name)},
				nil))
			errs[len(errs)-1].Errs[0].Detail = fmt.Sprintf("NodePool %q references EC2NodeClass %q, which is not in the input", np.Name, ref.Name)
		}
	}

	pods := make([]*corev1.Pod, 0, total)
	podOwner := make(map[string]string, total-len(m.Nodes)*len(m.DaemonSets)) // ns/name -> "Kind ns/name" of the generator
	claims := append([]*corev1.PersistentVolumeClaim(nil), m.PersistentVolumeClaims...)
	claimSeen := map[string]bool{}
	for _, pvc := range claims {
		claimSeen[pvc.Namespace+"/"+pvc.Name] = true
	}
	for _, p := range m.Pods {
		podOwner[p.Namespace+"/"+p.Name] = "Pod"
		pods = append(pods, p)
	}
	// The pods of one workload share one copy of its template (spec,
	// labels, annotations) and owner reference: the cost of expanding is
	// a small Pod per replica, not a deep copy. mut gets a pod whose
	// fields it may replace (not modify in place).
	generate := func(kind string, owner metav1.ObjectMeta, tmpl *corev1.PodTemplateSpec, n int, mut func(i int, p *corev1.Pod)) {
		refs := []metav1.OwnerReference{{APIVersion: apiVersionOf(kind), Kind: kind, Name: owner.Name, UID: owner.UID,
			Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}}
		spec := tmpl.Spec.DeepCopy()
		labels, annotations := copyMap(tmpl.Labels), copyMap(tmpl.Annotations)
		from := fmt.Sprintf("%s %s/%s", kind, owner.Namespace, owner.Name)
		block := make([]corev1.Pod, n)
		for i := range n {
			p := &block[i]
			*p = corev1.Pod{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{
					Name: owner.Name + "-" + strconv.Itoa(i), Namespace: owner.Namespace,
					Labels: labels, Annotations: annotations,
					OwnerReferences: refs,
				},
				Spec: *spec,
			}
			if mut != nil {
				mut(i, p)
			}
			key := p.Namespace + "/" + p.Name
			if prev, dup := podOwner[key]; dup {
				errs = append(errs, origin(kind, owner.Namespace, owner.Name).errorf(kind, owner.Name, nil,
					fmt.Errorf("pod %s it makes collides with a pod from %s", key, prev)))
				return
			}
			podOwner[key] = from
			pods = append(pods, p)
		}
	}
	for _, d := range m.Deployments {
		generate("Deployment", d.ObjectMeta, &d.Spec.Template, replicas(d.Spec.Replicas), nil)
	}
	for _, rs := range m.ReplicaSets {
		generate("ReplicaSet", rs.ObjectMeta, &rs.Spec.Template, replicas(rs.Spec.Replicas), nil)
	}
	for _, s := range m.StatefulSets {
		generate("StatefulSet", s.ObjectMeta, &s.Spec.Template, replicas(s.Spec.Replicas), func(i int, p *corev1.Pod) {
			// Per-pod labels and volumes: replace the shared ones.
			p.Labels = copyMap(p.Labels)
			if p.Labels == nil {
				p.Labels = map[string]string{}
			}
			p.Spec.Volumes = slices.Clip(p.Spec.Volumes)
			p.Labels[labelStatefulSetPodName] = p.Name
			p.Labels[labelPodIndex] = strconv.Itoa(i)
			for _, vct := range s.Spec.VolumeClaimTemplates {
				name := vct.Name + "-" + p.Name
				if !claimSeen[p.Namespace+"/"+name] {
					pvc := &corev1.PersistentVolumeClaim{
						TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
						ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: copyMap(vct.Labels)},
						Spec:       *vct.Spec.DeepCopy(),
					}
					claims = append(claims, pvc)
					claimSeen[p.Namespace+"/"+name] = true
				}
				p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
			}
		})
	}
	for _, rc := range m.ReplicationControllers {
		if rc.Spec.Template != nil {
			generate("ReplicationController", rc.ObjectMeta, rc.Spec.Template, replicas(rc.Spec.Replicas), nil)
		}
	}
	for _, j := range m.Jobs {
		generate("Job", j.ObjectMeta, &j.Spec.Template, jobPods(j), nil)
	}

	// Bound pods must name a node of the input.
	nodes := map[string]*corev1.Node{}
	for _, n := range m.Nodes {
		nodes[n.Name] = n
	}
	for _, p := range m.Pods {
		if p.Spec.NodeName != "" && nodes[p.Spec.NodeName] == nil {
			errs = append(errs, origin("Pod", p.Namespace, p.Name).errorf("Pod", p.Name, field.ErrorList{
				field.NotFound(field.NewPath("spec", "nodeName"), p.Spec.NodeName)}, nil))
		}
	}

	// DaemonSet pods on existing nodes.
	for _, n := range m.Nodes {
		for _, ds := range m.DaemonSets {
			if !daemonRunsOn(ds, n) || boundDaemonPod(pods, ds, n.Name) {
				continue
			}
			p := &corev1.Pod{
				TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{
					Name: ds.Name + "-" + n.Name, Namespace: ds.Namespace,
					Labels: copyMap(ds.Spec.Template.Labels), Annotations: copyMap(ds.Spec.Template.Annotations),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptrTo(true)}},
				},
				Spec: *ds.Spec.Template.Spec.DeepCopy(),
			}
			p.Spec.NodeName = n.Name
			pods = append(pods, p)
		}
	}

	for _, p := range pods {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && !claimSeen[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] {
				warnings = append(warnings, fmt.Sprintf("pod %s/%s uses PersistentVolumeClaim %q, which is not in the input: its zone is not constrained",
					p.Namespace, p.Name, v.PersistentVolumeClaim.ClaimName))
			}
		}
	}
	if len(errs) > 0 {
		return nil, warnings, errs
	}
	c.Pods = pods
	c.PersistentVolumeClaims = claims
	return c, warnings, nil
}

func apiVersionOf(kind string) string {
	switch kind {
	case "Job":
		return batchv1.SchemeGroupVersion.String()
	case "ReplicationController":
		return corev1.SchemeGroupVersion.String()
	default:
		return appsv1.SchemeGroupVersion.String()
	}
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

func jobPods(j *batchv1.Job) int {
	par := 1
	if j.Spec.Parallelism != nil {
		par = int(*j.Spec.Parallelism)
	}
	if j.Spec.Completions != nil && int(*j.Spec.Completions) < par {
		return int(*j.Spec.Completions)
	}
	return par
}

// daemonRunsOn reports whether the DaemonSet controller would run a pod of
// ds on n: the pod's node selector and required node affinity match the
// node, and it tolerates the node's NoSchedule and NoExecute taints.
func daemonRunsOn(ds *appsv1.DaemonSet, n *corev1.Node) bool {
	pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
	tolerations := append(append([]corev1.Toleration(nil), pod.Spec.Tolerations...), daemonTolerations...)
	if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n); !ok {
		return false
	}
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), n.Spec.Taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, true)
	return !untolerated
}

// daemonTolerations are the tolerations the DaemonSet controller adds to
// every daemon pod.
var daemonTolerations = []corev1.Toleration{
	{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeDiskPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodePIDPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
}

func boundDaemonPod(pods []*corev1.Pod, ds *appsv1.DaemonSet, node string) bool {
	for _, p := range pods {
		if p.Spec.NodeName != node || p.Namespace != ds.Namespace {
			continue
		}
		for _, o := range p.OwnerReferences {
			if o.Kind == "DaemonSet" && o.Name == ds.Name {
				return true
			}
		}
	}
	return false
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
