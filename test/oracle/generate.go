package oracle

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
)

// Label, taint and annotation keys the oracle uses to isolate workloads
// from each other on the shared control plane.
const (
	// LabelWorkload is a template label of every NodePool of a workload and
	// a nodeSelector of every pod of it.
	LabelWorkload = "oracle.dovetail.sh/workload"
	// LabelNode names the node itself (for nodeSelector pinning).
	LabelNode = "oracle.dovetail.sh/node"
	// LabelDaemon marks daemonset pods (never matched by workload
	// selectors, which use LabelApp).
	LabelDaemon = "oracle.dovetail.sh/daemon"
	// LabelApp groups a workload's pods.
	LabelApp = "app"
	// LabelTeam is the team pools' template label and taint key.
	LabelTeam = "team"
	// PinTaintPrefix + workload id is the key of the taint every real node
	// of that workload carries, valued with the node's name.
	PinTaintPrefix = "oracle.dovetail.sh/pin-"
)

// Workload is one generated scenario: the objects of a namespace and its
// NodePools, built to be feasible (every pod can be placed by some plan).
type Workload struct {
	ID        string
	Seed      uint64
	Namespace string
	NodeClass *awsv1.EC2NodeClass
	NodePools []*karpv1.NodePool
	// DaemonSets add overhead to every new node they select.
	DaemonSets []*appsv1.DaemonSet
	Pods       []*corev1.Pod
	// Claims and Volumes: one bound claim per pod of a volume group, its
	// PV pinned to one zone.
	Claims  []*corev1.PersistentVolumeClaim
	Volumes []*corev1.PersistentVolume
	// Existing are nodes that already run (or, InFlight, are being
	// launched) before the pods arrive, with Bound pods on them.
	Existing []NodeSpec
	Bound    []*corev1.Pod
	// Features lists the constraints the workload mixes (for coverage
	// reporting).
	Features []string
}

// NodeSpec describes an existing node or an in-flight NodeClaim of the
// workload's general pool; the harness gives it the instance type's labels,
// capacity and allocatable.
type NodeSpec struct {
	Name, InstanceType, Zone string
	// InFlight makes it a NodeClaim that has no Node yet.
	InFlight bool
}

// GeneralPool is the name of the workload's general NodePool.
func (w *Workload) GeneralPool() string { return w.ID + "-general" }

// PinTaintKey is the key of the workload's per-node pin taint.
func (w *Workload) PinTaintKey() string { return PinTaintPrefix + w.ID }

type gen struct {
	r        *rand.Rand
	w        *Workload
	zones    []string
	features map[string]bool
	// pools the workload has, by role.
	hasSpotArm, hasTeam bool
	team                string
	bothCT              bool // the general pool allows spot and on-demand
	port                int32
	// anchorable lists groups whose label existing pods may carry without
	// making the workload infeasible (no zone affinity or zone
	// anti-affinity on it).
	anchorable []string
}

func (g *gen) feature(f string) { g.features[f] = true }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

// Generate builds workload id from seed over the given zones (at least two).
// The same seed always gives the same workload.
func Generate(id string, seed uint64, zones []string) *Workload {
	g := &gen{
		r:        rand.New(rand.NewPCG(seed, 0x6f7261636c65)),
		w:        &Workload{ID: id, Seed: seed, Namespace: "oracle-" + id},
		zones:    zones,
		features: map[string]bool{},
		port:     8000,
	}
	g.nodeClass()
	g.pools()
	g.daemonSets()
	groups := 2 + g.r.IntN(4)
	for i := range groups {
		g.group(i)
	}
	g.existing()
	for f := range g.features {
		g.w.Features = append(g.w.Features, f)
	}
	slices.Sort(g.w.Features)
	return g.w
}

