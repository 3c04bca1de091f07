package workload

import (
	"fmt"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// MixedRegion is the region of the mixed workloads.
const MixedRegion = "us-east-1"

// Mixed describes a seeded mixed workload over the built-in catalog: a set
// of deployments with varied requests and constraints, the seed cluster's
// two weighted NodePools (spot arm64 at weight 20, multi-arch on-demand at
// weight 10), optional team NodePools with taints, and daemonsets.
type Mixed struct {
	// Name identifies the workload in test output.
	Name string
	Seed uint64
	// Pods is the approximate number of pods (deployments are drawn until
	// it is reached).
	Pods int
	// Zones is how many zones of the region the types are offered in
	// (default 3).
	Zones int
	// MaxReplicas bounds a deployment's size (default 40).
	MaxReplicas int
	// Fractions of deployments with each constraint (0..1).
	ZoneSpread   float64 // DoNotSchedule zone spread, maxSkew 1
	HostSpread   float64 // DoNotSchedule hostname spread, maxSkew 1
	HostAnti     float64 // required hostname anti-affinity (capped at 12 replicas)
	AMD64        float64 // nodeSelector kubernetes.io/arch=amd64
	Teams        int     // team NodePools (tainted, labelled team=<t>)
	TeamShare    float64 // deployments that belong to a team
	Volumes      float64 // pods with a zonal PersistentVolumeClaim
	PreferSpread float64 // preferred hostname anti-affinity (weight 50)
	// Big widens the request menu to 8 cpu / 64 GiB pods.
	Big bool
	// NoSpotPool leaves out the spot arm64 pool.
	NoSpotPool bool
	// DaemonSets adds the usual node agents.
	DaemonSets bool
}

var (
	mixedCPU      = []string{"100m", "250m", "500m", "750m", "1", "1500m", "2"}
	mixedCPUBig   = []string{"2", "3", "4", "6", "8"}
	mixedMemRatio = []float64{0.5, 1, 2, 2, 4, 4, 4, 8} // GiB per core
)

// Input builds the workload.
func (m Mixed) Input() *engine.Input {
	rng := rand.New(rand.NewPCG(m.Seed, 0x6d69786564))
	zonesN := m.Zones
	if zonesN <= 0 {
		zonesN = 3
	}
	maxRep := m.MaxReplicas
	if maxRep <= 0 {
		maxRep = 40
	}
	cat := catalog.Builtin()
	all := cat.Zones(MixedRegion)
	var zones []string
	for i := 0; i < zonesN && i < len(all); i++ {
		zones = append(zones, all[i].Name)
	}
	types := cat.InstanceTypes(MixedRegion, zones, catalog.KubeletSettings{})
	in := &engine.Input{Region: MixedRegion, Volumes: map[string][]string{}}
	in.NodePools = MixedPools(types, m.Teams, !m.NoSpotPool)
	if m.DaemonSets {
		in.DaemonSets = MixedDaemonSets()
	}
	for d := 0; len(in.Pods) < m.Pods; d++ {
		name := fmt.Sprintf("%s-app%d", m.Name, d)
		ns := "default"
		reps := 1 + rng.IntN(maxRep)
		if left := m.Pods - len(in.Pods); reps > left {
			reps = left
		}
		var cpu string
		if m.Big && rng.Float64() < 0.3 {
			cpu = pick(rng, mixedCPUBig)
		} else {
			cpu = pick(rng, mixedCPU)
		}
		cq := resource.MustParse(cpu)
		ratio := mixedMemRatio[rng.IntN(len(mixedMemRatio))]
		memMi := int64(float64(cq.MilliValue()) / 1000 * ratio * 1024)
		if memMi < 64 {
			memMi = 64
		}
		mem := fmt.Sprintf("%dMi", memMi)
		team := ""
		if m.Teams > 0 && rng.Float64() < m.TeamShare {
			team = fmt.Sprintf("team-%c", 'a'+rng.IntN(m.Teams))
			ns = team
		}
		zoneSpread := rng.Float64() < m.ZoneSpread
		hostSpread := rng.Float64() < m.HostSpread
		anti := rng.Float64() < m.HostAnti
		if anti && reps > 12 {
			reps = 12
		}
		amd := team == "" && rng.Float64() < m.AMD64
		vol := rng.Float64() < m.Volumes
		prefer := rng.Float64() < m.PreferSpread
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}
		volOffset := rng.IntN(len(zones))
		for r := 0; r < reps; r++ {
			p := NewPod(ns, fmt.Sprintf("%s-%d", name, r), cpu, mem)
			p.Labels = map[string]string{"app": name}
			if team != "" {
				p.Spec.NodeSelector = map[string]string{"team": team}
				p.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: team, Effect: corev1.TaintEffectNoSchedule}}
			}
			if amd {
				p.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
			}
			if zoneSpread {
				p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
					MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
				})
			}
			if hostSpread {
				p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
					MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
				})
			}
			if anti || prefer {
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
				term := corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: corev1.LabelHostname}
				if anti {
					p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{term}
				} else {
					p.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.WeightedPodAffinityTerm{{Weight: 50, PodAffinityTerm: term}}
				}
			}
			if vol {
				claim := "data-" + p.Name
				p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
				}}}
				// Volumes of spread deployments are spread too (as a
				// StatefulSet's would have been), so the spread stays
				// satisfiable.
				z := zones[rng.IntN(len(zones))]
				if zoneSpread {
					z = zones[(r+volOffset)%len(zones)]
				}
				in.Volumes[ns+"/"+claim] = []string{z}
			}
			in.Pods = append(in.Pods, p)
		}
	}
	return in
}

