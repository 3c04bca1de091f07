package explain

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements"
)

// Nomination is what the provisioner recorded for a pod (its Nominated
// event): the NodeClaim or existing node it planned the pod onto.
type Nomination struct {
	Pod       engine.PodRef
	Target    string
	NodeClaim bool // Target is a NodeClaim (else an existing node)
}

// Count is a reason with how many instance types (or nodes) it applies to.
type Count struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

// Pod is the explanation of one pod.
type Pod struct {
	Pod   string `json:"pod"`
	State string `json:"state"` // Pending, Bound, Finished, Deleting

	// Pending pods.
	Requests  map[string]string `json:"requests,omitempty"`
	Verdict   *Verdict          `json:"verdict,omitempty"`
	Nodes     *Nodes            `json:"existingNodes,omitempty"`
	NodePools []Pool            `json:"nodePools,omitempty"`
	Fixes     []string          `json:"toSchedule,omitempty"`

	// Bound pods.
	Node        string `json:"node,omitempty"`
	NodeClaim   string `json:"nodeClaim,omitempty"`
	PlannedOnto string `json:"plannedOnto,omitempty"`
	PlacedBy    string `json:"placedBy,omitempty"`
	Summary     string `json:"summary"`
}

// Verdict is what the engine does with the pod on the whole snapshot.
type Verdict struct {
	Schedulable bool   `json:"schedulable"`
	Code        string `json:"code,omitempty"`
	Message     string `json:"message"`
	// Where the engine would put it: an existing node or in-flight
	// NodeClaim, or a new NodeClaim of a pool with its offering.
	ExistingNode string  `json:"existingNode,omitempty"`
	NodePool     string  `json:"nodePool,omitempty"`
	InstanceType string  `json:"instanceType,omitempty"`
	Zone         string  `json:"zone,omitempty"`
	CapacityType string  `json:"capacityType,omitempty"`
	PricePerHour float64 `json:"pricePerHour,omitempty"`
	// Overlays: the NodeOverlay that set the offering's price, with the
	// cloud's price it replaced, and those that set the type's extended
	// resources (the engine decided with them).
	Overlays *Overlays `json:"overlays,omitempty"`
}

// Overlays names the NodeOverlays behind an offering's price and its
// instance type's capacity.
type Overlays struct {
	// Price is the NodeOverlay that set the price; ListPricePerHour the
	// cloud's price it replaced.
	Price            string  `json:"price,omitempty"`
	ListPricePerHour float64 `json:"listPricePerHour,omitempty"`
	// Capacity are the NodeOverlays that set extended resources of the
	// instance type.
	Capacity []string `json:"capacity,omitempty"`
}

// overlaysOf finds the offering of pool and returns the overlays behind it
// (nil when none).
func overlaysOf(pool *engine.NodePool, typ, zone, ct string) *Overlays {
	if pool == nil {
		return nil
	}
	for _, it := range pool.InstanceTypes {
		if it == nil || it.Name != typ {
			continue
		}
		out := &Overlays{Capacity: slices.Clone(it.CapacityOverlays)}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct && o.PriceOverlay != "" {
				out.Price, out.ListPricePerHour = o.PriceOverlay, o.ListPrice
			}
		}
		if out.Price == "" && len(out.Capacity) == 0 {
			return nil
		}
		return out
	}
	return nil
}

// String is the overlays for text: "NodeOverlay a sets the price (list
// $0.1/h); NodeOverlay b sets capacity".
func (o *Overlays) String() string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.Price != "" {
		parts = append(parts, fmt.Sprintf("price set by NodeOverlay %s (list $%s/h)", o.Price, formatPrice(o.ListPricePerHour)))
	}
	if len(o.Capacity) > 0 {
		parts = append(parts, "capacity set by NodeOverlay "+strings.Join(o.Capacity, ", "))
	}
	return strings.Join(parts, "; ")
}

// poolOf returns the pool of in named name, or nil.
func poolOf(in *engine.Input, name string) *engine.NodePool {
	for i := range in.NodePools {
		if in.NodePools[i].Name == name {
			return &in.NodePools[i]
		}
	}
	return nil
}

