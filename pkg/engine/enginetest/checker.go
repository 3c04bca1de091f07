package enginetest

// An independent checker of plans. It uses only the engine's public types
// and Kubernetes' own helpers (pod requests, node affinity, taints, label
// selectors), never engine internals: it rebuilds the nodes the plan would
// create (labels from the planned offering's instance type, allocatable net
// of the daemonsets that would land there) and checks every placement
// against them as the kube-scheduler would with every other planned pod
// already bound.

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/commitment"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// checkNode is a node of the planned cluster.
type checkNode struct {
	node   *corev1.Node
	kind   string // existing, inflight, new
	pods   []*corev1.Pod
	placed []*corev1.Pod // the pending pods the plan put here
	ds     corev1.ResourceList
	dsPods int64
}

type checker struct {
	in     *engine.Input
	plan   *engine.Plan
	nodes  []*checkNode
	podOn  map[*corev1.Pod]*checkNode
	errs   []string
	byName map[string]*checkNode
	all    []*corev1.Pod
	terms  map[termKey]termVal
}

func (c *checker) fail(format string, args ...any) {
	if len(c.errs) < 50 {
		c.errs = append(c.errs, fmt.Sprintf(format, args...))
	}
}

// CheckPlan returns every violation it finds (nil: the plan is valid).
func CheckPlan(in *engine.Input, plan *engine.Plan) []string {
	c := &checker{in: in, plan: plan, podOn: map[*corev1.Pod]*checkNode{}, byName: map[string]*checkNode{}}
	c.checkAccounting()
	c.buildNodes()
	for _, n := range c.nodes {
		c.checkResources(n)
		c.checkPorts(n)
		for _, p := range n.placed {
			c.checkPod(p, n)
		}
	}
	c.checkLimits()
	c.checkPrice()
	c.checkCommitments()
	return c.errs
}

// checkCommitments: the covered claims, in plan order, fit what the
// commitments have left after the existing nodes and in-flight claims,
// each whole, by the commitment it names.
func (c *checker) checkCommitments() {
	led, _ := engine.CommitmentLedger(c.in)
	for _, nc := range c.plan.NodeClaims {
		if nc.Offering.Commitment == "" {
			continue
		}
		got := led.Take(commitment.Usage{InstanceType: nc.Offering.InstanceType, Zone: nc.Offering.Zone, Region: c.in.Region, PricePerHour: nc.Offering.ListPrice})
		if got.Commitment != nc.Offering.Commitment || !got.Full {
			c.fail("claim %s: covered by %s, but the commitments left cover %+v", nc.Name, nc.Offering.Commitment, got)
		}
	}
}

func ref(p *corev1.Pod) engine.PodRef { return engine.PodRef{Namespace: p.Namespace, Name: p.Name} }

// checkAccounting: every pending pod is placed once or reported once.
func (c *checker) checkAccounting() {
	seen := map[engine.PodRef]int{}
	for _, pl := range c.plan.Existing {
		seen[pl.Pod]++
	}
	for _, nc := range c.plan.NodeClaims {
		if len(nc.Pods) == 0 {
			c.fail("claim %s has no pods", nc.Name)
		}
		for _, r := range nc.Pods {
			seen[r]++
		}
	}
	for _, u := range c.plan.Unschedulable {
		seen[u.Pod]++
		if u.Code == "" || u.Message == "" {
			c.fail("pod %s unschedulable without code or message", u.Pod)
		}
	}
	for _, p := range c.in.Pods {
		if n := seen[ref(p)]; n != 1 {
			c.fail("pod %s accounted %d times", ref(p), n)
		}
		delete(seen, ref(p))
	}
	for r := range seen {
		c.fail("plan names unknown pod %s", r)
	}
	if !sort.SliceIsSorted(c.plan.Unschedulable, func(i, j int) bool {
		a, b := c.plan.Unschedulable[i].Pod, c.plan.Unschedulable[j].Pod
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	}) {
		c.fail("unschedulable pods not sorted")
	}
}

