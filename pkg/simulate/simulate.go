package simulate

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

// Options configure a simulation.
type Options struct {
	// Region is the region of the built-in catalog and the
	// topology.kubernetes.io/region of new nodes.
	Region string
	// Zones restrict the offerings (zone names or ids); empty means the
	// region's default zones for the built-in catalog and every zone of a
	// catalog file.
	Zones []string
	// InstanceTypes, when not nil, replace the built-in catalog: every
	// NodePool gets them as they are (see ReadCatalog).
	InstanceTypes []*cloudprovider.InstanceType
	// Catalog is the built-in catalog to use when InstanceTypes is nil; nil
	// means catalog.Builtin().
	Catalog *catalog.Catalog
	// Engine are the solve options.
	Engine engine.Options
	// Now reads the clock around the solve, to report its duration; nil
	// means time.Now.
	Now func() time.Time
	// SpotToSpotConsolidation is the disruption planner's gate (used by
	// DisruptionInput only).
	SpotToSpotConsolidation bool
	// MinSavings is the planner's consolidation savings threshold for
	// NodePools without their own annotations (DisruptionInput only).
	MinSavings disruption.MinSavings
	// NodeRepair is the planner's NodeRepair gate (DisruptionInput only;
	// the repair policies are the AWS provider's).
	NodeRepair bool
	// MaxPods bounds the pods the input may make (listed pods, workload
	// replicas, DaemonSet pods on existing nodes), checked before any is
	// made; 0 means DefaultMaxPods.
	MaxPods int
	// MaxNodePools bounds the NodePools of the input, checked before any
	// is compiled (each costs the engine a pass over the catalog); 0 means
	// DefaultMaxNodePools.
	MaxNodePools int
	// SpreadDefaults are the cluster's default topology spread
	// constraints (--scheduler-config, the controller's SCHEDULER_CONFIG):
	// every pod without its own gets them with the selector deduced from
	// the input's Services and the pod's controller (SpreadObjects), in
	// both modes.
	SpreadDefaults []corev1.TopologySpreadConstraint
}

// DefaultMaxPods is the default bound on the pods of one simulation.
const DefaultMaxPods = 200_000

// DefaultMaxNodePools is the default bound on the NodePools of one
// simulation: far above what clusters run (tens). Pools of one node class
// that differ in names, labels, taints, limits and requirements on keys
// their instance types do not carry share one compile (the engine's twin
// pools), so 5,000 of them plan in a few seconds of CPU and ~130 MB
// (BenchmarkManyNodePools); 5,000 pools that differ in their
// instance-type requirements cost a pass over the catalog each.
const DefaultMaxNodePools = 5000

func (o Options) maxNodePools() int {
	if o.MaxNodePools <= 0 {
		return DefaultMaxNodePools
	}
	return o.MaxNodePools
}

func (o Options) maxPods() int {
	if o.MaxPods <= 0 {
		return DefaultMaxPods
	}
	return o.MaxPods
}

// Result is the outcome of a simulation, in the shape `dovetail simulate
// -o json` prints.
type Result struct {
	NodeClaims    []NodeClaim     `json:"nodeClaims"`
	ExistingNodes []ExistingNode  `json:"existingNodes"`
	Unschedulable []Unschedulable `json:"unschedulable"`
	// Buffers is where the plan keeps each CapacityBuffer's room (none
	// without buffers in the input). Their pods are also in the lists
	// above, named capacitybuffer:<buffer>:<n>.
	Buffers []BufferRoom `json:"buffers,omitempty"`
	// StaticPools is what the plan does for each static NodePool
	// (spec.replicas) of the input: its NodeClaims are in NodeClaims,
	// marked static.
	StaticPools []StaticPool `json:"staticPools,omitempty"`
	// TotalPricePerHour is the price of the new NodeClaims only (static
	// pools' included).
	TotalPricePerHour float64 `json:"totalPricePerHour"`
	// LowerBoundPricePerHour is the engine's proven lower bound for the
	// pods it put on new NodeClaims.
	LowerBoundPricePerHour float64 `json:"lowerBoundPricePerHour"`
	// DurationSeconds is the engine's solve time, measured around the call.
	DurationSeconds float64 `json:"durationSeconds"`

	// Warnings are notices about the input (not printed with the data).
	Warnings []string `json:"-"`
	// Stats are the engine's counts.
	Stats engine.Stats `json:"-"`
}

// NodeClaim is one planned node. InstanceType, CapacityType, Zone and
// PricePerHour are the cheapest available offering among the options: what
// the cloud will launch.
type NodeClaim struct {
	Name                string   `json:"name"`
	NodePool            string   `json:"nodePool"`
	InstanceType        string   `json:"instanceType"`
	InstanceTypeOptions []string `json:"instanceTypeOptions"`
	CapacityType        string   `json:"capacityType"`
	Zone                string   `json:"zone"`
	PricePerHour        float64  `json:"pricePerHour"`
	// Commitment names the Savings Plan or Reserved Instance that covers
	// the node (on-demand, PricePerHour its marginal price).
	Commitment string   `json:"commitment,omitempty"`
	Pods       []string `json:"pods"`
	// Static: a NodeClaim a static NodePool (spec.replicas) launches to
	// reach its replica count, not one for pending pods (pods may still be
	// placed on it).
	Static bool `json:"static,omitempty"`
}

