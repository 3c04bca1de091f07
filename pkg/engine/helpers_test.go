package engine_test

import (
	"fmt"
	"math"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Test catalog: families with 2, 4 and 8 GiB per vCPU, amd64 and arm64,
// sizes 1..16 vCPU, every type in zones a, b and c, on-demand at 0.05 per
// vCPU-hour times the family factor, spot at 40% of that. Allocatable keeps
// 100m cpu and 256Mi back; max pods 20 per vCPU.
var (
	testZones    = []string{"zone-a", "zone-b", "zone-c"}
	testFamilies = []struct {
		name   string
		gib    int64
		factor float64
		arch   string
	}{
		{"c", 2, 0.9, "amd64"},
		{"m", 4, 1.0, "amd64"},
		{"r", 8, 1.3, "amd64"},
		{"cg", 2, 0.8, "arm64"},
		{"mg", 4, 0.9, "arm64"},
	}
	testSizes = []int64{1, 2, 4, 8, 16}
)

const (
	labelFamily = "example.com/family"
	labelCPU    = "example.com/cpu"
	labelCT     = "karpenter.sh/capacity-type"
)

func testTypes() []*cloudprovider.InstanceType {
	var out []*cloudprovider.InstanceType
	for _, f := range testFamilies {
		for _, n := range testSizes {
			name := fmt.Sprintf("%s.%dx", f.name, n)
			od := 0.05 * float64(n) * f.factor
			it := &cloudprovider.InstanceType{
				Name: name,
				Labels: map[string]string{
					corev1.LabelInstanceTypeStable: name,
					corev1.LabelArchStable:         f.arch,
					corev1.LabelOSStable:           "linux",
					labelFamily:                    f.name,
					labelCPU:                       fmt.Sprint(n),
				},
				Capacity: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewQuantity(n, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(n*f.gib<<30, resource.BinarySI),
					corev1.ResourcePods:   *resource.NewQuantity(20*n, resource.DecimalSI),
				},
				Overhead: cloudprovider.Overhead{KubeReserved: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: resource.MustParse("256Mi"),
				}},
			}
			for _, z := range testZones {
				it.Offerings = append(it.Offerings,
					cloudprovider.Offering{Zone: z, ZoneID: "id-" + z, CapacityType: cloudprovider.CapacityTypeOnDemand, Price: od, Available: true},
					cloudprovider.Offering{Zone: z, ZoneID: "id-" + z, CapacityType: cloudprovider.CapacityTypeSpot, Price: math.Round(od*0.4*1e6) / 1e6, Available: true},
				)
			}
			out = append(out, it)
		}
	}
	return out
}

// cheapestFit computes, independently of the engine, the cheapest price of
// a type holding req (plus ds) among types passing keep, over offerings
// passing offer.
func cheapestFit(types []*cloudprovider.InstanceType, req, ds corev1.ResourceList, keep func(*cloudprovider.InstanceType) bool, offer func(cloudprovider.Offering) bool) (string, float64) {
	bestName, best := "", math.Inf(1)
	names := make([]string, 0, len(types))
	byName := map[string]*cloudprovider.InstanceType{}
	for _, it := range types {
		names = append(names, it.Name)
		byName[it.Name] = it
	}
	sort.Strings(names)
	for _, name := range names {
		it := byName[name]
		if keep != nil && !keep(it) {
			continue
		}
		alloc := it.Allocatable()
		fits := true
		for k, q := range req {
			need := q.DeepCopy()
			if d, ok := ds[k]; ok {
				need.Add(d)
			}
			if a := alloc[k]; need.Cmp(a) > 0 {
				fits = false
			}
		}
		if !fits {
			continue
		}
		for _, o := range it.Offerings {
			if o.Available && (offer == nil || offer(o)) && o.Price < best {
				best, bestName = o.Price, name
			}
		}
	}
	return bestName, best
}

func rl(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// podOpt modifies a test pod.
type podOpt func(p *corev1.Pod)

func newPod(name, cpu, mem string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabels(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func withNodeSelector(kv ...string) podOpt {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Spec.NodeSelector[kv[i]] = kv[i+1]
		}
	}
}

func withToleration(key, value string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: corev1.TaintEffectNoSchedule})
	}
}