// Nodes summarizes why no existing node takes the pod.
type Nodes struct {
	Total    int     `json:"total"`
	Fit      int     `json:"fit"`
	Rejected []Count `json:"rejected"`
}

// Pool says whether and why a NodePool can or cannot make a node for the
// pod: Code is the first failing rule ("" when it can).
type Pool struct {
	Name          string  `json:"name"`
	Weight        int32   `json:"weight"`
	Code          string  `json:"code,omitempty"`
	Reason        string  `json:"reason"`
	InstanceTypes int     `json:"instanceTypes"`
	Fitting       int     `json:"fitting"`
	Rejected      []Count `json:"rejected,omitempty"`
	Fix           string  `json:"toSchedule,omitempty"`
	// Overlays are the NodeOverlays behind the cheapest fitting offering.
	Overlays *Overlays `json:"overlays,omitempty"`
}

// Codes of Pool.Code beyond the engine's.
const (
	CodeTaintNotTolerated = "TaintNotTolerated"
	CodeRequirements      = "RequirementsIncompatible"
)

// ExplainPod explains the pod ref of in. in is the engine input of the
// snapshot (snapshot.Build); pods lists every pod of the snapshot, so bound
// and finished pods are found too. It fails only when the pod is not
// there.
func ExplainPod(in *engine.Input, pods []*corev1.Pod, nodeClaims []*karpv1.NodeClaim, noms []Nomination, ref engine.PodRef) (*Pod, error) {
	var pod *corev1.Pod
	for _, p := range pods {
		if p.Namespace == ref.Namespace && p.Name == ref.Name {
			pod = p
		}
	}
	if pod == nil {
		return nil, &NotFoundError{Kind: "pod", Name: ref.String()}
	}
	out := &Pod{Pod: ref.String()}
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		out.State = "Finished"
		out.Summary = fmt.Sprintf("the pod has finished (%s): it takes no capacity", pod.Status.Phase)
		return out, nil
	case pod.Spec.NodeName != "":
		explainBound(out, pod, nodeClaims, noms)
		return out, nil
	case pod.DeletionTimestamp != nil:
		out.State = "Deleting"
		out.Summary = "the pod is being deleted"
		return out, nil
	}
	out.State = "Pending"
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	out.Requests = map[string]string{}
	for name, q := range req {
		out.Requests[string(name)] = formatQty(name, q)
	}
	out.Verdict = verdict(in, pod)
	out.Nodes = explainNodes(in, pod, req)
	podTerms := podRequirements(pod)
	volZones, volNames := volumeZones(in, pod)
	for i := range in.NodePools {
		out.NodePools = append(out.NodePools, explainPool(in, &in.NodePools[i], pod, req, podTerms, volZones, volNames))
	}
	slices.SortStableFunc(out.NodePools, func(a, b Pool) int { return cmp.Compare(b.Weight, a.Weight) })
	for _, p := range out.NodePools {
		if p.Fix != "" {
			out.Fixes = append(out.Fixes, fmt.Sprintf("nodepool %s: %s", p.Name, p.Fix))
		}
	}
	if len(in.NodePools) == 0 {
		out.Fixes = append(out.Fixes, "create a NodePool whose requirements and taints admit the pod")
	}
	switch v := out.Verdict; {
	case v.Schedulable && v.ExistingNode != "":
		out.Summary = fmt.Sprintf("dovetail would place it on %s, which has room: it is waiting for kube-scheduler or for that capacity", v.ExistingNode)
	case v.Schedulable:
		out.Summary = fmt.Sprintf("dovetail would launch a %s %s node in %s (nodepool %s, $%s/h) for it", v.InstanceType, v.CapacityType, v.Zone, v.NodePool, formatPrice(v.PricePerHour))
		if ov := v.Overlays.String(); ov != "" {
			out.Summary += "; " + ov
		}
	default:
		out.Summary = fmt.Sprintf("%s: %s", v.Code, v.Message)
	}
	return out, nil
}

// NotFoundError is a reference to an object the snapshot lacks.
type NotFoundError struct{ Kind, Name string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s not found", e.Kind, e.Name)
}

