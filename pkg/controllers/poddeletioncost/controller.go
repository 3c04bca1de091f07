package poddeletioncost

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

const (
	// CostAnnotation is the ReplicaSet controller's pod deletion cost:
	// on scale-down, pods of lower cost are deleted first.
	CostAnnotation = "controller.kubernetes.io/pod-deletion-cost"
	// ManagedAnnotation marks a pod whose CostAnnotation this controller
	// wrote ("true").
	ManagedAnnotation = karpv1.AnnotationPodDeletionCostManaged
)

// Defaults of Options.
const (
	DefaultInterval         = 30 * time.Second
	DefaultMaxWritesPerPass = 500
)

// Results of karpenter_pod_deletion_cost_pod_annotation_writes_total.
const (
	ResultSuccess = "success"
	ResultFailure = "failure"
)

// Options configure the controller; zero values take the defaults.
type Options struct {
	// Interval between passes.
	Interval time.Duration
	// MaxWritesPerPass bounds the pod patches of one pass; the rest wait
	// for the next (and count as pending).
	MaxWritesPerPass int
}

// Metrics are the peer's pod deletion cost metrics.
type Metrics struct {
	Writes  *prometheus.CounterVec
	Pending *prometheus.GaugeVec
}

// NewMetrics registers the metrics (always, gate on or off, as the peer's
// are).
func NewMetrics(reg *metrics.Registry) (*Metrics, error) {
	m := &Metrics{
		Writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "pod_deletion_cost", Name: "pod_annotation_writes_total",
			Help: "Pod deletion cost annotation writes (PodDeletionCostManagement), by result.",
		}, []string{"result"}),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "pod_deletion_cost", Name: "nodes_with_pending_annotation_writes",
			Help: "Nodes whose pods still need a pod deletion cost write after the last pass, by NodePool.",
		}, []string{metrics.LabelNodePool}),
	}
	if reg != nil {
		if err := reg.Register(m.Writes, m.Pending); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Controller writes pod deletion costs (see the package doc).
type Controller struct {
	kube    client.Client
	clock   clock.Clock
	metrics *Metrics
	opts    Options
}

// New builds the controller.
func New(kube client.Client, clk clock.Clock, m *Metrics, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxWritesPerPass <= 0 {
		opts.MaxWritesPerPass = DefaultMaxWritesPerPass
	}
	return &Controller{kube: kube, clock: clk, metrics: m, opts: opts}
}

// Name names the controller.
func (c *Controller) Name() string { return "pod.deletioncost" }

// Register runs a pass at start and every Interval on the leader.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		WatchesRawSource(singleton.Source(c.Name())).
		Complete(c)
}

// Reconcile runs a pass and asks to run again after Interval.
func (c *Controller) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if _, err := c.Pass(ctx); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// PassResult counts what a pass did.
type PassResult struct {
	Ranked, Written, Failed, Pending int
}

var fast = client.UnsafeDisableDeepCopy

