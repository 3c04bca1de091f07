package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/overlay"
)

// Cluster is the state a snapshot is taken from: the API objects as a
// client or a manifest file holds them. Build reads it and never modifies
// it; the engine.Input it returns shares pointers into it (pods, nodes,
// daemonsets, labels), so callers must not modify those objects while the
// input is in use.
type Cluster struct {
	NodePools   []*karpv1.NodePool
	NodeClasses []*awsv1.EC2NodeClass
	// Nodes exist; pods with spec.nodeName are bound to them.
	Nodes []*corev1.Node
	// NodeClaims whose node is not (yet) among Nodes are in flight.
	NodeClaims []*karpv1.NodeClaim
	// Pods: bound (spec.nodeName), nominated to an in-flight NodeClaim
	// (status.nominatedNodeName), or pending.
	Pods []*corev1.Pod
	// Placed overrides where some of Pods are (View.Placed): read with
	// Place, never from the pods' own fields.
	Placed                 map[*corev1.Pod]Nomination
	DaemonSets             []*appsv1.DaemonSet
	PersistentVolumeClaims []*corev1.PersistentVolumeClaim
	PersistentVolumes      []*corev1.PersistentVolume
	StorageClasses         []*storagev1.StorageClass
	// Namespaces supply labels for namespaceSelectors; every namespace also
	// gets kubernetes.io/metadata.name, as the API server sets it.
	Namespaces []*corev1.Namespace
	// Unavailable offerings are out of capacity.
	Unavailable []engine.OfferingKey
	// Overlays adjust the pools' instance types (pkg/overlay) before the
	// engine sees them; nil when the NodeOverlay feature is off.
	Overlays []*karpv1alpha1.NodeOverlay
	// CapacityBuffers with the PodTemplates their status names become the
	// engine's Buffers (see Buffers); nil when the CapacityBuffer gate is
	// off.
	CapacityBuffers []*autoscalingv1beta1.CapacityBuffer
	PodTemplates    []*corev1.PodTemplate
	// Commitments are the Savings Plans and Reserved Instances of the
	// ConfigMap dovetail-commitments (pkg/commitment), copied into the
	// engine's input.
	Commitments commitment.Spec
}

// Options are the caller's settings for Build.
type Options struct {
	// Region is the topology.kubernetes.io/region of new nodes ("" leaves
	// it unset).
	Region string
	// Engine are the solve options copied into the input.
	Engine engine.Options
	// OverlayVerdicts, when set, is called with what became of each of
	// Cluster.Overlays (applied, invalid, conflicting), in their order.
	OverlayVerdicts func([]overlay.Verdict)
}

