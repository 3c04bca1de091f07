package counter

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	resourcehelper "k8s.io/component-helpers/resource"
	"sigs.k8s.io/controller-runtime/pkg/event"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
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
// node mix and hourly cost as metrics, and each of its nodes' allocatable
// and pod requests.
//
// It has two kinds of keys: a NodePool (its name) and a node (nodeKeys,
// the node's name). A pod event recounts only its node, and a node's
// heartbeat only that node: a pool recount lists the pool's NodeClaims and
// Nodes but no pods, so its cost does not grow with the pods, and a pod
// event does not cost a pass over the pool (at 30,000 pods the per-pod
// pool recount was most of what the process allocated).
type Controller struct {
	kube    client.Client
	metrics *metrics.Registry
	// claims and nodes are the NodeClaim and Node informers' stores (set
	// by Register): a pool recount reads their objects in place. Through
	// the client, every recount copied each NodeClaim and Node struct into
	// a list (at 3,000 nodes some 7 MB a recount, once a second).
	claims, nodes toolscache.Store
}

// nodeKeys is the Namespace of a node's reconcile key (NodePools are
// cluster-scoped: their keys have none).
const nodeKeys = "node"

// NewController returns the controller.
func NewController(kube client.Client, m *metrics.Registry) *Controller {
	return &Controller{kube: kube, metrics: m}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodepool.counter" }

// Register adds the controller to the manager. NodeClaim changes recount
// their pool (found by the karpenter.sh/nodepool label); Node changes
// recount the node, and their pool when the node comes, goes or changes
// what the pool counts (labels, capacity, provider id); pod changes
// PoolRecountDelay is the longest a pool's counted status waits after a
// NodeClaim or Node event (events within it share one recount).
const PoolRecountDelay = time.Second

// recount the pod's node.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	for _, s := range []struct {
		obj   client.Object
		store *toolscache.Store
	}{{&karpv1.NodeClaim{}, &c.claims}, {&corev1.Node{}, &c.nodes}} {
		inf, err := mgr.GetCache().GetInformer(ctx, s.obj)
		if err != nil {
			return fmt.Errorf("nodepool counter: %T informer: %w", s.obj, err)
		}
		if *s.store = nodeclaimutil.Store(inf); *s.store == nil {
			return fmt.Errorf("nodepool counter: the %T informer has no store", s.obj)
		}
	}
	c.metrics.ClusterStateNodeCount.SetSource(c.nodeCount)
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	// A pool recount lists the pool's NodeClaims and Nodes: the NodeClaim
	// and Node events of a burst of launches are coalesced into one
	// recount per PoolRecountDelay, not one each.
	pool := func(q queue, o client.Object) {
		if p := nodeclaimutil.NodePool(o); p != "" {
			q.AddAfter(poolKey(p), PoolRecountDelay)
		}
	}
	toPool := handler.Funcs{
		CreateFunc:  func(_ context.Context, e event.CreateEvent, q queue) { pool(q, e.Object) },
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { pool(q, e.Object) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { pool(q, e.Object) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			pool(q, e.ObjectOld)
			pool(q, e.ObjectNew)
		},
	}
	node := func(q queue, o client.Object, counted bool) {
		q.Add(nodeKey(o.GetName()))
		if counted {
			pool(q, o)
		}
	}
	nodes := handler.Funcs{
		CreateFunc:  func(_ context.Context, e event.CreateEvent, q queue) { node(q, e.Object, true) },
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { node(q, e.Object, true) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { node(q, e.Object, true) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			old, cur := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			counted := !maps.Equal(old.Labels, cur.Labels) || old.Spec.ProviderID != cur.Spec.ProviderID ||
				!equality.Semantic.DeepEqual(old.Status.Capacity, cur.Status.Capacity)
			if !counted && equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) {
				return // a heartbeat or a condition: nothing counted here changed
			}
			node(q, old, counted)
			node(q, cur, counted)
		},
	}
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, toPool).
		Watches(&corev1.Node{}, nodes).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			// A bound pod's requests count on its node: recount the node.
			if name := o.(*corev1.Pod).Spec.NodeName; name != "" {
				return []reconcile.Request{nodeKey(name)}
			}
			return nil
		})).
		Complete(c)
}

// nodeCount emits karpenter_cluster_state_node_count when it is scraped:
// the distinct provider ids of every Node (its name when it has none) and
// of every launched NodeClaim, read from the stores in place.
func (c *Controller) nodeCount(emit metrics.Emit) {
	nodes, claims := c.nodes.List(), c.claims.List()
	ids := make(map[string]struct{}, len(nodes)+len(claims))
	for _, o := range nodes {
		n := o.(*corev1.Node)
		id := n.Spec.ProviderID
		if id == "" {
			id = n.Name
		}
		ids[id] = struct{}{}
	}
	for _, o := range claims {
		if id := o.(*karpv1.NodeClaim).Status.ProviderID; id != "" {
			ids[id] = struct{}{}
		}
	}
	emit(float64(len(ids)))
}