// MixedPools returns the seed cluster's NodePools over the given types:
// arm64-default (weight 20: arm64, spot, categories c/m/r, generation > 6)
// when spot is set, multi-default (weight 10: amd64 or arm64, on-demand,
// c/m/r, generation > 5), and teams team-a, team-b, ... (weight 30:
// tainted team=<t>:NoSchedule, labelled team=<t>, amd64, c/m, spot or
// on-demand).
func MixedPools(types []*cloudprovider.InstanceType, teams int, spot bool) []engine.NodePool {
	req := func(key string, op requirements.Operator, vals ...string) *requirements.Requirement {
		return requirements.MustNew(key, op, vals, nil)
	}
	var pools []engine.NodePool
	if spot {
		pools = append(pools, engine.NodePool{
			Name: "arm64-default", Weight: 20, InstanceTypes: types,
			Requirements: requirements.NewRequirements(
				req(corev1.LabelArchStable, requirements.In, "arm64"),
				req("karpenter.sh/capacity-type", requirements.In, "spot"),
				req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r"),
				req(catalog.LabelInstanceGeneration, requirements.Gt, "6"),
			),
		})
	}
	pools = append(pools, engine.NodePool{
		Name: "multi-default", Weight: 10, InstanceTypes: types,
		Requirements: requirements.NewRequirements(
			req(corev1.LabelArchStable, requirements.In, "amd64", "arm64"),
			req("karpenter.sh/capacity-type", requirements.In, "on-demand"),
			req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r"),
			req(catalog.LabelInstanceGeneration, requirements.Gt, "5"),
		),
	})
	for t := 0; t < teams; t++ {
		name := fmt.Sprintf("team-%c", 'a'+t)
		pools = append(pools, engine.NodePool{
			Name: name, Weight: 30, InstanceTypes: types,
			Labels: map[string]string{"team": name},
			Taints: []corev1.Taint{{Key: "team", Value: name, Effect: corev1.TaintEffectNoSchedule}},
			Requirements: requirements.NewRequirements(
				req(corev1.LabelArchStable, requirements.In, "amd64"),
				req("karpenter.sh/capacity-type", requirements.In, "spot", "on-demand"),
				req(catalog.LabelInstanceCategory, requirements.In, "c", "m"),
				req(catalog.LabelInstanceGeneration, requirements.Gt, "5"),
			),
		})
	}
	return pools
}