func (g *gen) nodeClass() {
	nc := &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: g.w.ID}}
	nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}
	nc.Spec.Role = "oracle"
	nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "oracle"}}}
	nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "oracle"}}}
	if g.chance(0.3) {
		maxPods := int32(8 + g.r.IntN(20))
		nc.Spec.Kubelet = &awsv1.KubeletConfiguration{MaxPods: &maxPods}
		g.feature("kubelet-maxPods")
	}
	g.w.NodeClass = nc
}

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func (g *gen) pool(name string, weight int32, reqs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: g.w.ID + "-" + name}}
	if weight > 0 {
		np.Spec.Weight = &weight
	}
	np.Spec.Template.Labels = map[string]string{LabelWorkload: g.w.ID}
	np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: g.w.ID}
	base := []karpv1.NodeSelectorRequirementWithMinValues{
		req(awsv1.LabelInstanceCategory, corev1.NodeSelectorOpIn, "c", "m", "r"),
		req(awsv1.LabelInstanceGeneration, corev1.NodeSelectorOpGt, "4"),
		req(awsv1.LabelInstanceSize, corev1.NodeSelectorOpIn, "medium", "large", "xlarge", "2xlarge", "4xlarge"),
	}
	np.Spec.Template.Spec.Requirements = append(base, reqs...)
	g.w.NodePools = append(g.w.NodePools, np)
	return np
}

func (g *gen) pools() {
	// The general pool: both architectures; spot and on-demand or
	// on-demand only.
	cts := []string{"on-demand"}
	if g.chance(0.6) {
		cts = []string{"spot", "on-demand"}
		g.bothCT = true
	}
	general := g.pool("general", 10, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64", "arm64"),
		req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, cts...))
	if g.chance(0.2) {
		general.Spec.Template.Spec.Requirements[0].MinValues = ptr(2)
		g.feature("minValues")
	}
	// A higher-weight arm64 spot pool, as in the seed cluster.
	if g.chance(0.5) {
		g.pool("spot-arm", 20, req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64"),
			req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "spot"))
		g.hasSpotArm = true
		g.feature("weighted-pools")
	}
	// A team pool: tainted, labelled, highest weight.
	if g.chance(0.5) {
		g.team = g.pick([]string{"a", "b", "c"})
		np := g.pool("team-"+g.team, 30, req(karpv1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, "on-demand"))
		np.Spec.Template.Labels[LabelTeam] = g.team
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: LabelTeam, Value: g.team, Effect: corev1.TaintEffectNoSchedule}}
		g.hasTeam = true
		g.feature("team-pool")
	}
}

func (g *gen) daemonSets() {
	for i := range g.r.IntN(3) {
		name := "ds" + strconv.Itoa(i)
		spec := corev1.PodSpec{
			NodeSelector: map[string]string{LabelWorkload: g.w.ID},
			Containers: []corev1.Container{{Name: "agent", Image: "agent", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse(g.pick([]string{"50m", "100m", "200m"})),
				corev1.ResourceMemory: resource.MustParse(g.pick([]string{"64Mi", "128Mi", "256Mi"})),
			}}}},
		}
		if g.chance(0.3) {
			spec.NodeSelector[corev1.LabelArchStable] = "arm64"
			g.feature("daemonset-selector")
		}
		if g.hasTeam && g.chance(0.5) {
			spec.Tolerations = []corev1.Toleration{{Key: LabelTeam, Operator: corev1.TolerationOpExists}}
		}
		labels := map[string]string{LabelDaemon: name}
		ds := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.w.Namespace},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
			},
		}
		g.w.DaemonSets = append(g.w.DaemonSets, ds)
		g.feature("daemonset")
	}
}