// Build converts c into the engine's input:
//
//   - each NodePool, with its EC2NodeClass and the instance types src
//     gives for the pair (see NodePool), and its usage: the capacity of
//     its nodes (label karpenter.sh/nodepool) and of its in-flight
//     NodeClaims, plus "nodes";
//   - Nodes with their bound pods (terminal pods left out); a node being
//     deleted or tainted karpenter.sh/disrupted is MarkedForDeletion;
//   - NodeClaims that have no node among Nodes (matched by status.nodeName
//     or status.providerID) and are not being deleted, as in-flight
//     claims with the pods nominated to them;
//   - pending pods: no spec.nodeName, not nominated to an in-flight claim,
//     not terminal, not being deleted, not owned by a DaemonSet (those are
//     overhead, through DaemonSets);
//   - volume zones (see VolumeZones) and namespace labels;
//   - the pools' instance types adjusted by Cluster.Overlays (pkg/overlay,
//     reported through Options.OverlayVerdicts).
//
// Errors: a NodePool whose nodeClassRef names a missing EC2NodeClass gives a
// *NodeClassNotFoundError; an invalid requirement or node class an
// *InvalidObjectError; a failing src its error, naming the NodePool. Pods
// bound to a node the snapshot lacks are ignored (a cache may see the pod
// before the node).
func Build(c *Cluster, src InstanceTypeSource, opts Options) (*engine.Input, error) {
	in := &engine.Input{
		DaemonSets:  c.DaemonSets,
		Unavailable: c.Unavailable,
		Region:      opts.Region,
		Commitments: c.Commitments,
		Options:     opts.Engine,
	}
	classes := make(map[string]*awsv1.EC2NodeClass, len(c.NodeClasses))
	for _, nc := range c.NodeClasses {
		classes[nc.Name] = nc
	}

	// Pools: resolve classes and instance types first; in-flight claims
	// need the types for their allocatable estimate.
	type poolInfo struct {
		np     *karpv1.NodePool
		nc     *awsv1.EC2NodeClass
		types  []*cloudprovider.InstanceType
		byName map[string]*cloudprovider.InstanceType
		usage  corev1.ResourceList
	}
	pools := make(map[string]*poolInfo, len(c.NodePools))
	order := make([]*poolInfo, 0, len(c.NodePools))
	for _, np := range c.NodePools {
		ref := np.Spec.Template.Spec.NodeClassRef
		if ref == nil {
			return nil, &InvalidObjectError{Kind: "NodePool", Name: np.Name, Errs: field.ErrorList{
				field.Required(field.NewPath("spec", "template", "spec", "nodeClassRef"), "a NodePool must reference its EC2NodeClass")}}
		}
		if !nodeClassSupported(ref) {
			return nil, &InvalidObjectError{Kind: "NodePool", Name: np.Name, Errs: field.ErrorList{
				field.NotSupported(field.NewPath("spec", "template", "spec", "nodeClassRef"), ref.Group+"/"+ref.Kind, []string{awsv1.Group + "/EC2NodeClass"})}}
		}
		nc, ok := classes[ref.Name]
		if !ok {
			return nil, &NodeClassNotFoundError{NodePool: np.Name, Kind: ref.Kind, NodeClass: ref.Name}
		}
		types, err := src.InstanceTypes(np, nc)
		if err != nil {
			return nil, fmt.Errorf("instance types of NodePool %q: %w", np.Name, err)
		}
		pi := &poolInfo{np: np, nc: nc, types: types, usage: corev1.ResourceList{}}
		pools[np.Name] = pi
		order = append(order, pi)
	}
	if len(c.Overlays) > 0 {
		ops := make([]overlay.Pool, len(order))
		for i, pi := range order {
			ops[i] = OverlayPool(pi.np, pi.types)
		}
		res := overlay.Apply(c.Overlays, ops)
		for _, pi := range order {
			pi.types = res.Types[pi.np.Name]
		}
		if opts.OverlayVerdicts != nil {
			opts.OverlayVerdicts(res.Verdicts)
		}
	}
	// Reservations: the room of NodeClaims planned into them and not
	// launched yet is taken off their available counts. Pools sharing a
	// type list keep sharing the adjusted one.
	if pending := countPendingReservations(c.NodeClaims); !pending.empty() {
		done := map[*cloudprovider.InstanceType][]*cloudprovider.InstanceType{}
		for _, pi := range order {
			if len(pi.types) == 0 {
				continue
			}
			if adj, ok := done[pi.types[0]]; ok && len(adj) == len(pi.types) {
				pi.types = adj
				continue
			}
			first := pi.types[0]
			pi.types = pending.apply(pi.types)
			done[first] = pi.types
		}
	}
	// Pools of one node class share its type list, and so its index.
	type listID struct {
		first **cloudprovider.InstanceType
		n     int
	}
	indexes := map[listID]map[string]*cloudprovider.InstanceType{}
	for _, pi := range order {
		var id listID
		if len(pi.types) > 0 {
			id = listID{&pi.types[0], len(pi.types)}
			if m, ok := indexes[id]; ok {
				pi.byName = m
				continue
			}
		}
		pi.byName = make(map[string]*cloudprovider.InstanceType, len(pi.types))
		for _, it := range pi.types {
			pi.byName[it.Name] = it
		}
		if id.first != nil {
			indexes[id] = pi.byName
		}
	}

	// Nodes.
	claimOf := NodeClaimsByNode(c.Nodes, c.NodeClaims) // prices a node from its own claim only
	nodeIdx := make(map[string]int, len(c.Nodes))
	providerIDs := make(map[string]bool, len(c.Nodes))
	for _, n := range c.Nodes {
		nodeIdx[n.Name] = len(in.Nodes)
		if n.Spec.ProviderID != "" {
			providerIDs[n.Spec.ProviderID] = true
		}
		en := engine.ExistingNode{
			Node:              n,
			NodePool:          n.Labels[karpv1.NodePoolLabelKey],
			MarkedForDeletion: n.DeletionTimestamp != nil || hasTaint(n.Spec.Taints, karpv1.DisruptedTaintKey),
		}
		if pi, ok := pools[en.NodePool]; ok {
			addUsage(pi.usage, n.Status.Capacity)
		}
		var types map[string]*cloudprovider.InstanceType
		if pi, ok := pools[en.NodePool]; ok {
			types = pi.byName
		}
		en.PricePerHour = nodePrice(n, claimOf[n.Name], types)
		in.Nodes = append(in.Nodes, en)
	}

	// In-flight NodeClaims.
	inflightIdx := map[string]int{}
	for _, nc := range c.NodeClaims {
		if nc.DeletionTimestamp != nil {
			continue
		}
		if _, ok := nodeIdx[nc.Status.NodeName]; ok && nc.Status.NodeName != "" {
			continue
		}
		if nc.Status.ProviderID != "" && providerIDs[nc.Status.ProviderID] {
			continue
		}
		reqs, errs := Requirements(nc.Spec.Requirements, field.NewPath("spec", "requirements"))
		if len(errs) > 0 {
			return nil, &InvalidObjectError{Kind: "NodeClaim", Name: nc.Name, Errs: errs}
		}
		poolName := nc.Labels[karpv1.NodePoolLabelKey]
		if poolName == "" {
			if r := reqs.Get(karpv1.NodePoolLabelKey); r != nil && r.Len() == 1 {
				poolName = r.Values()[0]
			}
		}
		var options []string
		if r := reqs.Get(corev1.LabelInstanceTypeStable); r != nil && r.IsFinite() {
			options = r.Values()
		}
		ifc := engine.InFlightNodeClaim{
			Name: nc.Name, NodePool: poolName, Requirements: reqs,
			Taints: nc.Spec.Taints, StartupTaints: nc.Spec.StartupTaints,
			InstanceTypeOptions: options,
			Allocatable:         nc.Status.Allocatable,
		}
		capacity := nc.Status.Capacity
		if pi, ok := pools[poolName]; ok {
			var known []*cloudprovider.InstanceType
			for _, name := range options {
				if it, ok := pi.byName[name]; ok {
					known = append(known, it)
				}
			}
			if len(ifc.Allocatable) == 0 {
				ifc.Allocatable = minAllocatable(known)
			}
			if len(capacity) == 0 {
				capacity = maxCapacity(known)
			}
			addUsage(pi.usage, capacity)
		}
		ifc.PricePerHour = annotatedPrice(nc)
		inflightIdx[nc.Name] = len(in.InFlight)
		if nc.Status.NodeName != "" {
			inflightIdx[nc.Status.NodeName] = len(in.InFlight)
		}
		in.InFlight = append(in.InFlight, ifc)
	}

	// Pods.
	for _, p := range c.Pods {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		node, nominated := Place(p, c.Placed)
		if node != "" {
			if i, ok := nodeIdx[node]; ok {
				in.Nodes[i].Pods = append(in.Nodes[i].Pods, p)
			}
			continue
		}
		if p.DeletionTimestamp != nil || ownedByDaemonSet(p) {
			continue
		}
		if i, ok := inflightIdx[nominated]; ok && nominated != "" {
			in.InFlight[i].Pods = append(in.InFlight[i].Pods, p)
			continue
		}
		in.Pods = append(in.Pods, p)
	}

	for _, pi := range order {
		pi.usage["nodes"] = *resource.NewQuantity(int64(countNodes(in, pi.np.Name)), resource.DecimalSI)
		np, err := NodePool(pi.np, pi.nc, pi.types, pi.usage)
		if err != nil {
			return nil, err
		}
		in.NodePools = append(in.NodePools, np)
	}

	in.Volumes = VolumeZones(c.PersistentVolumeClaims, c.PersistentVolumes, c.StorageClasses)
	in.Buffers = Buffers(c.CapacityBuffers, c.PodTemplates)
	in.NamespaceLabels = namespaceLabels(c.Namespaces, c.Pods)
	for _, b := range in.Buffers {
		if _, ok := in.NamespaceLabels[b.Namespace]; !ok {
			in.NamespaceLabels[b.Namespace] = map[string]string{corev1.LabelMetadataName: b.Namespace}
		}
	}
	return in, nil
}