// ExistingNode lists the pending pods planned onto an existing node or an
// in-flight NodeClaim.
type ExistingNode struct {
	Name string   `json:"name"`
	Pods []string `json:"pods"`
}

// Unschedulable is a pod the plan leaves out, with the engine's reason.
type Unschedulable struct {
	Pod    string `json:"pod"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// Input builds the engine input for the manifests: it expands workloads
// (Manifests.Cluster), picks the instance types and takes the snapshot.
// Errors about the input wrap ErrBadInput and name the file and document
// of the object at fault; other errors are internal.
func Input(m *Manifests, opts Options) (*engine.Input, []string, error) {
	cluster, warnings, err := m.cluster(opts.maxPods(), opts.maxNodePools(), true)
	if err != nil {
		return nil, warnings, err
	}
	cluster.Pods = spreaddefaults.Apply(opts.SpreadDefaults, cluster.Pods, m.SpreadObjects())
	in, notices, err := m.build(cluster, opts)
	return in, append(warnings, notices...), err
}

// SpreadObjects are what a pod's default spread selector is deduced from:
// the input's Services, ReplicationControllers, ReplicaSets and
// StatefulSets, and its Deployments (whose expanded pods name the
// Deployment as their controller).
func (m *Manifests) SpreadObjects() spreaddefaults.Objects {
	return spreaddefaults.Objects{Services: m.Services, ReplicationControllers: m.ReplicationControllers,
		ReplicaSets: m.ReplicaSets, StatefulSets: m.StatefulSets, Deployments: m.Deployments}
}

// build takes the snapshot of an expanded cluster with the instance types
// opts selects, and the NodeOverlays of the input applied; the notices say
// which overlays are not applied and why. Errors as Input's.
func (m *Manifests) build(cluster *snapshot.Cluster, opts Options) (*engine.Input, []string, error) {
	var src snapshot.InstanceTypeSource
	if opts.InstanceTypes != nil {
		src = snapshot.StaticSource(opts.InstanceTypes)
	} else {
		cat := opts.Catalog
		if cat == nil {
			cat = catalog.Builtin()
		}
		zones := opts.Zones
		if len(zones) == 0 {
			for _, z := range cat.DefaultZones(opts.Region) {
				zones = append(zones, z.Name)
			}
		}
		src = snapshot.NewCatalogSource(cat, opts.Region, zones)
	}
	var notices []string
	in, err := snapshot.Build(cluster, src, snapshot.Options{Region: opts.Region, Engine: opts.Engine, OverlayVerdicts: func(vs []overlay.Verdict) {
		for _, v := range vs {
			if !v.Applied() {
				notices = append(notices, fmt.Sprintf("NodeOverlay %q not applied (%s): %s", v.Name, v.Reason, v.Message))
			}
		}
	}})
	if err != nil {
		var inv *snapshot.InvalidObjectError
		if errors.As(err, &inv) {
			o, _ := m.Origin(ObjectKey{Kind: inv.Kind, Name: inv.Name})
			if o.File != "" {
				return nil, notices, InputErrors{o.errorf(inv.Kind, inv.Name, inv.Errs, nil)}
			}
		}
		if errors.Is(err, snapshot.ErrNodeClassNotFound) || errors.Is(err, snapshot.ErrInvalidObject) {
			return nil, notices, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		return nil, notices, err
	}
	return in, notices, nil
}

// Run simulates provisioning for the manifests: Input, then engine.Solve,
// timed with opts.Now. A plan is a result even when pods are left
// unschedulable.
func Run(m *Manifests, opts Options) (*Result, error) {
	in, warnings, err := Input(m, opts)
	if err != nil {
		return nil, err
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	static, claims := m.planStatic(in, now())
	start := now()
	plan, err := engine.Solve(in)
	elapsed := now().Sub(start)
	if err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) {
			if located := m.locate(in, ie.Errs); located != nil {
				return nil, located
			}
		}
		if errors.Is(err, engine.ErrInvalidInput) {
			return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
		}
		return nil, fmt.Errorf("solving: %w", err)
	}
	r := FromPlan(plan)
	r.addStatic(static, claims)
	r.DurationSeconds = elapsed.Seconds()
	r.Warnings = warnings
	return r, nil
}

// FromPlan converts an engine plan into a Result (DurationSeconds and
// Warnings left zero).
func FromPlan(plan *engine.Plan) *Result {
	r := &Result{
		NodeClaims:             []NodeClaim{},
		ExistingNodes:          []ExistingNode{},
		Unschedulable:          []Unschedulable{},
		LowerBoundPricePerHour: roundPrice(plan.LowerBound),
		Stats:                  plan.Stats,
	}
	total := 0.0
	for _, nc := range plan.NodeClaims {
		c := NodeClaim{
			Name: nc.Name, NodePool: nc.NodePool,
			InstanceType: nc.Offering.InstanceType, InstanceTypeOptions: append([]string{}, nc.InstanceTypeOptions...),
			CapacityType: nc.Offering.CapacityType, Zone: nc.Offering.Zone, PricePerHour: nc.Offering.Price, Commitment: nc.Offering.Commitment,
			Pods: make([]string, 0, len(nc.Pods)),
		}
		for _, p := range nc.Pods {
			c.Pods = append(c.Pods, p.String())
		}
		total += nc.Offering.Price
		r.NodeClaims = append(r.NodeClaims, c)
	}
	r.TotalPricePerHour = roundPrice(total)
	byNode := map[string]int{}
	for _, pl := range plan.Existing {
		i, ok := byNode[pl.Node]
		if !ok {
			i = len(r.ExistingNodes)
			byNode[pl.Node] = i
			r.ExistingNodes = append(r.ExistingNodes, ExistingNode{Name: pl.Node, Pods: []string{}})
		}
		r.ExistingNodes[i].Pods = append(r.ExistingNodes[i].Pods, pl.Pod.String())
	}
	slices.SortStableFunc(r.ExistingNodes, func(a, b ExistingNode) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	for _, u := range plan.Unschedulable {
		r.Unschedulable = append(r.Unschedulable, Unschedulable{Pod: u.Pod.String(), Code: string(u.Code), Reason: u.Message})
	}
	r.Buffers = bufferRooms(plan)
	return r
}

// roundPrice rounds to a millionth of a dollar, hiding float summation
// noise.
func roundPrice(p float64) float64 { return math.Round(p*1e6) / 1e6 }

// podPath matches the engine's path of a pending pod: pods[i], optionally
// followed by [namespace/name].
var podPath = regexp.MustCompile(`^pods\[(\d+)\](\[[^\]]*\])?\.?`)

// locate maps the engine's complaints about pending pods back to the
// documents they came from: the Pod itself, or the workload whose template
// made it (the path then starts at spec.template). It returns nil when any
// error cannot be located.
func (m *Manifests) locate(in *engine.Input, errs field.ErrorList) InputErrors {
	var out InputErrors
	var sources map[string]bufferSource
	seen := map[string]bool{}
	for _, fe := range errs {
		sub := podPath.FindStringSubmatch(fe.Field)
		if sub == nil {
			return nil
		}
		i, err := strconv.Atoi(sub[1])
		if err != nil {
			return nil
		}
		var pod *corev1.Pod
		if i < len(in.Pods) {
			pod = in.Pods[i]
		} else if ns, name, ok := strings.Cut(strings.Trim(sub[2], "[]"), "/"); ok {
			// The engine appends the buffers' pods after in.Pods.
			pod = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		}
		if pod == nil {
			return nil
		}
		rest := strings.TrimPrefix(fe.Field, sub[0])
		kind, ns, name := "Pod", pod.Namespace, pod.Name
		if engine.IsBufferPod(pod) {
			// A buffer's chunk: the object its shape comes from.
			buffer, _ := engine.BufferOf(engine.PodRef{Namespace: ns, Name: name})
			if sources == nil {
				_, _, sources, _ = m.buffers()
			}
			src, ok := sources[ns+"/"+buffer]
			if !ok {
				return nil
			}
			o, ok := m.Origin(src.key)
			if !ok {
				return nil
			}
			c := *fe
			c.Field = src.path + rest
			c.Detail = strings.TrimSpace(fmt.Sprintf("%s (CapacityBuffer %s/%s)", c.Detail, ns, buffer))
			e := o.errorf(src.key.Kind, src.key.Name, field.ErrorList{&c}, nil)
			if !seen[e.Error()] { // every chunk has the same shape: once
				seen[e.Error()] = true
				out = append(out, e)
			}
			continue
		}
		if o, ok := m.Origin(ObjectKey{Kind: kind, Namespace: ns, Name: name}); ok {
			c := *fe
			c.Field = rest
			out = append(out, o.errorf(kind, name, field.ErrorList{&c}, nil))
			continue
		}
		owner := metav1.GetControllerOf(pod)
		if owner == nil {
			return nil
		}
		o, ok := m.Origin(ObjectKey{Kind: owner.Kind, Namespace: ns, Name: owner.Name})
		if !ok {
			return nil
		}
		c := *fe
		c.Field = "spec.template." + rest
		c.Detail = strings.TrimSpace(fmt.Sprintf("%s (pod %s/%s)", c.Detail, ns, name))
		out = append(out, o.errorf(owner.Kind, owner.Name, field.ErrorList{&c}, nil))
	}
	return out
}