func (c *checker) podByRef() map[engine.PodRef]*corev1.Pod {
	m := map[engine.PodRef]*corev1.Pod{}
	for _, p := range c.in.Pods {
		m[ref(p)] = p
	}
	return m
}

func (c *checker) pool(name string) *engine.NodePool {
	for i := range c.in.NodePools {
		if c.in.NodePools[i].Name == name {
			return &c.in.NodePools[i]
		}
	}
	return nil
}

func findType(pool *engine.NodePool, name string) *cloudprovider.InstanceType {
	for _, it := range pool.InstanceTypes {
		if it.Name == name {
			return it
		}
	}
	return nil
}

func live(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func (c *checker) buildNodes() {
	pods := c.podByRef()
	for i := range c.in.Nodes {
		en := &c.in.Nodes[i]
		if en.MarkedForDeletion {
			continue
		}
		n := &checkNode{node: en.Node.DeepCopy(), kind: "existing"}
		for _, p := range en.Pods {
			if live(p) {
				n.pods = append(n.pods, p)
			}
		}
		c.nodes = append(c.nodes, n)
		c.byName[n.node.Name] = n
	}
	for i := range c.in.InFlight {
		f := &c.in.InFlight[i]
		l := f.Requirements.Labels()
		l[corev1.LabelHostname] = f.Name
		if f.NodePool != "" {
			l["karpenter.sh/nodepool"] = f.NodePool
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.Name, Labels: l}, Spec: corev1.NodeSpec{Taints: f.Taints}}
		node.Status.Allocatable = f.Allocatable
		n := &checkNode{node: node, kind: "inflight", pods: slices.Clone(f.Pods)}
		c.daemonOverhead(n)
		c.nodes = append(c.nodes, n)
		c.byName[f.Name] = n
	}
	for _, pl := range c.plan.Existing {
		n := c.byName[pl.Node]
		p := pods[pl.Pod]
		if n == nil || p == nil {
			c.fail("placement %s -> %s: unknown node or pod", pl.Pod, pl.Node)
			continue
		}
		if (n.kind == "inflight") != pl.InFlight {
			c.fail("placement %s -> %s: InFlight flag wrong", pl.Pod, pl.Node)
		}
		if n.node.Spec.Unschedulable {
			c.fail("placement %s -> %s: node is unschedulable", pl.Pod, pl.Node)
		}
		n.pods = append(n.pods, p)
		n.placed = append(n.placed, p)
	}
	names := map[string]bool{}
	for k := range c.byName {
		names[k] = true
	}
	for i := range c.plan.NodeClaims {
		nc := &c.plan.NodeClaims[i]
		if names[nc.Name] {
			c.fail("claim name %s is not unique", nc.Name)
		}
		names[nc.Name] = true
		pool := c.pool(nc.NodePool)
		if pool == nil {
			c.fail("claim %s: unknown pool %s", nc.Name, nc.NodePool)
			continue
		}
		it := findType(pool, nc.Offering.InstanceType)
		if it == nil {
			c.fail("claim %s: offering type %s not in pool", nc.Name, nc.Offering.InstanceType)
			continue
		}
		l := map[string]string{}
		for k, v := range it.Labels {
			l[k] = v
		}
		for k, v := range nc.Labels {
			if old, ok := l[k]; ok && old != v {
				c.fail("claim %s: label %s=%s contradicts instance type %s", nc.Name, k, v, old)
			}
			l[k] = v
		}
		l[corev1.LabelInstanceTypeStable] = it.Name
		l[corev1.LabelTopologyZone] = nc.Offering.Zone
		l["karpenter.sh/capacity-type"] = nc.Offering.CapacityType
		l["karpenter.sh/nodepool"] = pool.Name
		for _, o := range it.Offerings {
			if o.Zone == nc.Offering.Zone && o.ZoneID != "" {
				l["topology.k8s.aws/zone-id"] = o.ZoneID
			}
		}
		if c.in.Region != "" {
			l[corev1.LabelTopologyRegion] = c.in.Region
		}
		if l[corev1.LabelHostname] != nc.Name {
			c.fail("claim %s: hostname label %q", nc.Name, l[corev1.LabelHostname])
		}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Name, Labels: l}, Spec: corev1.NodeSpec{Taints: nc.Taints}}
		node.Status.Allocatable = it.Allocatable()
		n := &checkNode{node: node, kind: "new"}
		c.daemonOverhead(n)
		c.checkClaim(nc, pool, it, l, n)
		for _, r := range nc.Pods {
			p := pods[r]
			if p == nil {
				continue
			}
			n.pods = append(n.pods, p)
			n.placed = append(n.placed, p)
		}
		c.nodes = append(c.nodes, n)
		c.byName[nc.Name] = n
	}
	for _, n := range c.nodes {
		for _, p := range n.pods {
			c.podOn[p] = n
		}
	}
}