func withRequiredTerms(terms ...corev1.NodeSelectorTerm) podOpt {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}
	}
}

func withPreferredNode(weight int32, key string, values ...string) podOpt {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
		}
		na := p.Spec.Affinity.NodeAffinity
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, corev1.PreferredSchedulingTerm{
			Weight: weight, Preference: term(key, corev1.NodeSelectorOpIn, values...),
		})
	}
}

func term(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}
}

func ensureAffinity(p *corev1.Pod) {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func withAnti(key string, s *metav1.LabelSelector) podOpt {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAntiAffinity == nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a := p.Spec.Affinity.PodAntiAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{LabelSelector: s, TopologyKey: key})
	}
}

func withPreferredAnti(weight int32, key string, s *metav1.LabelSelector) podOpt {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAntiAffinity == nil {
			p.Spec.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{}
		}
		a := p.Spec.Affinity.PodAntiAffinity
		a.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: s, TopologyKey: key}})
	}
}

func withAffinity(key string, s *metav1.LabelSelector) podOpt {
	return func(p *corev1.Pod) {
		ensureAffinity(p)
		if p.Spec.Affinity.PodAffinity == nil {
			p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
		}
		a := p.Spec.Affinity.PodAffinity
		a.RequiredDuringSchedulingIgnoredDuringExecution = append(a.RequiredDuringSchedulingIgnoredDuringExecution, corev1.PodAffinityTerm{LabelSelector: s, TopologyKey: key})
	}
}

func withSpread(key string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, s *metav1.LabelSelector) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
			MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: s,
		})
	}
}

func withHostPort(port int32) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{ContainerPort: port, HostPort: port})
	}
}

func withVolume(claim string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

func withInit(cpu, mem string, sidecar bool) podOpt {
	return func(p *corev1.Pod) {
		c := corev1.Container{Name: fmt.Sprintf("init%d", len(p.Spec.InitContainers)), Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)}}
		if sidecar {
			always := corev1.ContainerRestartPolicyAlways
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
}

func replicas(n int, prefix, cpu, mem string, opts ...podOpt) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = newPod(fmt.Sprintf("%s-%d", prefix, i), cpu, mem, opts...)
	}
	return out
}

func req(key string, op requirements.Operator, values ...string) *requirements.Requirement {
	return requirements.MustNew(key, op, values, nil)
}

func reqMin(key string, op requirements.Operator, minValues int, values ...string) *requirements.Requirement {
	return requirements.MustNew(key, op, values, &minValues)
}

func pool(name string, weight int32, rs ...*requirements.Requirement) engine.NodePool {
	return engine.NodePool{Name: name, Weight: weight, InstanceTypes: testTypes(), Requirements: requirements.NewRequirements(rs...)}
}

func daemonSet(name, cpu, mem string, nodeSelector map[string]string) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}}
	ds.Spec.Template.Spec = corev1.PodSpec{
		NodeSelector: nodeSelector,
		Containers:   []corev1.Container{{Name: name, Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)}}},
	}
	return ds
}

func existingNode(name, zone, cpu, mem string, labels map[string]string) *corev1.Node {
	l := map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelHostname: name}
	for k, v := range labels {
		l[k] = v
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	n.Status.Allocatable = rl(cpu, mem)
	n.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("110")
	return n
}

// claimOf returns the claim holding a pod, or nil.
func claimOf(plan *engine.Plan, pod string) *engine.NewNodeClaim {
	for i := range plan.NodeClaims {
		for _, r := range plan.NodeClaims[i].Pods {
			if r.Name == pod {
				return &plan.NodeClaims[i]
			}
		}
	}
	return nil
}

func placementOf(plan *engine.Plan, pod string) string {
	for _, p := range plan.Existing {
		if p.Pod.Name == pod {
			return p.Node
		}
	}
	return ""
}

func unschedulableOf(plan *engine.Plan, pod string) *engine.PodError {
	for i := range plan.Unschedulable {
		if plan.Unschedulable[i].Pod.Name == pod {
			return &plan.Unschedulable[i]
		}
	}
	return nil
}

// zoneOf returns the zone a claim's node lands in (its offering's).
func zoneOf(c *engine.NewNodeClaim) string { return c.Offering.Zone }
