package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// A Shape is a seeded generator of one kind of workload over the built-in
// us-east-1 catalog, unlike the Mixed ones: its parameters (deployment
// counts, replica counts, pod sizes, pools) are drawn from the seed within
// ranges the Knobs scale.
type Shape struct {
	Name  string
	build func(rng *rand.Rand, k Knobs) *engine.Input
}

// Knobs shift a shape's parameter ranges. The tuning families use
// TuningKnobs; the held-out family uses HeldOutKnobs, with its own seeds.
type Knobs struct {
	// Zones is how many zones of the region the types are offered in.
	Zones int
	// Scale multiplies pod counts.
	Scale float64
	// SizeShift multiplies pod cpu requests.
	SizeShift float64
}

// TuningKnobs are the parameters of the tuning families.
var TuningKnobs = Knobs{Zones: 3, Scale: 1, SizeShift: 1}

// HeldOutKnobs are the parameters of the held-out family: no tuning run
// looks at workloads built with them.
var HeldOutKnobs = Knobs{Zones: 4, Scale: 1.3, SizeShift: 1.25}

// FamilyCase is one workload of a family.
type FamilyCase struct {
	Family string
	Seed   uint64
	Knobs  Knobs
	shape  Shape
}

// Name is "<family>/<seed>".
func (c FamilyCase) Name() string { return fmt.Sprintf("%s/%d", c.Family, c.Seed) }

// Input builds the workload.
func (c FamilyCase) Input() *engine.Input {
	rng := rand.New(rand.NewPCG(c.Seed, 0x66616d696c79))
	return c.shape.build(rng, c.Knobs)
}

// Shapes are the generators of the families:
//
//   - uneven-spread: two to four Deployments with uneven replica counts
//     (one large, the others small) under DoNotSchedule zone spread, over
//     a spot pool with an on-demand fallback.
//   - many-spread: 25-45 Deployments of very different pod sizes, most
//     under zone spread, some under hostname spread (thousands of pods).
//   - spot-fallback: a spot pool, an on-demand fallback and a pool with no
//     capacity-type requirement; some Deployments require on-demand, some
//     are spread.
//   - small-large: many small pods beside pods that each need just under
//     half of a large node.
//   - big-daemons: ordinary Deployments with DaemonSets that request a lot
//     (up to 2 cpu and 4 GiB per node).
//   - arm-weighted: an arm64 pool with no capacity-type requirement at a
//     high weight over an amd64 one; some Deployments need amd64, some
//     prefer arm64.
//   - team-taint: two or three small Deployments for tainted team pools,
//     beside a few untainted ones.
func Shapes() []Shape {
	return []Shape{
		{Name: "uneven-spread", build: buildUnevenSpread},
		{Name: "many-spread", build: buildManySpread},
		{Name: "spot-fallback", build: buildSpotFallback},
		{Name: "small-large", build: buildSmallLarge},
		{Name: "big-daemons", build: buildBigDaemons},
		{Name: "arm-weighted", build: buildArmWeighted},
		{Name: "team-taint", build: buildTeamTaint},
	}
}

// TuningSeeds are the seeds of each tuning family.
var TuningSeeds = []uint64{1, 2, 3, 4, 5}

// heldOutSeeds are the seeds of the held-out family (one pair per shape).
var heldOutSeeds = []uint64{70001, 70002}

// TuningFamilies are the cases tuning looks at: every shape with
// TuningSeeds and TuningKnobs.
func TuningFamilies() []FamilyCase {
	var out []FamilyCase
	for _, s := range Shapes() {
		for _, seed := range TuningSeeds {
			out = append(out, FamilyCase{Family: s.Name, Seed: seed, Knobs: TuningKnobs, shape: s})
		}
	}
	return out
}

// HeldOutFamily is the held-out family: every shape with its own seeds and
// HeldOutKnobs (four zones, more pods, larger requests). It is checked in
// CI and reported separately; tuning never runs it.
func HeldOutFamily() []FamilyCase {
	var out []FamilyCase
	for i, s := range Shapes() {
		for _, seed := range heldOutSeeds {
			out = append(out, FamilyCase{Family: "heldout-" + s.Name, Seed: seed + uint64(100*i), Knobs: HeldOutKnobs, shape: s})
		}
	}
	return out
}