// daemonOverhead adds the daemonset pods that would run on a node.
func (c *checker) daemonOverhead(n *checkNode) {
	n.ds = corev1.ResourceList{}
	for _, ds := range c.in.DaemonSets {
		pod := &corev1.Pod{Spec: ds.Spec.Template.Spec}
		if ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n.node); !ok {
			continue
		}
		if _, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.node.Spec.Taints, pod.Spec.Tolerations, blocking, false); bad {
			continue
		}
		for k, q := range resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{}) {
			sum := n.ds[k]
			sum.Add(q)
			n.ds[k] = sum
		}
		n.dsPods++
	}
}

func blocking(t *corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
}

// checkClaim checks a new claim against its pool, its requirements and its
// options.
func (c *checker) checkClaim(nc *engine.NewNodeClaim, pool *engine.NodePool, it *cloudprovider.InstanceType, l map[string]string, n *checkNode) {
	if err := nc.Requirements.Matches(l); err != nil {
		c.fail("claim %s: node labels do not satisfy its requirements: %v", nc.Name, err)
	}
	if err := pool.Requirements.Matches(l); err != nil {
		c.fail("claim %s: node labels do not satisfy pool %s requirements: %v", nc.Name, pool.Name, err)
	}
	if pool.Requirements.Get("karpenter.sh/capacity-type") == nil && nc.Offering.CapacityType != cloudprovider.CapacityTypeOnDemand {
		c.fail("claim %s: pool leaves capacity type open but offering is %s", nc.Name, nc.Offering.CapacityType)
	}
	for k, v := range pool.Labels {
		if l[k] != v {
			c.fail("claim %s: missing template label %s=%s", nc.Name, k, v)
		}
	}
	if len(nc.InstanceTypeOptions) == 0 || nc.InstanceTypeOptions[0] != nc.Offering.InstanceType {
		c.fail("claim %s: offering type %s is not the first option", nc.Name, nc.Offering.InstanceType)
	}
	unavailable := map[engine.OfferingKey]bool{}
	for _, k := range c.in.Unavailable {
		unavailable[k] = true
	}
	zoneReq := nc.Requirements.Get(corev1.LabelTopologyZone)
	ctReq := nc.Requirements.Get("karpenter.sh/capacity-type")
	cheapest := math.Inf(1)
	found := false
	for _, name := range nc.InstanceTypeOptions {
		ot := findType(pool, name)
		if ot == nil {
			c.fail("claim %s: option %s not in pool", nc.Name, name)
			continue
		}
		if !nc.Requirements.Get(corev1.LabelInstanceTypeStable).Has(name) {
			c.fail("claim %s: option %s outside its instance-type requirement", nc.Name, name)
		}
		for _, o := range ot.Offerings {
			if !o.Available || unavailable[engine.OfferingKey{InstanceType: name, Zone: o.Zone, CapacityType: o.CapacityType}] {
				continue
			}
			if !zoneReq.Has(o.Zone) || !ctReq.Has(o.CapacityType) {
				continue
			}
			cheapest = math.Min(cheapest, o.Price)
			if name == nc.Offering.InstanceType && o.Zone == nc.Offering.Zone && o.CapacityType == nc.Offering.CapacityType {
				found = true
				if nc.Offering.Commitment != "" {
					// Covered: the list price is the catalog's, the price
					// its sliver.
					if o.Price != nc.Offering.ListPrice || math.Abs(nc.Offering.Price-o.Price*commitment.PriceFactor) > 1e-12 {
						c.fail("claim %s: covered offering price %v (list %v), catalog says %v", nc.Name, nc.Offering.Price, nc.Offering.ListPrice, o.Price)
					}
				} else if o.Price != nc.Offering.Price {
					c.fail("claim %s: offering price %v, catalog says %v", nc.Name, nc.Offering.Price, o.Price)
				}
			}
		}
	}
	if !found {
		c.fail("claim %s: offering %+v is not an available offering of its options", nc.Name, nc.Offering)
	}
	if nc.Offering.Commitment != "" {
		if nc.Offering.CapacityType != cloudprovider.CapacityTypeOnDemand || ctReq.Has(cloudprovider.CapacityTypeSpot) || ctReq.Has(cloudprovider.CapacityTypeReserved) {
			c.fail("claim %s: covered by %s but capacity type %s, requirement %s (want on-demand only)", nc.Name, nc.Offering.Commitment, nc.Offering.CapacityType, ctReq)
		}
	} else if nc.Offering.Price > cheapest+1e-12 {
		c.fail("claim %s: offering %v is not the cheapest available (%v)", nc.Name, nc.Offering.Price, cheapest)
	}
	// minValues over the options.
	for r := range pool.Requirements.All() {
		mv := r.MinValues()
		if mv == nil {
			continue
		}
		vals := map[string]bool{}
		for _, name := range nc.InstanceTypeOptions {
			if ot := findType(pool, name); ot != nil {
				if v, ok := ot.Labels[r.Key()]; ok && r.Has(v) {
					vals[v] = true
				}
			}
		}
		if r.Key() == corev1.LabelInstanceTypeStable {
			vals = map[string]bool{}
			for _, name := range nc.InstanceTypeOptions {
				vals[name] = true
			}
		}
		if len(vals) < *mv {
			c.fail("claim %s: %d distinct values of %s among options, pool wants minValues %d", nc.Name, len(vals), r.Key(), *mv)
		}
	}
}