// Pass ranks the nodes and writes the pods' costs that changed.
func (c *Controller) Pass(ctx context.Context) (PassResult, error) {
	var res PassResult
	var pools karpv1.NodePoolList
	if err := c.kube.List(ctx, &pools, fast); err != nil {
		return res, fmt.Errorf("listing NodePools: %w", err)
	}
	var claims karpv1.NodeClaimList
	if err := c.kube.List(ctx, &claims, fast); err != nil {
		return res, fmt.Errorf("listing NodeClaims: %w", err)
	}
	var nodes corev1.NodeList
	if err := c.kube.List(ctx, &nodes, fast); err != nil {
		return res, fmt.Errorf("listing Nodes: %w", err)
	}
	var pods corev1.PodList
	if err := c.kube.List(ctx, &pods, fast); err != nil {
		return res, fmt.Errorf("listing Pods: %w", err)
	}
	var pdbs policyv1.PodDisruptionBudgetList
	if err := c.kube.List(ctx, &pdbs, fast); err != nil {
		return res, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	in, podByRef := input(c.clock.Now(), pools.Items, claims.Items, nodes.Items, pods.Items, pdbs.Items)
	order, err := planner.DrainOrder(in)
	if err != nil {
		return res, err
	}
	res.Ranked = len(order)
	pending := map[string]int{}
	for i, r := range order {
		want := strconv.Itoa(i - len(order))
		nodePending := false
		for _, ref := range r.Pods {
			pod := podByRef[ref]
			if pod == nil || !managed(pod) || pod.Annotations[CostAnnotation] == want {
				continue
			}
			if res.Written+res.Failed >= c.opts.MaxWritesPerPass {
				nodePending = true
				continue
			}
			if err := c.write(ctx, pod, want); err != nil {
				res.Failed++
				nodePending = true
				c.metrics.Writes.WithLabelValues(ResultFailure).Inc()
				log.FromContext(ctx).V(1).Info("pod deletion cost not written", "pod", ref.String(), "error", err.Error())
				continue
			}
			res.Written++
			c.metrics.Writes.WithLabelValues(ResultSuccess).Inc()
		}
		if nodePending {
			pending[r.NodePool]++
			res.Pending++
		}
	}
	c.metrics.Pending.Reset()
	for i := range pools.Items {
		c.metrics.Pending.WithLabelValues(pools.Items[i].Name).Set(float64(pending[pools.Items[i].Name]))
	}
	return res, nil
}

// managed reports whether the controller may write the pod's cost: owned
// by a ReplicaSet, not being deleted, and its cost absent or its own.
func managed(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	owned := false
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "ReplicaSet" && o.APIVersion == "apps/v1" {
			owned = true
		}
	}
	if !owned {
		return false
	}
	_, has := p.Annotations[CostAnnotation]
	return !has || p.Annotations[ManagedAnnotation] == "true"
}

// write patches the pod's cost and marker, on condition that the pod is
// still the version read (so a cost set meanwhile by someone else is not
// overwritten).
func (c *Controller) write(ctx context.Context, p *corev1.Pod, cost string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": p.ResourceVersion,
		"annotations":     map[string]string{CostAnnotation: cost, ManagedAnnotation: "true"},
	}})
	if err != nil {
		return err
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	if err := c.kube.Patch(ctx, target, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("patching pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// input builds the planner's input for the ranking: the pools' policies,
// the nodes with their pods, the NodeClaims' facts and the PDBs. No
// instance types: prices come from the NodeClaims' price annotations.
func input(now time.Time, pools []karpv1.NodePool, claims []karpv1.NodeClaim, nodes []corev1.Node, pods []corev1.Pod,
	pdbs []policyv1.PodDisruptionBudget) (*planner.Input, map[engine.PodRef]*corev1.Pod) {
	in := &planner.Input{Now: now, Cluster: &engine.Input{}, Pools: map[string]planner.PoolPolicy{}, Nodes: map[string]planner.NodeState{}}
	for i := range pools {
		np := &pools[i]
		if np.DeletionTimestamp != nil {
			continue
		}
		in.Cluster.NodePools = append(in.Cluster.NodePools, engine.NodePool{Name: np.Name})
		in.Pools[np.Name] = snapshot.DisruptionPolicy(np)
	}
	podByRef := map[engine.PodRef]*corev1.Pod{}
	podsOn := map[string][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.Spec.NodeName == "" {
			continue
		}
		podByRef[engine.PodRef{Namespace: p.Namespace, Name: p.Name}] = p
		podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
	}
	claimByProviderID := map[string]*karpv1.NodeClaim{}
	for i := range claims {
		if id := claims[i].Status.ProviderID; id != "" {
			claimByProviderID[id] = &claims[i]
		}
	}
	for i := range nodes {
		n := &nodes[i]
		nc := claimByProviderID[n.Spec.ProviderID]
		pool := n.Labels[karpv1.NodePoolLabelKey]
		if nc != nil && n.Spec.ProviderID != "" {
			pool = nodeclaimutil.NodePool(nc)
			in.Nodes[n.Name] = nodeclaimutil.PlannerState(n, nc)
		}
		in.Cluster.Nodes = append(in.Cluster.Nodes, engine.ExistingNode{Node: n, NodePool: pool, Pods: podsOn[n.Name]})
	}
	for i := range pdbs {
		pdb := &pdbs[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || pdb.Spec.Selector == nil {
			sel = nil
		}
		in.PDBs = append(in.PDBs, planner.PDB{Namespace: pdb.Namespace, Name: pdb.Name, Selector: sel, DisruptionsAllowed: pdb.Status.DisruptionsAllowed})
	}
	return in, podByRef
}