// familyBase is the catalog's types in k.Zones zones of the region.
func familyBase(k Knobs) (*engine.Input, []*cloudprovider.InstanceType, []string) {
	n := k.Zones
	if n <= 0 {
		n = 3
	}
	cat := catalog.Builtin()
	all := cat.Zones(MixedRegion)
	var zones []string
	for i := 0; i < n && i < len(all); i++ {
		zones = append(zones, all[i].Name)
	}
	types := cat.InstanceTypes(MixedRegion, zones, catalog.KubeletSettings{})
	return &engine.Input{Region: MixedRegion, Volumes: map[string][]string{}}, types, zones
}

func req(key string, op requirements.Operator, vals ...string) *requirements.Requirement {
	return requirements.MustNew(key, op, vals, nil)
}

func pool(name string, weight int32, types []*cloudprovider.InstanceType, rs ...*requirements.Requirement) engine.NodePool {
	return engine.NodePool{Name: name, Weight: weight, InstanceTypes: types, Requirements: requirements.NewRequirements(rs...)}
}

// dep describes one generated Deployment.
type dep struct {
	name, ns       string
	replicas       int
	cpuMilli       int64
	memMi          int64
	zoneSpread     bool
	hostSpread     bool
	nodeSelector   map[string]string
	tolerations    []corev1.Toleration
	preferArm64    int32 // weight of a preferred arch=arm64 node affinity, 0 for none
	requireOnDemnd bool
}

func (d dep) pods() []*corev1.Pod {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.name}}
	var out []*corev1.Pod
	for r := 0; r < d.replicas; r++ {
		p := NewPod(d.ns, fmt.Sprintf("%s-%d", d.name, r), fmt.Sprintf("%dm", d.cpuMilli), fmt.Sprintf("%dMi", d.memMi))
		p.Labels = map[string]string{"app": d.name}
		if len(d.nodeSelector) > 0 || d.requireOnDemnd {
			p.Spec.NodeSelector = map[string]string{}
			for k, v := range d.nodeSelector {
				p.Spec.NodeSelector[k] = v
			}
			if d.requireOnDemnd {
				p.Spec.NodeSelector["karpenter.sh/capacity-type"] = cloudprovider.CapacityTypeOnDemand
			}
		}
		p.Spec.Tolerations = d.tolerations
		if d.zoneSpread {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
			})
		}
		if d.hostSpread {
			p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, corev1.TopologySpreadConstraint{
				MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
			})
		}
		if d.preferArm64 > 0 {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: d.preferArm64,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"},
					}}},
				}},
			}}
		}
		out = append(out, p)
	}
	return out
}

// scaled returns n*k.Scale, at least 1.
func scaled(n int, k Knobs) int {
	v := int(math.Round(float64(n) * k.Scale))
	if v < 1 {
		v = 1
	}
	return v
}

// between draws uniformly from [lo, hi].
func between(rng *rand.Rand, lo, hi int) int { return lo + rng.IntN(hi-lo+1) }

var familyCPU = []int64{100, 250, 500, 750, 1000, 1500, 2000, 3000, 4000}

// size draws a pod size: cpu from familyCPU[:upto] (shifted by the knobs)
// and a memory ratio of 0.5..8 GiB per core.
func size(rng *rand.Rand, k Knobs, upto int) (int64, int64) {
	cpu := int64(float64(familyCPU[rng.IntN(upto)]) * k.SizeShift)
	ratio := mixedMemRatio[rng.IntN(len(mixedMemRatio))]
	mem := int64(float64(cpu) / 1000 * ratio * 1024)
	if mem < 64 {
		mem = 64
	}
	return cpu, mem
}

func addDeps(in *engine.Input, deps []dep) {
	for _, d := range deps {
		in.Pods = append(in.Pods, d.pods()...)
	}
}

