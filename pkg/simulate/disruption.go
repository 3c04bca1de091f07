package simulate

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/catalog"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/repair"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

// Labels of clusters that Karpenter does not manage.
const (
	// LabelEKSCapacityType is the capacity type of an EKS managed node
	// group's nodes: ON_DEMAND or SPOT.
	LabelEKSCapacityType = "eks.amazonaws.com/capacityType"
)

// NominationHold is how long a node that a pending pod is nominated to
// (status.nominatedNodeName) stays off limits for disruption, from the
// time of the plan: the peer's window, twice its 10 s batch maximum.
const NominationHold = 20 * time.Second

// DisruptionInput builds the planner's input for the manifests at now:
//
//   - the snapshot as Input builds it (workloads expanded, instance types
//     from opts);
//   - per NodePool, its spec.disruption (policy, consolidateAfter with its
//     default 0s, budgets, nil meaning the default 10%) and
//     spec.template.spec.expireAfter (default 720h; Never is none);
//   - per Node, a disruption.NodeState from the node and its NodeClaim
//     (matched by status.providerID, else status.nodeName): see nodeState;
//     a node without karpenter.sh/nodepool (on it or its NodeClaim) is
//     adopted by the highest-weight NodePool whose requirements and
//     template labels its labels (with its instance type's) satisfy and
//     whose taints it carries, with no other taint (Adopted, and counted in
//     the pool's usage for its limits); otherwise it has no pool
//     (unmanaged);
//   - the PodDisruptionBudgets (Manifests.PDBs).
//
// Errors are InputErrors naming the object (a NodeClaim's unreadable
// dovetail.sh annotations), or those of Input.
func DisruptionInput(m *Manifests, opts Options, now time.Time) (*disruption.Input, []string, error) {
	in, _, _, warnings, err := disruptionInput(m, opts, now)
	return in, warnings, err
}

// disruptionInput is DisruptionInput, with what it did for static
// NodePools: their missing replicas are in-flight NodeClaims of the input,
// as the static controller would have launched them.
func disruptionInput(m *Manifests, opts Options, now time.Time) (*disruption.Input, []StaticPool, []staticClaim, []string, error) {
	// A cluster file is a running cluster: a broken object (a NodePool
	// whose EC2NodeClass is missing) is a warning and left out, as the
	// controllers leave it out, not an error for the whole plan.
	cluster, warnings, err := m.cluster(opts.maxPods(), opts.maxNodePools(), false)
	if err != nil {
		return nil, nil, nil, warnings, err
	}
	cluster.Pods = spreaddefaults.Apply(opts.SpreadDefaults, cluster.Pods, m.SpreadObjects())
	cluster, notices := snapshot.LeaveOutBroken(cluster)
	warnings = append(warnings, notices...)
	in, notices, err := m.build(cluster, opts)
	warnings = append(warnings, notices...)
	if err != nil {
		return nil, nil, nil, warnings, err
	}
	pr := newPricer(opts)

	pools := make(map[string]disruption.PoolPolicy, len(cluster.NodePools))
	poolByName := make(map[string]*karpv1.NodePool, len(cluster.NodePools))
	for _, np := range cluster.NodePools {
		pools[np.Name] = snapshot.DisruptionPolicy(np)
		poolByName[np.Name] = np
		if _, err := snapshot.PoolMinSavings(np); err != nil {
			// As the controller: a warning, and the pool takes the
			// global threshold (Options.MinSavings).
			warnings = append(warnings, err.Error())
		}
	}
	adopters := adoptionOrder(cluster.NodePools)

	claimByProviderID := map[string]*karpv1.NodeClaim{}
	claimByNodeName := map[string]*karpv1.NodeClaim{}
	for _, nc := range cluster.NodeClaims {
		if nc.Status.ProviderID != "" {
			claimByProviderID[nc.Status.ProviderID] = nc
		}
		if nc.Status.NodeName != "" {
			claimByNodeName[nc.Status.NodeName] = nc
		}
	}
	podsOn := map[string][]*corev1.Pod{}
	nominated := map[string]int{}
	for _, p := range cluster.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		switch {
		case p.Spec.NodeName != "":
			podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
		case p.Status.NominatedNodeName != "" && p.DeletionTimestamp == nil:
			nominated[p.Status.NominatedNodeName]++
		}
	}

	var errs InputErrors
	states := make(map[string]disruption.NodeState, len(in.Nodes))
	for i := range in.Nodes {
		en := &in.Nodes[i]
		n := en.Node
		nc := claimByProviderID[n.Spec.ProviderID]
		if nc == nil || n.Spec.ProviderID == "" {
			nc = claimByNodeName[n.Name]
		}
		st, fes := nodeState(n, nc, podsOn[n.Name], pr)
		if len(fes) > 0 {
			o, _ := m.Origin(ObjectKey{Kind: "NodeClaim", Name: nc.Name})
			errs = append(errs, o.errorf("NodeClaim", nc.Name, fes, nil))
			continue
		}
		if st.NodePool == "" {
			if np := adopt(n, st, adopters, pr); np != nil {
				st.NodePool, st.Adopted = np.Name, true
				en.NodePool = np.Name
				addPoolUsage(in, np.Name, n.Status.Capacity)
			}
		}
		if np := poolByName[st.NodePool]; np != nil && st.TerminationGracePeriod == nil && np.Spec.Template.Spec.TerminationGracePeriod != nil {
			d := np.Spec.Template.Spec.TerminationGracePeriod.Duration
			st.TerminationGracePeriod = &d
		}
		if k := nominated[n.Name]; k > 0 {
			st.NominatedPods, st.NominatedUntil = k, now.Add(NominationHold)
		}
		states[n.Name] = st
	}
	if len(errs) > 0 {
		return nil, nil, nil, warnings, errs
	}
	static, claims := m.planStaticPools(in, now, false)
	return &disruption.Input{
		Now: now, Cluster: in, Pools: pools, Nodes: states, PDBs: m.PDBs(cluster.Pods),
		RepairPolicies: repair.Policies(false),
		Options: disruption.Options{Engine: opts.Engine, SpotToSpotConsolidation: opts.SpotToSpotConsolidation, NodeRepair: opts.NodeRepair,
			MinSavings: opts.MinSavings},
	}, static, claims, warnings, nil
}