// requests sums pod requests as the kube-scheduler does.
func requests(pods []*corev1.Pod) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for _, p := range pods {
		for k, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			s := sum[k]
			s.Add(q)
			sum[k] = s
		}
	}
	return sum
}

func (c *checker) checkResources(n *checkNode) {
	if len(n.placed) == 0 {
		return
	}
	used := requests(n.pods)
	for k, q := range n.ds {
		s := used[k]
		s.Add(q)
		used[k] = s
	}
	pods := int64(len(n.pods)) + n.dsPods
	alloc := n.node.Status.Allocatable
	for k, q := range used {
		if q.IsZero() {
			continue
		}
		a, ok := alloc[k]
		if !ok || q.Cmp(a) > 0 {
			c.fail("node %s (%s): %s used %s > allocatable %s", n.node.Name, n.kind, k, q.String(), a.String())
		}
	}
	if ap, ok := alloc[corev1.ResourcePods]; ok && pods > ap.Value() {
		c.fail("node %s (%s): %d pods > allocatable %d", n.node.Name, n.kind, pods, ap.Value())
	}
}

type port struct {
	ip    string
	proto corev1.Protocol
	port  int32
}

func podPorts(p *corev1.Pod) []port {
	var out []port
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, ctr := range cs {
			for _, cp := range ctr.Ports {
				if cp.HostPort <= 0 {
					continue
				}
				proto := cp.Protocol
				if proto == "" {
					proto = corev1.ProtocolTCP
				}
				ip := cp.HostIP
				if ip == "" {
					ip = "0.0.0.0"
				}
				out = append(out, port{ip, proto, cp.HostPort})
			}
		}
	}
	return out
}