// group adds one group of identical pods (an "app").
func (g *gen) group(i int) {
	app := "g" + strconv.Itoa(i)
	n := 1 + g.r.IntN(8)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{LabelApp: app}}
	spec := corev1.PodSpec{
		NodeSelector: map[string]string{LabelWorkload: g.w.ID},
		Containers: []corev1.Container{{Name: "main", Image: "app", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse(g.pick([]string{"100m", "250m", "500m", "1", "1500m", "2"})),
			corev1.ResourceMemory: resource.MustParse(g.pick([]string{"128Mi", "512Mi", "1Gi", "2Gi", "4Gi"})),
		}}}},
	}
	switch x := g.r.Float64(); {
	case x < 0.12:
		// A bigger init container: the pod needs max(init, containers).
		spec.InitContainers = []corev1.Container{{Name: "init", Image: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("3"), corev1.ResourceMemory: resource.MustParse("512Mi")}}}}
		g.feature("init-container")
	case x < 0.24:
		// A sidecar (restartable init container) adds to the containers.
		always := corev1.ContainerRestartPolicyAlways
		spec.InitContainers = []corev1.Container{
			{Name: "setup", Image: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
			{Name: "proxy", Image: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}},
		}
		g.feature("sidecar-container")
	}
	if g.chance(0.12) {
		spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse(g.pick([]string{"1Gi", "3Gi", "6Gi"}))
		g.feature("ephemeral-storage")
	}
	if g.chance(0.3) {
		sel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: LabelApp, Operator: metav1.LabelSelectorOpIn, Values: []string{app}}}}
		g.feature("selector-matchExpressions")
	}
	aff := &corev1.Affinity{}
	zones := g.zones // zones the group may use
	zoneBound := false

	// Node placement.
	switch {
	case g.hasTeam && g.chance(0.3):
		spec.NodeSelector[LabelTeam] = g.team
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: LabelTeam, Operator: corev1.TolerationOpEqual, Value: g.team, Effect: corev1.TaintEffectNoSchedule})
		g.feature("toleration+team-selector")
	case g.hasTeam && g.chance(0.15):
		// Tolerates the team taint without requiring the team pool.
		spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: LabelTeam, Operator: corev1.TolerationOpExists})
		g.feature("toleration-only")
	}
	if g.chance(0.3) {
		spec.NodeSelector[corev1.LabelArchStable] = g.pick([]string{"amd64", "arm64"})
		if spec.NodeSelector[LabelTeam] != "" {
			delete(spec.NodeSelector, corev1.LabelArchStable) // the team pool allows both; keep it simple
		} else {
			g.feature("arch-selector")
		}
	}
	var required []corev1.NodeSelectorRequirement
	if g.chance(0.25) {
		zones = []string{g.zones[0], g.zones[1+g.r.IntN(len(g.zones)-1)]}
		required = append(required, corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones})
		zoneBound = true
		g.feature("required-node-affinity-zone")
	}
	if g.bothCT && spec.NodeSelector[LabelTeam] == "" && g.chance(0.15) {
		required = append(required, corev1.NodeSelectorRequirement{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}})
		g.feature("required-node-affinity-capacity-type")
	}
	switch x := g.r.Float64(); {
	case x < 0.08:
		required = append(required, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCPU, Operator: corev1.NodeSelectorOpGt, Values: []string{"1"}})
		g.feature("node-affinity-Gt")
	case x < 0.16:
		required = append(required, corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceFamily, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"m5", "c6g"}})
		g.feature("node-affinity-NotIn")
	}
	if len(required) > 0 {
		aff.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: required}}}}
		// Sometimes two alternative terms (terms are ORed): compute or
		// general purpose types, or memory-optimised ones. The first keeps
		// two categories, so a pool's minValues on the category stays
		// satisfiable, and neither constrains the architecture, which a
		// node selector may already fix.
		if g.chance(0.2) {
			first := append(slices.Clone(required), corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m"}})
			alt := append(slices.Clone(required), corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"r"}})
			aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = []corev1.NodeSelectorTerm{{MatchExpressions: first}, {MatchExpressions: alt}}
			g.feature("node-affinity-OR-terms")
		}
	}
	if g.chance(0.25) {
		if aff.NodeAffinity == nil {
			aff.NodeAffinity = &corev1.NodeAffinity{}
		}
		aff.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: corev1.NodeSelectorTerm{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{g.pick(zones)}}}}}}
		g.feature("preferred-node-affinity")
	}

	// Pod (anti-)affinity.
	selfAffinityZone := false
	switch x := g.r.Float64(); {
	case x < 0.15:
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: sel, TopologyKey: corev1.LabelHostname}}}
		g.feature("anti-affinity-hostname")
	case x < 0.22:
		n = min(n, len(zones))
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: sel, TopologyKey: corev1.LabelTopologyZone}}}
		g.feature("anti-affinity-zone")
	case x < 0.30:
		aff.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: sel, TopologyKey: corev1.LabelTopologyZone}}}
		selfAffinityZone = true
		g.feature("affinity-zone")
	case x < 0.36 && i > 0 && !zoneBound:
		// Same zone as an earlier group (which exists, so this is feasible).
		other := "g" + strconv.Itoa(g.r.IntN(i))
		aff.PodAffinity = &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelApp: other}}, TopologyKey: corev1.LabelTopologyZone}}}
		zoneBound = true
		g.feature("affinity-zone-other-group")
	case x < 0.42 && i > 0:
		other := "g" + strconv.Itoa(g.r.IntN(i))
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelApp: other}}, TopologyKey: corev1.LabelHostname}}}
		g.feature("anti-affinity-hostname-other-group")
	case x < 0.50:
		aff.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 5, PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: corev1.LabelHostname}}}}
		g.feature("preferred-anti-affinity")
	}
	if aff.NodeAffinity != nil || aff.PodAffinity != nil || aff.PodAntiAffinity != nil {
		spec.Affinity = aff
	}

	// Topology spread.
	ctBound := spec.NodeSelector[LabelTeam] != "" || slices.ContainsFunc(required, func(r corev1.NodeSelectorRequirement) bool {
		return r.Key == karpv1.CapacityTypeLabelKey
	})
	if !selfAffinityZone && g.chance(0.4) {
		// nodeAffinityPolicy Ignore for the whole pod (see the package doc
		// for why a pod's constraints share one policy): counting then
		// isolates by taints instead of by the workload's node selector.
		// Ignoring node affinity also counts domains the pod itself cannot
		// use, so a capacity-type spread on a pod bound to one capacity
		// type would be unsatisfiable: such pods keep Honor.
		ignorePolicy := g.chance(0.25)
		for _, key := range g.spreadKeys(zoneBound, ignorePolicy && ctBound) {
			c := corev1.TopologySpreadConstraint{
				MaxSkew: int32(1 + g.r.IntN(2)), TopologyKey: key, LabelSelector: sel,
				WhenUnsatisfiable: corev1.DoNotSchedule,
			}
			if g.chance(0.3) {
				c.WhenUnsatisfiable = corev1.ScheduleAnyway
				g.feature("spread-schedule-anyway")
			} else {
				g.feature("spread-" + keyName(key))
				switch {
				case key == corev1.LabelTopologyZone && g.chance(0.3):
					c.MinDomains = ptr(int32(len(zones)))
					g.feature("spread-minDomains")
				case key == corev1.LabelHostname && g.chance(0.3):
					c.MinDomains = ptr(int32(2 + g.r.IntN(2)))
					g.feature("spread-minDomains")
				}
			}
			spec.TopologySpreadConstraints = append(spec.TopologySpreadConstraints, c)
		}
		if ignorePolicy {
			ignore, honor := corev1.NodeInclusionPolicyIgnore, corev1.NodeInclusionPolicyHonor
			for j := range spec.TopologySpreadConstraints {
				spec.TopologySpreadConstraints[j].NodeAffinityPolicy = &ignore
				spec.TopologySpreadConstraints[j].NodeTaintsPolicy = &honor
			}
			spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: g.w.PinTaintKey(), Operator: corev1.TolerationOpExists})
			g.feature("spread-nodeAffinityPolicy-Ignore")
		}
	}

	// Host ports: one pod of the group per node.
	if g.chance(0.1) {
		g.port++
		spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: g.port, Protocol: corev1.ProtocolTCP}}
		g.feature("host-port")
	}

	// Zonal volumes: one bound claim per pod, zones round-robin (or all in
	// one zone for a self-affine group), so spread and anti-affinity stay
	// feasible.
	volumes := !zoneBound && g.chance(0.15)
	if volumes {
		g.feature("pvc-zone")
	}
	// Running pods may carry this group's label unless that could make the
	// group infeasible: zone affinity or anti-affinity would tie the group
	// to (or bar it from) the running pods' zones, and zones fixed by
	// volumes leave zone spread no room to even out.
	zoneAnti := aff.PodAntiAffinity != nil && len(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 &&
		aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey == corev1.LabelTopologyZone
	if aff.PodAffinity == nil && !zoneAnti && !volumes {
		g.anchorable = append(g.anchorable, app)
	}
	offset := g.r.IntN(len(zones))
	for k := range n {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, k), Namespace: g.w.Namespace, Labels: map[string]string{LabelApp: app}},
			Spec:       *spec.DeepCopy(),
		}
		if volumes {
			zone := zones[(offset+k)%len(zones)]
			if selfAffinityZone {
				zone = zones[offset]
			}
			g.volume(pod, zone)
		}
		g.w.Pods = append(g.w.Pods, pod)
	}
}