// addPoolUsage counts an adopted node's capacity, and the node, in its
// pool's usage (for limits), as Build does for the pool's labelled nodes.
func addPoolUsage(in *engine.Input, pool string, capacity corev1.ResourceList) {
	for i := range in.NodePools {
		if in.NodePools[i].Name != pool {
			continue
		}
		usage := in.NodePools[i].Usage.DeepCopy()
		if usage == nil {
			usage = corev1.ResourceList{}
		}
		for name, q := range capacity {
			sum := usage[name]
			sum.Add(q)
			usage[name] = sum
		}
		nodes := usage["nodes"]
		nodes.Add(*resource.NewQuantity(1, resource.DecimalSI))
		usage["nodes"] = nodes
		in.NodePools[i].Usage = usage
	}
}

// nodeState is what the planner knows of a node: from its NodeClaim
// (name, pool label, Initialized and Drifted conditions, creation,
// status.lastPodEventTime or else the Initialized transition,
// terminationGracePeriod, deletion, the dovetail.sh/offering and
// dovetail.sh/price-per-hour annotations) and from the node (pool label,
// karpenter.sh/do-not-disrupt, deletion or the disrupted taint, Ready, the
// instance-type, capacity-type and zone labels). A node without a NodeClaim
// is initialized unless its Ready condition is present and not True; its
// LastPodEvent is the start of its newest pod that is not a DaemonSet's
// (else its creation). A price not annotated comes from the catalog.
func nodeState(n *corev1.Node, nc *karpv1.NodeClaim, pods []*corev1.Pod, pr *pricer) (disruption.NodeState, field.ErrorList) {
	st := disruption.NodeState{
		NodePool:          n.Labels[karpv1.NodePoolLabelKey],
		DoNotDisrupt:      n.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true",
		MarkedForDeletion: n.DeletionTimestamp != nil || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == karpv1.DisruptedTaintKey }),
		Created:           n.CreationTimestamp.Time,
		InstanceType:      n.Labels[corev1.LabelInstanceTypeStable],
		CapacityType:      capacityType(n.Labels),
		Zone:              n.Labels[corev1.LabelTopologyZone],
		Conditions:        n.Status.Conditions,
	}
	ready := nodeCondition(n, corev1.NodeReady)
	st.NotReady = ready != nil && ready.Status != corev1.ConditionTrue
	var errs field.ErrorList
	if nc == nil {
		st.Initialized = !st.NotReady
		st.LastPodEvent = newestPodStart(pods, n.CreationTimestamp.Time)
	} else {
		st.NodeClaim = nc.Name
		if st.NodePool == "" {
			st.NodePool = nc.Labels[karpv1.NodePoolLabelKey]
		}
		st.DoNotDisrupt = st.DoNotDisrupt || nc.Annotations[karpv1.DoNotDisruptAnnotationKey] == "true"
		st.MarkedForDeletion = st.MarkedForDeletion || nc.DeletionTimestamp != nil
		if !nc.CreationTimestamp.IsZero() {
			st.Created = nc.CreationTimestamp.Time
		}
		st.CreationReason = nc.Annotations[disruption.CreationReasonAnnotation]
		st.ReplacedTypes = disruption.ParseReplacedTypes(nc.Annotations[disruption.ReplacedTypesAnnotation])
		init := nc.GetCondition(karpv1.ConditionTypeInitialized)
		st.Initialized = init != nil && init.Status == "True"
		switch {
		case !nc.Status.LastPodEventTime.IsZero():
			st.LastPodEvent = nc.Status.LastPodEventTime.Time
		case st.Initialized && !init.LastTransitionTime.IsZero():
			st.LastPodEvent = init.LastTransitionTime.Time
		default:
			st.LastPodEvent = newestPodStart(pods, st.Created)
		}
		if c := nc.GetCondition(karpv1.ConditionTypeDrifted); c != nil && c.Status == "True" {
			st.Drifted = cmp.Or(c.Reason, "Drifted")
		}
		if nc.Spec.TerminationGracePeriod != nil {
			d := nc.Spec.TerminationGracePeriod.Duration
			st.TerminationGracePeriod = &d
		}
		for _, k := range []string{corev1.LabelInstanceTypeStable, corev1.LabelTopologyZone} {
			if n.Labels[k] == "" && nc.Labels[k] != "" {
				switch k {
				case corev1.LabelInstanceTypeStable:
					st.InstanceType = nc.Labels[k]
				default:
					st.Zone = nc.Labels[k]
				}
			}
		}
		if st.CapacityType == "" {
			st.CapacityType = capacityType(nc.Labels)
		}
		annotations := field.NewPath("metadata", "annotations")
		if v, ok := nc.Annotations[karpv1.AnnotationOffering]; ok {
			parts := strings.Split(v, "/")
			if len(parts) != 3 || slices.Contains(parts, "") {
				errs = append(errs, field.Invalid(annotations.Key(karpv1.AnnotationOffering), v, "must be <instance-type>/<zone>/<capacity-type>"))
			} else {
				st.InstanceType, st.Zone, st.CapacityType = parts[0], parts[1], parts[2]
			}
		}
		if v, ok := nc.Annotations[karpv1.AnnotationPricePerHour]; ok {
			p, err := strconv.ParseFloat(v, 64)
			if err != nil || !validPrice(p) {
				errs = append(errs, field.Invalid(annotations.Key(karpv1.AnnotationPricePerHour), v, fmt.Sprintf("must be a non-negative decimal price per hour, at most %g", MaxPricePerHour)))
			} else {
				st.PricePerHour = p
			}
		}
	}
	if st.PricePerHour == 0 {
		st.PricePerHour = pr.price(st.InstanceType, st.CapacityType, st.Zone)
	}
	return st, errs
}