func (c *checker) checkPorts(n *checkNode) {
	var all []port
	var owner []*corev1.Pod
	for _, p := range n.pods {
		for _, hp := range podPorts(p) {
			for i, o := range all {
				if o.port == hp.port && o.proto == hp.proto && (o.ip == hp.ip || o.ip == "0.0.0.0" || hp.ip == "0.0.0.0") {
					c.fail("node %s: host port %d/%s of %s conflicts with %s", n.node.Name, hp.port, hp.proto, ref(p), ref(owner[i]))
				}
			}
			all = append(all, hp)
			owner = append(owner, p)
		}
	}
}

// checkPod checks one planned pod on its node against everything else.
func (c *checker) checkPod(p *corev1.Pod, n *checkNode) {
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(p).Match(n.node); err != nil || !ok {
		c.fail("pod %s on %s: node selector/affinity not satisfied (labels %v)", ref(p), n.node.Name, n.node.Labels)
	}
	if t, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.node.Spec.Taints, p.Spec.Tolerations, blocking, false); bad {
		c.fail("pod %s on %s: taint %v not tolerated", ref(p), n.node.Name, t)
	}
	for _, v := range p.Spec.Volumes {
		claim := ""
		switch {
		case v.PersistentVolumeClaim != nil:
			claim = v.PersistentVolumeClaim.ClaimName
		case v.Ephemeral != nil:
			claim = p.Name + "-" + v.Name
		default:
			continue
		}
		zones, ok := c.in.Volumes[p.Namespace+"/"+claim]
		if ok && !slices.Contains(zones, n.node.Labels[corev1.LabelTopologyZone]) {
			c.fail("pod %s on %s: volume %s allows zones %v, node is in %q", ref(p), n.node.Name, claim, zones, n.node.Labels[corev1.LabelTopologyZone])
		}
	}
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				c.checkAffinity(p, n, t)
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				c.checkAnti(p, n, t)
			}
		}
	}
	c.checkSymmetricAnti(p, n)
	for _, sc := range p.Spec.TopologySpreadConstraints {
		if sc.WhenUnsatisfiable == corev1.DoNotSchedule {
			c.checkSpread(p, n, sc)
		}
	}
}

// termSelector returns the selector of an affinity term with
// matchLabelKeys/mismatchLabelKeys applied, and its namespace test.
type termKey struct {
	owner *corev1.Pod
	sel   *metav1.LabelSelector
	key   string
}

type termVal struct {
	sel  labels.Selector
	nsOK func(string) bool
}

func (c *checker) termSelector(owner *corev1.Pod, t corev1.PodAffinityTerm) (labels.Selector, func(ns string) bool) {
	k := termKey{owner, t.LabelSelector, t.TopologyKey}
	if v, ok := c.terms[k]; ok {
		return v.sel, v.nsOK
	}
	sel, nsOK := c.buildTermSelector(owner, t)
	if c.terms == nil {
		c.terms = map[termKey]termVal{}
	}
	c.terms[k] = termVal{sel, nsOK}
	return sel, nsOK
}

func (c *checker) buildTermSelector(owner *corev1.Pod, t corev1.PodAffinityTerm) (labels.Selector, func(ns string) bool) {
	sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
	if err != nil {
		c.fail("pod %s: bad selector %v", ref(owner), err)
		return labels.Nothing(), func(string) bool { return false }
	}
	if !labels.MatchesNothing(sel) {
		for _, k := range t.MatchLabelKeys {
			if v, ok := owner.Labels[k]; ok {
				r, _ := labels.NewRequirement(k, "in", []string{v})
				sel = sel.Add(*r)
			}
		}
		for _, k := range t.MismatchLabelKeys {
			if v, ok := owner.Labels[k]; ok {
				r, _ := labels.NewRequirement(k, "notin", []string{v})
				sel = sel.Add(*r)
			}
		}
	}
	nsMatch := func(ns string) bool {
		if slices.Contains(t.Namespaces, ns) {
			return true
		}
		if t.NamespaceSelector != nil {
			nsSel, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector)
			if err == nil && nsSel.Matches(labels.Set(c.in.NamespaceLabels[ns])) {
				return true
			}
			return false
		}
		return len(t.Namespaces) == 0 && ns == owner.Namespace
	}
	return sel, nsMatch
}

