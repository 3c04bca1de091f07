package counter

import (
	"context"
	resourcehelper "k8s.io/component-helpers/resource"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// ResourceNodes is the pseudo-resource counting a pool's nodes in
// status.resources and spec.limits.
const ResourceNodes corev1.ResourceName = "nodes"

// Controller sums what a NodePool's launched NodeClaims hold into
// status.resources and status.nodes, and exports the pool's usage, limits,
// node mix and hourly cost as metrics.
type Controller struct {
	kube    client.Client
	metrics *metrics.Registry
}

// NewController returns the controller.
func NewController(kube client.Client, m *metrics.Registry) *Controller {
	return &Controller{kube: kube, metrics: m}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodepool.counter" }

// Register adds the controller to the manager; NodeClaim and Node changes
// re-count their pool (found by the karpenter.sh/nodepool label).
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	toPool := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if pool := nodeclaimutil.NodePool(o); pool != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
		}
		return nil
	})
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, toPool).
		Watches(&corev1.Node{}, toPool).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			// A bound pod's requests count on its node: recount the node's pool.
			name := o.(*corev1.Pod).Spec.NodeName
			if name == "" {
				return nil
			}
			var n corev1.Node
			// Read-only: the cached object itself, not a copy per pod event.
			if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, &n, client.UnsafeDisableDeepCopy); err != nil {
				return nil
			}
			if pool := n.Labels[karpv1.NodePoolLabelKey]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})).
		Complete(c)
}

// Count is what a pool's launched NodeClaims add up to.
type Count struct {
	// Resources sums capacity (the node's when it has registered, else the
	// NodeClaim's estimate) plus ResourceNodes.
	Resources corev1.ResourceList
	Nodes     int64
	// ByType counts NodeClaims by capacity type, then instance type.
	ByType map[string]map[string]int
	// CostPerHour sums the launch prices (dovetail.sh/price-per-hour).
	CostPerHour float64
}

// Reconcile recounts one pool.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.metrics.DeleteNodePool(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var ncs karpv1.NodeClaimList
	// Everything listed here is only read: the cached objects, not copies
	// (a recount runs on every pod event; at 30,000 pods copied lists per
	// recount were most of the controller's allocations).
	if err := c.kube.List(ctx, &ncs, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	nodes := map[string]*corev1.Node{}
	var nodeList corev1.NodeList
	if err := c.kube.List(ctx, &nodeList, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return reconcile.Result{}, err
	}
	for i := range nodeList.Items {
		nodes[nodeList.Items[i].Spec.ProviderID] = &nodeList.Items[i]
	}
	count := CountNodeClaims(ncs.Items, nodes)
	requests := map[string]corev1.ResourceList{}
	for i := range nodeList.Items {
		n := &nodeList.Items[i]
		var pods corev1.PodList
		if err := c.kube.List(ctx, &pods, client.MatchingFields{nodeclaimutil.IndexPodNodeName: n.Name}, client.UnsafeDisableDeepCopy); err != nil {
			return reconcile.Result{}, err
		}
		requests[n.Name] = PodRequests(pods.Items)
	}
	c.export(np, count)
	c.exportNodes(np, nodeList.Items, requests)

	base := np.DeepCopy()
	np.Status.Resources = count.Resources
	np.Status.Nodes = &count.Nodes
	if equality.Semantic.DeepEqual(base.Status, np.Status) {
		return reconcile.Result{}, nil
	}
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, np, base); err != nil {
		return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
	}
	return reconcile.Result{}, nil
}

// CountNodeClaims adds up the launched NodeClaims (those with a
// providerID); nodes maps providerIDs to registered Nodes, whose reported
// capacity replaces the launch estimate.
func CountNodeClaims(ncs []karpv1.NodeClaim, nodes map[string]*corev1.Node) Count {
	out := Count{Resources: corev1.ResourceList{}, ByType: map[string]map[string]int{}}
	for i := range ncs {
		nc := &ncs[i]
		if nc.Status.ProviderID == "" {
			continue
		}
		capacity := nc.Status.Capacity
		if n, ok := nodes[nc.Status.ProviderID]; ok && len(n.Status.Capacity) > 0 {
			capacity = n.Status.Capacity
		}
		for name, q := range capacity {
			sum := out.Resources[name]
			sum.Add(q)
			out.Resources[name] = sum
		}
		out.Nodes++
		ct, it := nc.Labels[karpv1.CapacityTypeLabelKey], nc.Labels[corev1.LabelInstanceTypeStable]
		if out.ByType[ct] == nil {
			out.ByType[ct] = map[string]int{}
		}
		out.ByType[ct][it]++
		if p, ok := nodeclaimutil.HourlyPrice(nc); ok {
			out.CostPerHour += p
		}
	}
	out.Resources[ResourceNodes] = *resource.NewQuantity(out.Nodes, resource.DecimalSI)
	return out
}

// export sets the pool's gauges, dropping series that no longer apply.
func (c *Controller) export(np *karpv1.NodePool, count Count) {
	m := c.metrics
	m.DeleteNodePoolCounts(np.Name)
	m.NodePoolInfo.WithLabelValues(np.Name, np.Spec.Template.Labels["team"]).Set(1)
	for _, name := range sortedNames(count.Resources) {
		q := count.Resources[name]
		m.NodePoolUsage.WithLabelValues(string(name), np.Name).Set(q.AsApproximateFloat64())
	}
	limits := corev1.ResourceList(np.Spec.Limits)
	for _, name := range sortedNames(limits) {
		q := limits[name]
		m.NodePoolLimit.WithLabelValues(string(name), np.Name).Set(q.AsApproximateFloat64())
	}
	for ct, types := range count.ByType {
		for it, n := range types {
			m.NodePoolNodes.WithLabelValues(np.Name, ct, it).Set(float64(n))
		}
	}
	m.NodePoolCostPerHour.WithLabelValues(np.Name).Set(count.CostPerHour)
}

// exportNodes sets each node's allocatable and the requests of the pods
// bound to it.
func (c *Controller) exportNodes(np *karpv1.NodePool, nodes []corev1.Node, requests map[string]corev1.ResourceList) {
	m := c.metrics
	for i := range nodes {
		n := &nodes[i]
		l := n.Labels
		labels := func(res corev1.ResourceName) []string {
			return []string{n.Name, np.Name, string(res), l[karpv1.CapacityTypeLabelKey], l[corev1.LabelInstanceTypeStable], l[corev1.LabelTopologyZone]}
		}
		for _, name := range sortedNames(n.Status.Allocatable) {
			q := n.Status.Allocatable[name]
			m.NodesAllocatable.WithLabelValues(labels(name)...).Set(q.AsApproximateFloat64())
		}
		req := requests[n.Name]
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods} {
			q := req[name]
			m.NodesTotalPodRequests.WithLabelValues(labels(name)...).Set(q.AsApproximateFloat64())
		}
	}
}

// PodRequests sums what active pods request (init containers, sidecars and
// overhead as the scheduler counts them), with one "pods" per pod.
func PodRequests(pods []corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{}
	n := int64(0)
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		n++
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	out[corev1.ResourcePods] = *resource.NewQuantity(n, resource.DecimalSI)
	return out
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