// capacityType reads karpenter.sh/capacity-type, or EKS's capacityType
// label (ON_DEMAND, SPOT) as on-demand and spot.
func capacityType(l map[string]string) string {
	if v := l[karpv1.CapacityTypeLabelKey]; v != "" {
		return v
	}
	switch l[LabelEKSCapacityType] {
	case "ON_DEMAND":
		return cloudprovider.CapacityTypeOnDemand
	case "SPOT":
		return cloudprovider.CapacityTypeSpot
	}
	return ""
}

func nodeCondition(n *corev1.Node, t corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == t {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// newestPodStart is the latest start (status.startTime, else creation) of
// the pods that are not a DaemonSet's, or def without one.
func newestPodStart(pods []*corev1.Pod, def time.Time) time.Time {
	var newest time.Time
	for _, p := range pods {
		if !disruption.Reschedulable(p) {
			continue
		}
		t := p.CreationTimestamp.Time
		if p.Status.StartTime != nil {
			t = p.Status.StartTime.Time
		}
		if t.After(newest) {
			newest = t
		}
	}
	if newest.IsZero() {
		return def
	}
	return newest
}

// adopter is a NodePool a node without one may be adopted by.
type adopter struct {
	np   *karpv1.NodePool
	reqs requirements.Requirements
}

// adoptionOrder sorts the NodePools by weight (highest first; no weight is
// 0), then name.
func adoptionOrder(nps []*karpv1.NodePool) []adopter {
	out := make([]adopter, 0, len(nps))
	for _, np := range nps {
		reqs, errs := snapshot.Requirements(np.Spec.Template.Spec.Requirements, field.NewPath("spec", "template", "spec", "requirements"))
		if len(errs) > 0 {
			continue // refused by Read
		}
		out = append(out, adopter{np: np, reqs: reqs})
	}
	weight := func(np *karpv1.NodePool) int32 {
		if np.Spec.Weight == nil {
			return 0
		}
		return *np.Spec.Weight
	}
	slices.SortStableFunc(out, func(a, b adopter) int {
		return cmp.Or(cmp.Compare(weight(b.np), weight(a.np)), cmp.Compare(a.np.Name, b.np.Name))
	})
	return out
}

// adopt returns the first NodePool (in adoptionOrder) that could have made
// the node: its labels, completed with its instance type's labels and
// karpenter.sh/capacity-type, satisfy the pool's requirements and template
// labels, and it carries exactly the pool's taints (its transient taints,
// the disrupted taint and the pool's startup taints aside).
func adopt(n *corev1.Node, st disruption.NodeState, pools []adopter, pr *pricer) *karpv1.NodePool {
	labels := pr.typeLabels(st.InstanceType)
	for k, v := range n.Labels {
		labels[k] = v
	}
	if st.CapacityType != "" {
		labels[karpv1.CapacityTypeLabelKey] = st.CapacityType
	}
	for _, a := range pools {
		tmpl := &a.np.Spec.Template
		if a.reqs.Matches(labels) != nil {
			continue
		}
		ok := true
		for k, v := range tmpl.Labels {
			if got, has := labels[k]; !has || got != v {
				ok = false
			}
		}
		if !ok || !taintsFit(n.Spec.Taints, tmpl.Spec.Taints, tmpl.Spec.StartupTaints) {
			continue
		}
		return a.np
	}
	return nil
}

func taintsFit(node, pool, startup []corev1.Taint) bool {
	same := func(a, b corev1.Taint) bool { return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect }
	for _, t := range pool {
		if !slices.ContainsFunc(node, func(o corev1.Taint) bool { return same(o, t) }) {
			return false
		}
	}
	for _, t := range node {
		if snapshot.IsTransientTaint(t.Key) || t.Key == karpv1.DisruptedTaintKey {
			continue
		}
		if !slices.ContainsFunc(pool, func(o corev1.Taint) bool { return same(o, t) }) &&
			!slices.ContainsFunc(startup, func(o corev1.Taint) bool { return same(o, t) }) {
			return false
		}
	}
	return true
}

// pricer prices an existing node's offering and gives its type's labels,
// from the catalog file when one is given, else the built-in catalog.
type pricer struct {
	region string
	cat    *catalog.Catalog
	file   map[string]*cloudprovider.InstanceType
}

func newPricer(opts Options) *pricer {
	p := &pricer{region: opts.Region}
	if opts.InstanceTypes != nil {
		p.file = make(map[string]*cloudprovider.InstanceType, len(opts.InstanceTypes))
		for _, it := range opts.InstanceTypes {
			p.file[it.Name] = it
		}
		return p
	}
	p.cat = cmp.Or(opts.Catalog, catalog.Builtin())
	return p
}

// price is the $/h of the offering, 0 when unknown (the type, the capacity
// type or, for spot, the zone).
func (p *pricer) price(typ, capType, zone string) float64 {
	if typ == "" || capType == "" {
		return 0
	}
	if p.file != nil {
		it := p.file[typ]
		if it == nil {
			return 0
		}
		for _, o := range it.Offerings {
			if o.CapacityType == capType && (o.Zone == zone || (o.ZoneID != "" && o.ZoneID == zone)) {
				return o.Price
			}
		}
		return 0
	}
	od, ok := p.cat.OnDemandPrice(p.region, typ)
	if !ok {
		return 0
	}
	switch capType {
	case cloudprovider.CapacityTypeOnDemand:
		return od
	case cloudprovider.CapacityTypeSpot:
		if zone == "" {
			return 0
		}
		if z, ok := p.cat.Zone(p.region, zone); ok {
			zone = z.Name
		}
		return catalog.SpotPrice(p.region, zone, typ, od)
	}
	return 0
}

// typeLabels is a fresh copy of the well-known labels of an instance type
// (empty when unknown).
func (p *pricer) typeLabels(typ string) map[string]string {
	out := map[string]string{}
	if typ == "" {
		return out
	}
	if p.file != nil {
		if it := p.file[typ]; it != nil {
			for k, v := range it.Labels {
				out[k] = v
			}
		}
		return out
	}
	if t, ok := p.cat.Type(typ); ok {
		return t.Labels()
	}
	return out
}

// RunDisruption plans one disruption pass for the manifests at now
// (DisruptionInput, then disruption.Compute, timed with opts.Now).
func RunDisruption(m *Manifests, opts Options, now time.Time) (*DisruptionResult, error) {
	in, static, claims, warnings, err := disruptionInput(m, opts, now)
	if err != nil {
		return nil, err
	}
	clock := opts.Now
	if clock == nil {
		clock = time.Now
	}
	start := clock()
	plan, err := disruption.Compute(in)
	elapsed := clock().Sub(start)
	if err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) {
			if located := m.locate(in.Cluster, ie.Errs); located != nil {
				return nil, located
			}
		}
		// Compute fails only on malformed input, naming the field.
		return nil, fmt.Errorf("%w: planning disruption: %w", ErrBadInput, err)
	}
	r := FromDisruptionPlan(in, plan)
	r.addStatic(static, claims)
	r.DurationSeconds = elapsed.Seconds()
	r.Warnings = warnings
	return r, nil
}