func spotAndOnDemand(types []*cloudprovider.InstanceType) []engine.NodePool {
	return []engine.NodePool{
		pool("spot", 20, types,
			req(corev1.LabelArchStable, requirements.In, "amd64", "arm64"),
			req("karpenter.sh/capacity-type", requirements.In, "spot"),
			req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r"),
			req(catalog.LabelInstanceGeneration, requirements.Gt, "5")),
		pool("on-demand", 10, types,
			req(corev1.LabelArchStable, requirements.In, "amd64", "arm64"),
			req("karpenter.sh/capacity-type", requirements.In, "on-demand"),
			req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r"),
			req(catalog.LabelInstanceGeneration, requirements.Gt, "5")),
	}
}

func buildUnevenSpread(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	in.NodePools = spotAndOnDemand(types)
	in.DaemonSets = MixedDaemonSets()
	n := between(rng, 2, 4)
	var deps []dep
	for i := 0; i < n; i++ {
		reps := between(rng, 3, 25)
		if i == 0 {
			reps = between(rng, 40, 90)
		}
		cpu, mem := size(rng, k, 7)
		deps = append(deps, dep{name: fmt.Sprintf("uneven%d", i), ns: "default", replicas: scaled(reps, k), cpuMilli: cpu, memMi: mem, zoneSpread: true})
	}
	addDeps(in, deps)
	return in
}

func buildManySpread(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	in.NodePools = MixedPools(types, 0, true)
	in.DaemonSets = MixedDaemonSets()
	n := between(rng, 25, 45)
	var deps []dep
	for i := 0; i < n; i++ {
		cpu, mem := size(rng, k, len(familyCPU))
		d := dep{name: fmt.Sprintf("many%d", i), ns: "default", replicas: scaled(between(rng, 10, 150), k), cpuMilli: cpu, memMi: mem}
		switch x := rng.Float64(); {
		case x < 0.75:
			d.zoneSpread = true
		case x < 0.85:
			d.hostSpread = true
		}
		if rng.Float64() < 0.15 {
			d.nodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
		}
		deps = append(deps, d)
	}
	addDeps(in, deps)
	return in
}

func buildSpotFallback(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	in.NodePools = append(spotAndOnDemand(types),
		pool("general", 5, types,
			req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r", "t"),
			req(catalog.LabelInstanceGeneration, requirements.Gt, "4")))
	in.NodePools[0].Requirements = requirements.NewRequirements(
		req(corev1.LabelArchStable, requirements.In, "arm64"),
		req("karpenter.sh/capacity-type", requirements.In, "spot"),
		req(catalog.LabelInstanceCategory, requirements.In, "c", "m"),
		req(catalog.LabelInstanceGeneration, requirements.Gt, "6"))
	in.DaemonSets = MixedDaemonSets()
	n := between(rng, 4, 10)
	var deps []dep
	for i := 0; i < n; i++ {
		cpu, mem := size(rng, k, 8)
		d := dep{name: fmt.Sprintf("fb%d", i), ns: "default", replicas: scaled(between(rng, 2, 40), k), cpuMilli: cpu, memMi: mem}
		d.zoneSpread = rng.Float64() < 0.5
		d.requireOnDemnd = rng.Float64() < 0.25
		if rng.Float64() < 0.3 {
			d.nodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
		}
		deps = append(deps, d)
	}
	addDeps(in, deps)
	return in
}

func buildSmallLarge(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	in.NodePools = MixedPools(types, 0, rng.IntN(2) == 0)
	in.DaemonSets = MixedDaemonSets()
	large := []int64{16000, 32000, 48000}[rng.IntN(3)]
	var deps []dep
	for i, nb := 0, between(rng, 1, 3); i < nb; i++ {
		// Just under half of a large node's allocatable.
		cpu := large/2 - int64(between(rng, 300, 1500))
		ratio := []float64{2, 4, 8}[rng.IntN(3)]
		deps = append(deps, dep{name: fmt.Sprintf("half%d", i), ns: "default", replicas: scaled(between(rng, 2, 12), k),
			cpuMilli: cpu, memMi: int64(float64(cpu) / 1000 * ratio * 1024 * 0.9), zoneSpread: rng.Float64() < 0.4})
	}
	for i, ns := 0, between(rng, 3, 10); i < ns; i++ {
		cpu, mem := size(rng, k, 4)
		deps = append(deps, dep{name: fmt.Sprintf("small%d", i), ns: "default", replicas: scaled(between(rng, 5, 60), k),
			cpuMilli: cpu, memMi: mem, zoneSpread: rng.Float64() < 0.3})
	}
	addDeps(in, deps)
	return in
}