func poolKey(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
}

func nodeKey(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: nodeKeys, Name: name}}
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

// Reconcile recounts one pool, or one node (a key in nodeKeys).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace == nodeKeys {
		return reconcile.Result{}, c.countNode(ctx, req.Name)
	}
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.metrics.DeleteNodePool(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// Everything read here is only read: the cached objects, not copies.
	ncs := inPool[*karpv1.NodeClaim](c.claims, np.Name)
	nodeList := inPool[*corev1.Node](c.nodes, np.Name)
	nodes := make(map[string]*corev1.Node, len(nodeList))
	for _, n := range nodeList {
		nodes[n.Spec.ProviderID] = n
	}
	count := CountNodeClaims(ncs, nodes)
	c.export(np, count)

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

// countNode exports one node's allocatable and the requests of the pods
// bound to it, or deletes its series when it is gone or in no pool.
func (c *Controller) countNode(ctx context.Context, name string) error {
	var n corev1.Node
	if err := c.kube.Get(ctx, types.NamespacedName{Name: name}, &n, client.UnsafeDisableDeepCopy); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.metrics.Nodes.Delete(name)
		}
		return client.IgnoreNotFound(err)
	}
	l := n.Labels
	series := metrics.NodeLabels{NodePool: l[karpv1.NodePoolLabelKey], CapacityType: l[karpv1.CapacityTypeLabelKey],
		InstanceType: l[corev1.LabelInstanceTypeStable], Zone: l[corev1.LabelTopologyZone]}
	if series.NodePool == "" {
		c.metrics.Nodes.Delete(name)
		return nil
	}
	// A node of a deleted pool has no series, as the pool has none.
	if err := c.kube.Get(ctx, types.NamespacedName{Name: series.NodePool}, &karpv1.NodePool{}, client.UnsafeDisableDeepCopy); err != nil {
		if client.IgnoreNotFound(err) == nil {
			c.metrics.Nodes.Delete(name)
		}
		return client.IgnoreNotFound(err)
	}
	var pods corev1.PodList
	if err := c.kube.List(ctx, &pods, client.MatchingFields{nodeclaimutil.IndexPodNodeName: name}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	c.metrics.Nodes.Set(name, series, nodeValues(n.Status.Allocatable, sortedNames(n.Status.Allocatable)),
		nodeValues(PodRequests(pods.Items), requestNames))
	return nil
}

// inPool returns the objects of kind T in store labelled with the pool:
// the cache's own, read-only.
func inPool[T client.Object](store toolscache.Store, pool string) []T {
	var out []T
	for _, o := range store.List() {
		if t, ok := o.(T); ok && t.GetLabels()[karpv1.NodePoolLabelKey] == pool {
			out = append(out, t)
		}
	}
	return out
}

// CountNodeClaims adds up the launched NodeClaims (those with a
// providerID); nodes maps providerIDs to registered Nodes, whose reported
// capacity replaces the launch estimate.
func CountNodeClaims(ncs []*karpv1.NodeClaim, nodes map[string]*corev1.Node) Count {
	out := Count{Resources: corev1.ResourceList{}, ByType: map[string]map[string]int{}}
	for _, nc := range ncs {
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

// export sets the pool's gauges, dropping series that no longer apply
// (the per-node series are countNode's).
func (c *Controller) export(np *karpv1.NodePool, count Count) {
	m := c.metrics
	match := prometheus.Labels{metrics.LabelNodePool: np.Name}
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.NodePoolUsage, m.NodePoolLimit, m.NodePoolNodes, m.NodePoolCostPerHour, m.NodePoolCost, m.NodePoolInfo} {
		v.DeletePartialMatch(match)
	}
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
	m.NodePoolCost.WithLabelValues(np.Name).Set(count.CostPerHour)
}

// nodeValues are l's values of names (zero when absent), as the per-node
// gauges take them.
func nodeValues(l corev1.ResourceList, names []corev1.ResourceName) []metrics.NodeValue {
	out := make([]metrics.NodeValue, 0, len(names))
	for _, res := range names {
		q := l[res]
		out = append(out, metrics.NodeValue{Resource: string(res), Value: q.AsApproximateFloat64()})
	}
	return out
}

// requestNames are the resources whose pod requests are exported per node.
var requestNames = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

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