func countNodes(in *engine.Input, pool string) int {
	n := 0
	for _, en := range in.Nodes {
		if en.NodePool == pool {
			n++
		}
	}
	for _, c := range in.InFlight {
		if c.NodePool == pool {
			n++
		}
	}
	return n
}

func hasTaint(taints []corev1.Taint, key string) bool {
	return slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.Key == key })
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "DaemonSet" })
}

// nodePrice is what a node costs: its offering's price when a NodeOverlay
// set it (so nodes and replacements are compared at the same adjusted
// prices), else its NodeClaim's recorded price, else its offering's in the
// pool's instance types (by its instance-type, zone and capacity-type
// labels); 0 when unknown.
func nodePrice(n *corev1.Node, nc *karpv1.NodeClaim, types map[string]*cloudprovider.InstanceType) float64 {
	var off *cloudprovider.Offering
	if it := types[n.Labels[corev1.LabelInstanceTypeStable]]; it != nil {
		zone, ct := n.Labels[corev1.LabelTopologyZone], n.Labels[karpv1.CapacityTypeLabelKey]
		for i := range it.Offerings {
			if o := &it.Offerings[i]; o.Zone == zone && o.CapacityType == ct {
				off = o
				break
			}
		}
	}
	if off != nil && off.PriceOverlay != "" {
		return off.Price
	}
	if p := annotatedPrice(nc); p > 0 {
		return p
	}
	if off != nil {
		return off.Price
	}
	return 0
}