func buildBigDaemons(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	in.NodePools = MixedPools(types, 0, true)
	in.DaemonSets = MixedDaemonSets()
	for i, nd := 0, between(rng, 1, 3); i < nd; i++ {
		cpu := []string{"250m", "500m", "1", "1500m", "2"}[rng.IntN(5)]
		mem := []string{"512Mi", "1Gi", "2Gi", "4Gi"}[rng.IntN(4)]
		ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: fmt.Sprintf("agent%d", i)}}
		ds.Spec.Template.Spec = corev1.PodSpec{
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "agent", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
			}}}},
		}
		in.DaemonSets = append(in.DaemonSets, ds)
	}
	large := rng.IntN(2) == 0
	n := between(rng, 5, 12)
	if large {
		n = between(rng, 20, 40)
	}
	var deps []dep
	for i := 0; i < n; i++ {
		cpu, mem := size(rng, k, 7)
		reps := between(rng, 2, 20)
		if large {
			reps = between(rng, 20, 120)
		}
		deps = append(deps, dep{name: fmt.Sprintf("bd%d", i), ns: "default", replicas: scaled(reps, k), cpuMilli: cpu, memMi: mem,
			zoneSpread: rng.Float64() < 0.3})
	}
	addDeps(in, deps)
	return in
}

func buildArmWeighted(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	in.NodePools = []engine.NodePool{
		pool("arm64", 50, types,
			req(corev1.LabelArchStable, requirements.In, "arm64"),
			req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r"),
			req(catalog.LabelInstanceGeneration, requirements.Gt, "6")),
		pool("amd64", 10, types,
			req(corev1.LabelArchStable, requirements.In, "amd64"),
			req(catalog.LabelInstanceCategory, requirements.In, "c", "m", "r"),
			req(catalog.LabelInstanceGeneration, requirements.Gt, "5")),
	}
	in.DaemonSets = MixedDaemonSets()
	var deps []dep
	for i, n := 0, between(rng, 3, 8); i < n; i++ {
		cpu, mem := size(rng, k, 7)
		d := dep{name: fmt.Sprintf("arm%d", i), ns: "default", replicas: scaled(between(rng, 2, 20), k), cpuMilli: cpu, memMi: mem}
		switch x := rng.Float64(); {
		case x < 0.3:
			d.nodeSelector = map[string]string{corev1.LabelArchStable: "amd64"}
		case x < 0.7:
			d.preferArm64 = int32(between(rng, 1, 100))
		}
		d.zoneSpread = rng.Float64() < 0.3
		deps = append(deps, d)
	}
	addDeps(in, deps)
	return in
}

func buildTeamTaint(rng *rand.Rand, k Knobs) *engine.Input {
	in, types, _ := familyBase(k)
	teams := between(rng, 2, 3)
	in.NodePools = MixedPools(types, teams, true)
	in.DaemonSets = MixedDaemonSets()
	var deps []dep
	for t := 0; t < teams; t++ {
		team := fmt.Sprintf("team-%c", 'a'+t)
		cpu, mem := size(rng, k, 6)
		deps = append(deps, dep{name: "svc-" + team, ns: team, replicas: scaled(between(rng, 2, 12), k), cpuMilli: cpu, memMi: mem,
			nodeSelector: map[string]string{"team": team},
			tolerations:  []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: team, Effect: corev1.TaintEffectNoSchedule}},
			zoneSpread:   rng.Float64() < 0.3})
	}
	for i, n := 0, between(rng, 0, 3); i < n; i++ {
		cpu, mem := size(rng, k, 6)
		deps = append(deps, dep{name: fmt.Sprintf("shared%d", i), ns: "default", replicas: scaled(between(rng, 2, 10), k), cpuMilli: cpu, memMi: mem})
	}
	addDeps(in, deps)
	return in
}