func explainBound(out *Pod, pod *corev1.Pod, claims []*karpv1.NodeClaim, noms []Nomination) {
	out.State = "Bound"
	out.Node = pod.Spec.NodeName
	for _, nc := range claims {
		if nc.Status.NodeName == pod.Spec.NodeName {
			out.NodeClaim = nc.Name
		}
	}
	var nom *Nomination
	for i := range noms {
		if noms[i].Pod.Namespace == pod.Namespace && noms[i].Pod.Name == pod.Name {
			nom = &noms[i] // the last one recorded wins
		}
	}
	switch {
	case nom == nil && out.NodeClaim == "":
		out.PlacedBy = "kube-scheduler"
		out.Summary = fmt.Sprintf("bound to %s, a node dovetail did not launch; placed by kube-scheduler", out.Node)
	case nom == nil:
		out.PlacedBy = "kube-scheduler"
		out.Summary = fmt.Sprintf("bound to %s (NodeClaim %s); no plan recorded for the pod (its Nominated event is absent or expired): placed by kube-scheduler", out.Node, out.NodeClaim)
	default:
		out.PlannedOnto = nom.Target
		followed := nom.Target == out.Node || (nom.NodeClaim && nom.Target == out.NodeClaim)
		if followed {
			out.PlacedBy = "dovetail's plan"
			out.Summary = fmt.Sprintf("planned onto %s and bound there by kube-scheduler, as planned", nom.Target)
		} else {
			out.PlacedBy = "kube-scheduler"
			out.Summary = fmt.Sprintf("planned onto %s, but kube-scheduler bound it to %s: placed by kube-scheduler", nom.Target, out.Node)
		}
	}
}

// verdict solves the whole input and reports what happens to pod.
func verdict(in *engine.Input, pod *corev1.Pod) *Verdict {
	cp := *in
	cp.Options.SkipLowerBound = true
	plan, err := engine.Solve(&cp)
	if err != nil {
		return &Verdict{Code: "InvalidInput", Message: err.Error()}
	}
	ref := engine.PodRef{Namespace: pod.Namespace, Name: pod.Name}
	for _, e := range plan.Unschedulable {
		if e.Pod == ref {
			return &Verdict{Code: string(e.Code), Message: e.Message}
		}
	}
	for _, p := range plan.Existing {
		if p.Pod == ref {
			return &Verdict{Schedulable: true, ExistingNode: p.Node, Message: "fits on " + p.Node}
		}
	}
	for _, nc := range plan.NodeClaims {
		if slices.Contains(nc.Pods, ref) {
			o := nc.Offering
			return &Verdict{Schedulable: true, NodePool: nc.NodePool, InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType,
				PricePerHour: o.Price, Message: fmt.Sprintf("a new node of nodepool %s (%d instance types would do)", nc.NodePool, len(nc.InstanceTypeOptions)),
				Overlays: overlaysOf(poolOf(in, nc.NodePool), o.InstanceType, o.Zone, o.CapacityType)}
		}
	}
	return &Verdict{Code: "NotPending", Message: "the engine did not see the pod as pending (nominated to an in-flight NodeClaim?)", Schedulable: true}
}

// podRequirements returns one requirement set per required node affinity
// term (each with the node selector), or one from the node selector alone.
func podRequirements(pod *corev1.Pod) []requirements.Requirements {
	base := requirements.FromNodeSelector(pod.Spec.NodeSelector)
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []requirements.Requirements{base}
	}
	var out []requirements.Requirements
	for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		r, err := requirements.FromNodeSelectorTerm(t)
		if err != nil {
			continue
		}
		out = append(out, base.Intersection(r))
	}
	if len(out) == 0 {
		return []requirements.Requirements{base}
	}
	return out
}