// existingTypes are instance types the general pool allows (categories c,
// m, r; generation > 4; listed sizes), by architecture.
var existingTypes = []string{"m5.xlarge", "m6i.large", "r5.large", "c6g.xlarge", "m7g.large"}

// existing adds up to two running nodes and one in-flight NodeClaim of the
// general pool (on-demand), with pods bound to the running ones: pods of
// groups without zone (anti-)affinity, so the workload stays feasible, or
// unrelated ones.
func (g *gen) existing() {
	if !g.chance(0.4) {
		return
	}
	for i := range 1 + g.r.IntN(2) {
		spec := NodeSpec{Name: fmt.Sprintf("%s-existing-%d", g.w.ID, i), InstanceType: g.pick(existingTypes), Zone: g.pick(g.zones)}
		g.w.Existing = append(g.w.Existing, spec)
		for j := range g.r.IntN(3) {
			app := "idle"
			if len(g.anchorable) > 0 && g.chance(0.7) {
				app = g.pick(g.anchorable)
			}
			g.w.Bound = append(g.w.Bound, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("running-%d-%d", i, j), Namespace: g.w.Namespace, Labels: map[string]string{LabelApp: app}},
				Spec: corev1.PodSpec{NodeName: spec.Name, Containers: []corev1.Container{{Name: "main", Image: "app", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
			})
		}
	}
	g.feature("existing-nodes")
	if g.chance(0.5) {
		g.w.Existing = append(g.w.Existing, NodeSpec{Name: g.w.ID + "-inflight-0", InstanceType: g.pick(existingTypes), Zone: g.pick(g.zones), InFlight: true})
		g.feature("in-flight-nodeclaim")
	}
}

// spreadKeys picks the topology keys of a group's spread constraints.
func (g *gen) spreadKeys(zoneBound, noCapacityType bool) []string {
	keys := []string{corev1.LabelHostname}
	if !zoneBound {
		keys = append(keys, corev1.LabelTopologyZone)
	}
	if g.bothCT && !noCapacityType {
		keys = append(keys, karpv1.CapacityTypeLabelKey)
	}
	g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys[:1+g.r.IntN(min(2, len(keys)))]
}

func keyName(key string) string {
	switch key {
	case corev1.LabelHostname:
		return "hostname"
	case corev1.LabelTopologyZone:
		return "zone"
	}
	return "capacity-type"
}

func (g *gen) volume(pod *corev1.Pod, zone string) {
	name := "data-" + pod.Name
	pvName := g.w.Namespace + "-" + name
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{LabelWorkload: g.w.ID}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + pvName}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: g.w.Namespace, Name: name},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}}}}},
			StorageClassName: "",
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.w.Namespace,
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:       pvName,
			StorageClassName: ptr(""),
		},
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	g.w.Claims = append(g.w.Claims, pvc)
	g.w.Volumes = append(g.w.Volumes, pv)
}