// MixedDaemonSets returns the node agents of the mixed workloads: three
// that run everywhere and one for amd64 nodes only.
func MixedDaemonSets() []*appsv1.DaemonSet {
	mk := func(name, cpu, mem string, sel map[string]string) *appsv1.DaemonSet {
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}}
		ds.Spec.Template.Spec = corev1.PodSpec{
			NodeSelector: sel,
			Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: name, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			}}}},
		}
		return ds
	}
	return []*appsv1.DaemonSet{
		mk("aws-node", "50m", "64Mi", nil),
		mk("kube-proxy", "100m", "128Mi", nil),
		mk("node-exporter", "20m", "32Mi", nil),
		mk("amd64-agent", "50m", "100Mi", map[string]string{corev1.LabelArchStable: "amd64"}),
	}
}

// MixedScenarios are the seeded mixed workloads the cost tests assert on:
// some of about 100 pods and some of thousands.
func MixedScenarios() []Mixed {
	return []Mixed{
		{Name: "small-plain", Seed: 1, Pods: 100, MaxReplicas: 10, DaemonSets: true},
		{Name: "small-spread", Seed: 2, Pods: 100, MaxReplicas: 10, ZoneSpread: 0.5, DaemonSets: true},
		{Name: "small-anti", Seed: 3, Pods: 100, MaxReplicas: 10, HostAnti: 0.3, DaemonSets: true},
		{Name: "small-amd64", Seed: 4, Pods: 100, MaxReplicas: 10, AMD64: 0.4, DaemonSets: true},
		{Name: "small-teams", Seed: 5, Pods: 120, MaxReplicas: 10, Teams: 2, TeamShare: 0.4, DaemonSets: true},
		{Name: "small-mixed", Seed: 6, Pods: 120, MaxReplicas: 10, ZoneSpread: 0.3, HostAnti: 0.1, AMD64: 0.2, Teams: 1, TeamShare: 0.2, DaemonSets: true},
		{Name: "small-ondemand", Seed: 7, Pods: 100, MaxReplicas: 10, NoSpotPool: true, ZoneSpread: 0.3, DaemonSets: true},
		{Name: "small-volumes", Seed: 8, Pods: 100, MaxReplicas: 10, Volumes: 0.3, ZoneSpread: 0.2, DaemonSets: true},
		{Name: "small-big", Seed: 9, Pods: 80, MaxReplicas: 8, Big: true, AMD64: 0.3, DaemonSets: true},
		{Name: "small-prefer", Seed: 10, Pods: 100, MaxReplicas: 10, PreferSpread: 0.3, HostSpread: 0.2, DaemonSets: true},
		{Name: "large-plain", Seed: 11, Pods: 3000, DaemonSets: true},
		{Name: "large-spread", Seed: 12, Pods: 3000, ZoneSpread: 0.5, DaemonSets: true},
		{Name: "large-anti", Seed: 13, Pods: 2000, HostAnti: 0.2, DaemonSets: true},
		{Name: "large-amd64", Seed: 14, Pods: 3000, AMD64: 0.4, DaemonSets: true},
		{Name: "large-teams", Seed: 15, Pods: 3000, Teams: 3, TeamShare: 0.4, ZoneSpread: 0.3, DaemonSets: true},
		{Name: "large-mixed", Seed: 16, Pods: 5000, ZoneSpread: 0.3, HostSpread: 0.05, HostAnti: 0.1, AMD64: 0.2, Teams: 2, TeamShare: 0.2, DaemonSets: true},
		{Name: "large-ondemand", Seed: 17, Pods: 3000, NoSpotPool: true, ZoneSpread: 0.3, AMD64: 0.3, DaemonSets: true},
		{Name: "large-volumes", Seed: 18, Pods: 2000, Volumes: 0.2, ZoneSpread: 0.3, DaemonSets: true},
		{Name: "large-big", Seed: 19, Pods: 2000, Big: true, AMD64: 0.3, ZoneSpread: 0.2, DaemonSets: true},
		{Name: "large-fivezones", Seed: 20, Pods: 4000, Zones: 5, ZoneSpread: 0.5, AMD64: 0.2, DaemonSets: true},
		{Name: "large-prefer", Seed: 21, Pods: 2000, PreferSpread: 0.2, HostSpread: 0.1, DaemonSets: true},
	}
}