func untolerated(taints []corev1.Taint, tolerations []corev1.Toleration) []corev1.Taint {
	var out []corev1.Taint
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), t, true) }) {
			out = append(out, *t)
		}
	}
	return out
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// explainNodes checks every existing node: deleting, cordoned, taints,
// node affinity, free resources.
func explainNodes(in *engine.Input, pod *corev1.Pod, req corev1.ResourceList) *Nodes {
	out := &Nodes{Total: len(in.Nodes)}
	counts := map[string]int{}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	for _, n := range in.Nodes {
		node := n.Node
		if n.MarkedForDeletion {
			counts["being deleted or disrupted"]++
			continue
		}
		if node.Spec.Unschedulable {
			counts["cordoned (spec.unschedulable)"]++
			continue
		}
		if ts := untolerated(node.Spec.Taints, pod.Spec.Tolerations); len(ts) > 0 {
			counts["taint "+taintString(ts[0])+" not tolerated"]++
			continue
		}
		if ok, _ := aff.Match(node); !ok {
			counts["node selector or required node affinity does not match its labels"]++
			continue
		}
		free := node.Status.Allocatable.DeepCopy()
		pods := int64(0)
		for _, p := range n.Pods {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			pods++
			for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
				f := free[name]
				f.Sub(q)
				free[name] = f
			}
		}
		if short := shortOf(req, free, node.Status.Allocatable.Pods().Value()-pods); short != "" {
			counts[short]++
			continue
		}
		out.Fit++
	}
	out.Rejected = sortedCounts(counts)
	return out
}

// shortOf names the first resource (cpu, memory, then the rest by name)
// that free lacks for req, or "" when req fits; podSlots < 1 is full.
func shortOf(req, free corev1.ResourceList, podSlots int64) string {
	if podSlots < 1 {
		return "no pod slot free"
	}
	for _, name := range resourceOrder(req) {
		q := req[name]
		if q.IsZero() {
			continue
		}
		f, ok := free[name]
		if !ok || f.Cmp(q) < 0 {
			return fmt.Sprintf("too little free %s", name)
		}
	}
	return ""
}

func resourceOrder(l corev1.ResourceList) []corev1.ResourceName {
	names := slices.Collect(maps.Keys(l))
	rank := func(n corev1.ResourceName) int {
		switch n {
		case corev1.ResourceCPU:
			return 0
		case corev1.ResourceMemory:
			return 1
		}
		return 2
	}
	slices.SortFunc(names, func(a, b corev1.ResourceName) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(a, b))
	})
	return names
}