// annotatedPrice is the dovetail.sh/price-per-hour a NodeClaim was launched
// at (0 when absent or not a positive finite number).
func annotatedPrice(nc *karpv1.NodeClaim) float64 {
	if nc == nil {
		return 0
	}
	v, err := strconv.ParseFloat(nc.Annotations[karpv1.AnnotationPricePerHour], 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

func addUsage(usage, add corev1.ResourceList) {
	for name, q := range add {
		sum := usage[name]
		sum.Add(q)
		usage[name] = sum
	}
}

// minAllocatable is the per-resource minimum of the types' allocatable: a
// conservative estimate for a claim that may launch as any of them.
func minAllocatable(types []*cloudprovider.InstanceType) corev1.ResourceList {
	if len(types) == 0 {
		return nil
	}
	out := types[0].Allocatable()
	for _, it := range types[1:] {
		a := it.Allocatable()
		for name, q := range out {
			o, ok := a[name]
			if !ok {
				delete(out, name)
				continue
			}
			if o.Cmp(q) < 0 {
				out[name] = o
			}
		}
	}
	return out
}

// maxCapacity is the per-resource maximum of the types' capacity: what a
// claim may add to its pool's usage at most.
func maxCapacity(types []*cloudprovider.InstanceType) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, it := range types {
		for name, q := range it.Capacity {
			if o, ok := out[name]; !ok || q.Cmp(o) > 0 {
				out[name] = q.DeepCopy()
			}
		}
	}
	return out
}

func namespaceLabels(nss []*corev1.Namespace, pods []*corev1.Pod) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, ns := range nss {
		l := make(map[string]string, len(ns.Labels)+1)
		for k, v := range ns.Labels {
			l[k] = v
		}
		l[corev1.LabelMetadataName] = ns.Name
		out[ns.Name] = l
	}
	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Namespace)
	}
	slices.SortFunc(names, cmp.Compare[string])
	for _, name := range slices.Compact(names) {
		if _, ok := out[name]; !ok {
			out[name] = map[string]string{corev1.LabelMetadataName: name}
		}
	}
	return out
}

// OverlayPool is the NodePool as pkg/overlay matches it: its name, its
// EC2NodeClass's name, its template labels, and its instance types.
func OverlayPool(np *karpv1.NodePool, types []*cloudprovider.InstanceType) overlay.Pool {
	p := overlay.Pool{Name: np.Name, Labels: np.Spec.Template.Labels, Types: types}
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		p.NodeClass = ref.Name
	}
	return p
}

// ApplyOverlays applies overlays (pkg/overlay) to the instance types of
// pools, by NodePool name, as Build does with Cluster.Overlays: the
// controllers use it on the types they read from the cloud provider, so
// the NodeClaims they make (options, planned offering) follow the same
// adjusted prices. types is not modified; the result holds every pool of
// types (a pool not among pools keeps its types).
func ApplyOverlays(overlays []*karpv1alpha1.NodeOverlay, pools []*karpv1.NodePool, types map[string][]*cloudprovider.InstanceType) (map[string][]*cloudprovider.InstanceType, []overlay.Verdict) {
	out := make(map[string][]*cloudprovider.InstanceType, len(types))
	maps.Copy(out, types)
	if len(overlays) == 0 {
		return out, nil
	}
	ops := make([]overlay.Pool, 0, len(pools))
	for _, np := range pools {
		if ts, ok := types[np.Name]; ok {
			ops = append(ops, OverlayPool(np, ts))
		}
	}
	res := overlay.Apply(overlays, ops)
	maps.Copy(out, res.Types)
	return out, res.Verdicts
}