func (c *checker) allPods() []*corev1.Pod {
	if c.all == nil {
		for _, n := range c.nodes {
			c.all = append(c.all, n.pods...)
		}
	}
	return c.all
}

func (c *checker) checkAffinity(p *corev1.Pod, n *checkNode, t corev1.PodAffinityTerm) {
	sel, nsOK := c.termSelector(p, t)
	val, has := n.node.Labels[t.TopologyKey]
	others, sameDomain := 0, 0
	for _, q := range c.allPods() {
		if q == p || !nsOK(q.Namespace) || !sel.Matches(labels.Set(q.Labels)) {
			continue
		}
		others++
		if qv, ok := c.podOn[q].node.Labels[t.TopologyKey]; has && ok && qv == val {
			sameDomain++
		}
	}
	if sameDomain > 0 {
		return
	}
	if others == 0 && nsOK(p.Namespace) && sel.Matches(labels.Set(p.Labels)) {
		return // the first pod of a self-affine group
	}
	c.fail("pod %s on %s: required affinity (%s on %s) has no matching pod in its domain %q (%d elsewhere)", ref(p), n.node.Name, sel, t.TopologyKey, val, others)
}

func (c *checker) checkAnti(p *corev1.Pod, n *checkNode, t corev1.PodAffinityTerm) {
	sel, nsOK := c.termSelector(p, t)
	val, has := n.node.Labels[t.TopologyKey]
	if !has {
		return
	}
	for _, q := range c.allPods() {
		if q == p || !nsOK(q.Namespace) || !sel.Matches(labels.Set(q.Labels)) {
			continue
		}
		if qv, ok := c.podOn[q].node.Labels[t.TopologyKey]; ok && qv == val {
			c.fail("pod %s on %s: anti-affinity (%s on %s) violated by %s on %s", ref(p), n.node.Name, sel, t.TopologyKey, ref(q), c.podOn[q].node.Name)
			return
		}
	}
}

// checkSymmetricAnti: no other pod's required anti-affinity matches p in
// p's domain.
func (c *checker) checkSymmetricAnti(p *corev1.Pod, n *checkNode) {
	for _, q := range c.allPods() {
		if q == p || q.Spec.Affinity == nil || q.Spec.Affinity.PodAntiAffinity == nil {
			continue
		}
		for _, t := range q.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			sel, nsOK := c.termSelector(q, t)
			if !nsOK(p.Namespace) || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			qv, ok1 := c.podOn[q].node.Labels[t.TopologyKey]
			pv, ok2 := n.node.Labels[t.TopologyKey]
			if ok1 && ok2 && qv == pv {
				c.fail("pod %s on %s: %s on %s has anti-affinity (%s on %s) against it", ref(p), n.node.Name, ref(q), c.podOn[q].node.Name, sel, t.TopologyKey)
			}
		}
	}
}