func sortedCounts(m map[string]int) []Count {
	out := make([]Count, 0, len(m))
	for r, n := range m {
		out = append(out, Count{Reason: r, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}

// volumeZones intersects the zones the pod's claims allow; nil means any.
func volumeZones(in *engine.Input, pod *corev1.Pod) (zones []string, names []string) {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		z, ok := in.Volumes[key]
		if !ok {
			continue
		}
		names = append(names, v.PersistentVolumeClaim.ClaimName)
		if zones == nil {
			zones = slices.Clone(z)
			continue
		}
		zones = slices.DeleteFunc(zones, func(s string) bool { return !slices.Contains(z, s) })
		if len(zones) == 0 {
			zones = []string{}
		}
	}
	return zones, names
}

// nodeSide is the pool's requirements with its template labels and name.
func nodeSide(p *engine.NodePool) requirements.Requirements {
	labels := maps.Clone(p.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[karpv1.NodePoolLabelKey] = p.Name
	return p.Requirements.Intersection(requirements.FromLabels(labels))
}

func explainPool(in *engine.Input, p *engine.NodePool, pod *corev1.Pod, req corev1.ResourceList, terms []requirements.Requirements, volZones, volNames []string) Pool {
	out := Pool{Name: p.Name, Weight: p.Weight, InstanceTypes: len(p.InstanceTypes)}
	if p.UnsupportedReason != "" {
		out.Code, out.Reason = string(engine.Unsupported), p.UnsupportedReason
		return out
	}
	if ts := untolerated(p.Taints, pod.Spec.Tolerations); len(ts) > 0 {
		var s []string
		for _, t := range ts {
			s = append(s, taintString(t))
		}
		out.Code = CodeTaintNotTolerated
		out.Reason = "its taints are not tolerated: " + strings.Join(s, ", ")
		out.Fix = "add a toleration for " + strings.Join(s, ", ") + " to the pod"
		return out
	}
	ns := nodeSide(p)
	var combined requirements.Requirements
	var firstErr error
	ok := false
	for _, t := range terms {
		if err := ns.CompatibleWith(t, requirements.CompatibleOptions{OpenKeys: requirements.WellKnownKey}); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		combined, ok = ns.Intersection(t), true
		break
	}
	if !ok {
		out.Code = CodeRequirements
		out.Reason = "the pod's node selector or affinity is incompatible with the pool: " + firstErr.Error()
		out.Fix = "change the pod's node selector or affinity, or the pool's requirements and labels"
		return out
	}

	overhead := daemonOverhead(in, p, ns)
	zoneReq := combined.Get(corev1.LabelTopologyZone)
	ctReq := combined.Get(karpv1.CapacityTypeLabelKey)
	unavailable := map[engine.OfferingKey]bool{}
	for _, k := range in.Unavailable {
		unavailable[k] = true
	}
	counts := map[string]int{}
	stage := map[string]int{} // how far the types with this reason got: 1 labels, 2 resources, 3 offerings
	// First pass: label requirements; the survivors set "largest allowed".
	var allowed []*cloudprovider.InstanceType
	for _, it := range p.InstanceTypes {
		if r := labelMismatch(combined, it); r != "" {
			counts[r]++
			stage[r] = 1
			continue
		}
		allowed = append(allowed, it)
	}
	largest := map[corev1.ResourceName]resource.Quantity{}
	for _, it := range allowed {
		for name, q := range it.Allocatable() {
			if l, ok := largest[name]; !ok || q.Cmp(l) > 0 {
				largest[name] = q
			}
		}
	}
	need := req.DeepCopy()
	for name, q := range overhead {
		n := need[name]
		n.Add(q)
		need[name] = n
	}
	fitting := 0
	var fits []*cloudprovider.InstanceType
	var cheapest *cloudprovider.InstanceType
	var cheapestOff cloudprovider.Offering
	var zonesSeen, unavailSeen []string
	for _, it := range allowed {
		if r := tooSmall(need, it, largest); r != "" {
			counts[r]++
			stage[r] = 2
			continue
		}
		off, found, why := bestOffering(it, zoneReq, ctReq, volZones, unavailable)
		if !found {
			counts[why.reason]++
			stage[why.reason] = 3
			zonesSeen = append(zonesSeen, why.zones...)
			if why.unavailable {
				unavailSeen = append(unavailSeen, it.Name)
			}
			continue
		}
		fitting++
		fits = append(fits, it)
		if cheapest == nil || off.Price < cheapestOff.Price {
			cheapest, cheapestOff = it, off
		}
	}
	out.Fitting = fitting
	out.Rejected = sortedCounts(counts)
	if fitting == 0 {
		// The first failing rule is the one the types that got furthest
		// failed: labels, then resources, then offerings.
		deciding := ""
		for _, c := range out.Rejected {
			if deciding == "" || stage[c.Reason] > stage[deciding] {
				deciding = c.Reason
			}
		}
		out.Code, out.Reason, out.Fix = noFit(out.Rejected, deciding, len(p.InstanceTypes), largest, volNames, volZones)
		return out
	}
	// minValues: the engine launches a pod's node only with at least
	// minValues distinct values of each such key among the types that can
	// hold it, so the census holds the fitting types to the same rule.
	if err := combined.MinValuesSatisfied(func(key string) int { return distinctValues(fits, key, combined.Get(key)) }); err != nil {
		var mv *requirements.MinValuesError
		if errors.As(err, &mv) {
			out.Code = string(engine.MinValuesUnsatisfiable)
			out.Reason = fmt.Sprintf("%d of %d instance types fit, but they have %d distinct %s (the pool's minValues is %d)",
				fitting, len(p.InstanceTypes), mv.Available, mv.Key, mv.MinValues)
			out.Fix = fmt.Sprintf("lower the pool's minValues for %s, or allow more instance types that can hold the pod", mv.Key)
			return out
		}
	}
	// Limits: would the cheapest fitting type fit in what is left?
	if lim := limitShort(p, cheapest); lim != "" {
		out.Code = string(engine.NodePoolLimitReached)
		out.Reason = lim
		out.Fix = "raise the pool's spec.limits, or free capacity in it"
		return out
	}
	out.Reason = fmt.Sprintf("can take it: %d of %d instance types fit, cheapest %s at $%s/h", fitting, len(p.InstanceTypes), cheapest.Name, formatPrice(cheapestOff.Price))
	// The prices and capacity are the overlaid ones the engine decides
	// with: name the overlays behind the cheapest.
	if ov := overlaysOf(p, cheapest.Name, cheapestOff.Zone, cheapestOff.CapacityType); ov != nil {
		out.Overlays = ov
		out.Reason += " (" + ov.String() + ")"
	}
	return out
}

// distinctValues counts the distinct values of key (allowed by r) among
// the types' labels.
func distinctValues(types []*cloudprovider.InstanceType, key string, r *requirements.Requirement) int {
	seen := map[string]bool{}
	for _, it := range types {
		if v, ok := it.Labels[key]; ok && (r == nil || r.Has(v)) {
			seen[v] = true
		}
	}
	return len(seen)
}

// labelMismatch checks the instance type's own labels against the
// combined requirements: "kubernetes.io/arch not in [arm64]".
func labelMismatch(combined requirements.Requirements, it *cloudprovider.InstanceType) string {
	for r := range combined.All() {
		v, ok := it.Labels[r.Key()]
		if !ok {
			continue
		}
		if !r.Has(v) {
			return fmt.Sprintf("%s: %s", r.Key(), describeAllowed(r))
		}
	}
	return ""
}

func describeAllowed(r *requirements.Requirement) string {
	if r.IsFinite() {
		vals := r.Values()
		if len(vals) > 6 {
			return fmt.Sprintf("not among the %d values allowed", len(vals))
		}
		return "not in [" + strings.Join(vals, " ") + "]"
	}
	return "excluded by " + r.String()
}

// shortResource returns the first resource (cpu, memory, then by name) an
// instance type's allocatable cannot hold need of, or ok false; pods < 1
// counts as short of "pods".
func shortResource(need corev1.ResourceList, it *cloudprovider.InstanceType) (name corev1.ResourceName, has resource.Quantity, short bool) {
	alloc := it.Allocatable()
	for _, name := range resourceOrder(need) {
		q := need[name]
		if q.IsZero() {
			continue
		}
		a, ok := alloc[name]
		if ok && a.Cmp(q) >= 0 {
			continue
		}
		return name, a, true
	}
	if p, ok := alloc[corev1.ResourcePods]; ok && p.Value() < 1 {
		return corev1.ResourcePods, p, true
	}
	return "", resource.Quantity{}, false
}

// tooSmall is the pool census's reason for a type that cannot hold need:
// with the largest allowed size when no allowed type can.
func tooSmall(need corev1.ResourceList, it *cloudprovider.InstanceType, largest map[corev1.ResourceName]resource.Quantity) string {
	name, _, short := shortResource(need, it)
	if !short {
		return ""
	}
	q := need[name]
	if l, ok := largest[name]; !ok || l.Cmp(q) < 0 {
		return fmt.Sprintf("too small for %s (needs %s with daemonsets, largest allowed %s)", name, formatQty(name, q), formatQty(name, l))
	}
	return fmt.Sprintf("too small for %s (needs %s with daemonsets)", name, formatQty(name, q))
}

func formatQty(name corev1.ResourceName, q resource.Quantity) string {
	switch name {
	case corev1.ResourceCPU:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", float64(q.MilliValue())/1000), "0"), ".")
	case corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
		return fmt.Sprintf("%.1fGi", float64(q.Value())/(1<<30))
	}
	return q.String()
}

type offeringMiss struct {
	reason      string
	zones       []string
	unavailable bool
}

// bestOffering returns the cheapest available offering's price within the
// allowed zones and capacity types, or why there is none.
func bestOffering(it *cloudprovider.InstanceType, zoneReq, ctReq *requirements.Requirement, volZones []string, unavailable map[engine.OfferingKey]bool) (cloudprovider.Offering, bool, offeringMiss) {
	var cands cloudprovider.Offerings
	var inZone, held int
	ctOK := 0
	var zones []string
	for _, o := range it.Offerings {
		if ctReq != nil && !ctReq.Has(o.CapacityType) {
			continue
		}
		ctOK++
		if (zoneReq != nil && !zoneReq.Has(o.Zone)) || (volZones != nil && !slices.Contains(volZones, o.Zone)) {
			if !slices.Contains(zones, o.Zone) {
				zones = append(zones, o.Zone)
			}
			continue
		}
		inZone++
		if !o.Available || unavailable[engine.OfferingKey{InstanceType: it.Name, Zone: o.Zone, CapacityType: o.CapacityType}] {
			held++
			continue
		}
		cands = append(cands, o)
	}
	best, found := cands.Cheapest()
	switch {
	case found:
		return best, true, offeringMiss{}
	case ctOK == 0:
		return best, false, offeringMiss{reason: "no offering of an allowed capacity type"}
	case inZone == 0:
		allowed := "the allowed zones"
		if volZones != nil {
			allowed = "the volumes' zones [" + strings.Join(volZones, " ") + "]"
		} else if zoneReq != nil && zoneReq.IsFinite() {
			allowed = "zones [" + strings.Join(zoneReq.Values(), " ") + "]"
		}
		return best, false, offeringMiss{reason: "no offering in " + allowed, zones: zones}
	default:
		_ = held
		return best, false, offeringMiss{reason: "offerings held unavailable (insufficient capacity) in the allowed zones", unavailable: true}
	}
}

func noFit(rejected []Count, top string, types int, largest map[corev1.ResourceName]resource.Quantity, volNames, volZones []string) (code, reason, fix string) {
	var parts []string
	for _, c := range rejected {
		parts = append(parts, fmt.Sprintf("%d %s", c.Count, c.Reason))
	}
	reason = fmt.Sprintf("%d types: %s", types, strings.Join(parts, ", "))
	if types == 0 {
		return string(engine.ResourcesExceedAllTypes), "the pool has no instance types", "check the pool's requirements and its EC2NodeClass"
	}
	switch {
	case strings.HasPrefix(top, "too small for "):
		name := corev1.ResourceName(strings.Fields(strings.TrimPrefix(top, "too small for "))[0])
		l := largest[name]
		return string(engine.ResourcesExceedAllTypes), reason, fmt.Sprintf("lower the pod's %s request so that it and the daemonsets fit in %s, or allow larger instance types in the pool", name, formatQty(name, l))
	case strings.HasPrefix(top, "no offering in the volumes"):
		return string(engine.VolumeZoneConflict), reason, fmt.Sprintf("the claims %s pin the pod to zones [%s]: allow those zones in the pool (and its EC2NodeClass subnets)", strings.Join(volNames, ", "), strings.Join(volZones, " "))
	case strings.HasPrefix(top, "no offering"):
		return string(engine.NoAvailableOffering), reason, "allow more zones or capacity types (pod and pool requirements)"
	case strings.HasPrefix(top, "offerings held unavailable"):
		return string(engine.NoAvailableOffering), reason, "wait for the unavailable offerings to expire, or allow more instance types, zones or capacity types"
	}
	return string(engine.NoCompatibleNodePool), reason, "widen the pool's requirements or the pod's node affinity"
}

// daemonOverhead sums the requests of the DaemonSets that would run on a
// node of the pool: they tolerate its taints and their required node
// affinity matches its labels.
func daemonOverhead(in *engine.Input, p *engine.NodePool, ns requirements.Requirements) corev1.ResourceList {
	total := corev1.ResourceList{}
	node := &corev1.Node{}
	node.Labels = ns.Labels()
	for _, ds := range in.DaemonSets {
		pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		if len(untolerated(p.Taints, pod.Spec.Tolerations)) > 0 {
			continue
		}
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); !ok {
			continue
		}
		for name, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			t := total[name]
			t.Add(q)
			total[name] = t
		}
	}
	return total
}

// limitShort says which limit a new node of type it would break, or "".
func limitShort(p *engine.NodePool, it *cloudprovider.InstanceType) string {
	for _, name := range resourceOrder(p.Limits) {
		lim := p.Limits[name]
		used := p.Usage[name]
		var add resource.Quantity
		if name == "nodes" {
			add = *resource.NewQuantity(1, resource.DecimalSI)
		} else if c, ok := it.Capacity[name]; ok {
			add = c
		} else {
			continue
		}
		after := used.DeepCopy()
		after.Add(add)
		if after.Cmp(lim) > 0 {
			return fmt.Sprintf("limit %s %s reached: %s in use, the cheapest fitting node (%s) adds %s", name, lim.String(), used.String(), it.Name, add.String())
		}
	}
	return ""
}

func formatPrice(p float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", p), "0"), ".")
}