func ptr[T any](v T) *T { return &v }

// YAML renders the workload as manifests `dovetail simulate -f` reads, for
// reporting and reducing a disagreement. With the region's default zones
// the simulation reproduces the oracle's engine input, except for the
// existing nodes and in-flight NodeClaims (Existing, Bound), which need
// the catalog's instance types and are left out.
func (w *Workload) YAML() ([]byte, error) {
	var out []byte
	add := func(apiVersion, kind string, obj any) error {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("---\napiVersion: %s\nkind: %s\n", apiVersion, kind)...)
		out = append(out, data...)
		return nil
	}
	var errs []error
	errs = append(errs, add("karpenter.k8s.aws/v1", "EC2NodeClass", w.NodeClass))
	for _, np := range w.NodePools {
		errs = append(errs, add("karpenter.sh/v1", "NodePool", np))
	}
	for _, ds := range w.DaemonSets {
		errs = append(errs, add("apps/v1", "DaemonSet", ds))
	}
	for _, pv := range w.Volumes {
		errs = append(errs, add("v1", "PersistentVolume", pv))
	}
	for _, pvc := range w.Claims {
		errs = append(errs, add("v1", "PersistentVolumeClaim", pvc))
	}
	for _, p := range w.Pods {
		errs = append(errs, add("v1", "Pod", p))
	}
	return out, errors.Join(errs...)
}
