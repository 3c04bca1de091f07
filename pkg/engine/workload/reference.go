package workload

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// Reference workload constants (benchmark.md).
const (
	// ReferenceTypeCount is the number of synthetic instance types.
	ReferenceTypeCount = 400
	// ReferenceSeed is the seed the peer's benchmark uses.
	ReferenceSeed = 42
	// ReferenceNamespace holds every generated pod.
	ReferenceNamespace = "default"
)

// Reference zones: spot is sold in the first two, on-demand in all three.
var ReferenceZones = []string{"test-zone-1", "test-zone-2", "test-zone-3"}

var (
	referenceCPU    = []string{"100m", "250m", "500m", "1000m", "1500m"}
	referenceMemory = []string{"100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi"}
	referenceLabels = []string{"a", "b", "c", "d", "e", "f", "g"}
)

// ReferenceTypes returns n synthetic instance types: type i (from 0) has
// i+1 vCPU, 2(i+1) GiB of memory, 10(i+1) pods, no overhead, and costs
// 0.1 per vCPU plus 0.1 per GB (10^9 bytes) of memory per hour, in every
// offering: spot in test-zone-1 and test-zone-2, on-demand in all three
// zones.
func ReferenceTypes(n int) []*cloudprovider.InstanceType {
	out := make([]*cloudprovider.InstanceType, n)
	for i := range n {
		vcpu := int64(i + 1)
		mem := 2 * vcpu << 30
		price := 0.1*float64(vcpu) + 0.1*float64(mem)/1e9
		name := fmt.Sprintf("synthetic-%d", vcpu)
		it := &cloudprovider.InstanceType{
			Name: name,
			Labels: map[string]string{
				corev1.LabelInstanceTypeStable: name,
				corev1.LabelArchStable:         "amd64",
				corev1.LabelOSStable:           "linux",
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewQuantity(vcpu, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(10*vcpu, resource.DecimalSI),
			},
		}
		for zi, z := range ReferenceZones {
			if zi < 2 {
				it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: cloudprovider.CapacityTypeSpot, Price: price, Available: true})
			}
			it.Offerings = append(it.Offerings, cloudprovider.Offering{Zone: z, CapacityType: cloudprovider.CapacityTypeOnDemand, Price: price, Available: true})
		}
		out[i] = it
	}
	return out
}

// ReferencePool is the benchmark's one NodePool: no requirements, limits
// that never bind.
func ReferencePool(types []*cloudprovider.InstanceType) engine.NodePool {
	return engine.NodePool{
		Name:          "default",
		Weight:        10,
		Limits:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100000000")},
		InstanceTypes: types,
	}
}

// Reference builds the reference scheduling workload: n pods of five equal
// kinds (the remainder generic) with requests drawn from the benchmark's
// menus with the given seed, over ReferenceTypes(400) and ReferencePool.
//
//  1. generic: label my-label=<a..g>;
//  2. zone spread: maxSkew 1 on topology.kubernetes.io/zone, DoNotSchedule,
//     selecting my-label=<a..g>;
//  3. hostname spread: the same on kubernetes.io/hostname;
//  4. zone self-affinity: label my-affininity=<a..g> (the peer's spelling),
//     required pod affinity to the same label on the zone key;
//  5. hostname anti-affinity: label app=nginx, required anti-affinity to
//     app=nginx on the hostname key.
func Reference(n int, seed uint64) *engine.Input {
	rng := rand.New(rand.NewPCG(seed, seed))
	types := ReferenceTypes(ReferenceTypeCount)
	in := &engine.Input{NodePools: []engine.NodePool{ReferencePool(types)}}
	per := n / 5
	kinds := []func(p *corev1.Pod){referenceZoneSpread(rng), referenceHostSpread(rng), referenceZoneAffinity(rng), referenceAntiAffinity}
	idx := 0
	for k, mk := range kinds {
		for range per {
			p := referencePod(rng, fmt.Sprintf("kind%d-%d", k+2, idx))
			mk(p)
			in.Pods = append(in.Pods, p)
			idx++
		}
	}
	for len(in.Pods) < n {
		p := referencePod(rng, fmt.Sprintf("generic-%d", idx))
		p.Labels = map[string]string{"my-label": pick(rng, referenceLabels)}
		in.Pods = append(in.Pods, p)
		idx++
	}
	return in
}

func pick(rng *rand.Rand, vs []string) string { return vs[rng.IntN(len(vs))] }

func referencePod(rng *rand.Rand, name string) *corev1.Pod {
	return NewPod(ReferenceNamespace, name, pick(rng, referenceCPU), pick(rng, referenceMemory))
}

func referenceZoneSpread(rng *rand.Rand) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{"my-label": pick(rng, referenceLabels)}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": pick(rng, referenceLabels)}},
		}}
	}
}

func referenceHostSpread(rng *rand.Rand) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{"my-label": pick(rng, referenceLabels)}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-label": pick(rng, referenceLabels)}},
		}}
	}
}

func referenceZoneAffinity(rng *rand.Rand) func(p *corev1.Pod) {
	return func(p *corev1.Pod) {
		v := pick(rng, referenceLabels)
		p.Labels = map[string]string{"my-affininity": v}
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"my-affininity": v}},
				TopologyKey:   corev1.LabelTopologyZone,
			}},
		}}
	}
}

func referenceAntiAffinity(p *corev1.Pod) {
	p.Labels = map[string]string{"app": "nginx"}
	p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
}

// Preferences builds the benchmark's "preferences" shape: n pods labelled
// app=nginx with preferred node affinity zone In [test-zone-1] (weight 1,
// satisfiable), preferred anti-affinity to app=nginx on the zone (weight
// 10, satisfiable for only three pods) and on the hostname (weight 1),
// with requests drawn as in Reference.
func Preferences(n int, seed uint64) *engine.Input {
	rng := rand.New(rand.NewPCG(seed, seed))
	types := ReferenceTypes(ReferenceTypeCount)
	in := &engine.Input{NodePools: []engine.NodePool{ReferencePool(types)}}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nginx"}}
	for i := range n {
		p := referencePod(rng, fmt.Sprintf("nginx-%d", i))
		p.Labels = map[string]string{"app": "nginx"}
		p.Spec.Affinity = &corev1.Affinity{
			NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1,
				Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-1"},
				}}},
			}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
				{Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: corev1.LabelTopologyZone}},
				{Weight: 1, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: corev1.LabelHostname}},
			}},
		}
		in.Pods = append(in.Pods, p)
	}
	return in
}

// NewPod returns a pending pod with one container requesting cpu and
// memory (Kubernetes quantities).
func NewPod(namespace, name, cpu, memory string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(cpu),
				corev1.ResourceMemory: resource.MustParse(memory),
			}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}