// checkSpread checks a DoNotSchedule constraint as if p were bound last:
// counts over the eligible nodes (nodeAffinityPolicy, nodeTaintsPolicy),
// domains = their values, min treated as 0 below minDomains.
func (c *checker) checkSpread(p *corev1.Pod, n *checkNode, sc corev1.TopologySpreadConstraint) {
	sel, err := metav1.LabelSelectorAsSelector(sc.LabelSelector)
	if err != nil {
		c.fail("pod %s: bad spread selector", ref(p))
		return
	}
	if !labels.MatchesNothing(sel) {
		for _, k := range sc.MatchLabelKeys {
			if v, ok := p.Labels[k]; ok {
				r, _ := labels.NewRequirement(k, "in", []string{v})
				sel = sel.Add(*r)
			}
		}
	}
	honorAff := sc.NodeAffinityPolicy == nil || *sc.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor
	honorTaints := sc.NodeTaintsPolicy != nil && *sc.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor
	keys := []string{}
	for _, o := range p.Spec.TopologySpreadConstraints {
		if o.WhenUnsatisfiable == corev1.DoNotSchedule {
			keys = append(keys, o.TopologyKey)
		}
	}
	eligible := func(m *checkNode) bool {
		for _, k := range keys {
			if _, ok := m.node.Labels[k]; !ok {
				return false
			}
		}
		if honorAff {
			if ok, _ := nodeaffinity.GetRequiredNodeAffinity(p).Match(m.node); !ok {
				return false
			}
		}
		if honorTaints {
			if _, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), m.node.Spec.Taints, p.Spec.Tolerations, blocking, false); bad {
				return false
			}
		}
		return true
	}
	if !eligible(n) {
		c.fail("pod %s on %s: node not eligible for its spread on %s", ref(p), n.node.Name, sc.TopologyKey)
		return
	}
	counts := map[string]int{}
	for _, m := range c.nodes {
		if !eligible(m) {
			continue
		}
		v := m.node.Labels[sc.TopologyKey]
		if _, ok := counts[v]; !ok {
			counts[v] = 0
		}
		for _, q := range m.pods {
			if q != p && q.Namespace == p.Namespace && sel.Matches(labels.Set(q.Labels)) {
				counts[v]++
			}
		}
	}
	minC := math.MaxInt
	for _, v := range counts {
		minC = min(minC, v)
	}
	minDomains := int32(1)
	if sc.MinDomains != nil {
		minDomains = *sc.MinDomains
	}
	if int32(len(counts)) < minDomains {
		minC = 0
	}
	self := 0
	if sel.Matches(labels.Set(p.Labels)) {
		self = 1
	}
	d := n.node.Labels[sc.TopologyKey]
	if skew := counts[d] + self - minC; skew > int(sc.MaxSkew) {
		c.fail("pod %s on %s: spread on %s skew %d > maxSkew %d (domain %q count %d, min %d, %d domains)", ref(p), n.node.Name, sc.TopologyKey, skew, sc.MaxSkew, d, counts[d], minC, len(counts))
	}
}

// checkLimits: usage plus the largest capacity any claim's options could
// launch stays within each pool's limits.
func (c *checker) checkLimits() {
	for i := range c.in.NodePools {
		pool := &c.in.NodePools[i]
		if len(pool.Limits) == 0 {
			continue
		}
		total := corev1.ResourceList{}
		for k, q := range pool.Usage {
			total[k] = q.DeepCopy()
		}
		nodes := int64(0)
		for _, nc := range c.plan.NodeClaims {
			if nc.NodePool != pool.Name {
				continue
			}
			nodes++
			most := corev1.ResourceList{}
			for _, name := range nc.InstanceTypeOptions {
				if it := findType(pool, name); it != nil {
					for k, q := range it.Capacity {
						if m, ok := most[k]; !ok || q.Cmp(m) > 0 {
							most[k] = q.DeepCopy()
						}
					}
				}
			}
			for k, q := range most {
				s := total[k]
				s.Add(q)
				total[k] = s
			}
		}
		for k, lim := range pool.Limits {
			if k == "nodes" {
				used := total[k]
				if used.Value()+nodes > lim.Value() {
					c.fail("pool %s: nodes %d + %d > limit %d", pool.Name, used.Value(), nodes, lim.Value())
				}
				continue
			}
			if q, ok := total[k]; ok && q.Cmp(lim) > 0 {
				c.fail("pool %s: %s would reach %s > limit %s", pool.Name, k, q.String(), lim.String())
			}
		}
	}
}

func (c *checker) checkPrice() {
	sum := 0.0
	for _, nc := range c.plan.NodeClaims {
		sum += nc.Offering.Price
	}
	if math.Abs(sum-c.plan.PricePerHour) > 1e-9*math.Max(1, sum) {
		c.fail("PricePerHour %v != sum of offerings %v", c.plan.PricePerHour, sum)
	}
	if c.plan.LowerBound > c.plan.PricePerHour*(1+1e-9)+1e-12 {
		c.fail("LowerBound %v above price %v", c.plan.LowerBound, c.plan.PricePerHour)
	}
}

// describeErrs joins violations for test output.
// DescribeErrs joins violations, one a line.
func DescribeErrs(errs []string) string { return strings.Join(errs, "\n") }

var _ = resource.MustParse
