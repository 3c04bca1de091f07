package static

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// CreationReason is the dovetail.sh/creation-reason of the NodeClaims this
// controller creates.
const CreationReason = "static"

// Event reasons, on the NodePool.
const (
	ReasonScaleUp      = "StaticScaleUp"
	ReasonScaleDown    = "StaticScaleDown"
	ReasonLimitReached = "StaticNodeLimitReached"
	ReasonCannotLaunch = "StaticCannotLaunch"
)

// NewNodeClaimFunc builds the NodeClaim for a planned node of np (the
// provisioner's shape); types are the pool's instance types.
type NewNodeClaimFunc func(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string) *karpv1.NodeClaim

// Options configure the controller.
type Options struct {
	// Interval is how often a static pool is checked besides on events
	// (default 1 minute).
	Interval time.Duration
	// LimitRetry is how soon a pool at limits.nodes or unable to launch is
	// checked again (default 30 seconds).
	LimitRetry time.Duration
	// Snapshot are the settings the node is planned with (region, engine
	// options), the provisioner's.
	Snapshot snapshot.Options
	// NodeOverlays (feature gate NodeOverlay): the pool's instance types
	// are adjusted by the NodeOverlays before the node is planned, as
	// provisioning does, so its offering and the NodeClaim's option order
	// follow the overlaid prices and capacity; off, they are not read.
	NodeOverlays bool
}

// Controller keeps static NodePools at spec.replicas.
type Controller struct {
	kube         client.Client
	live         client.Reader
	cloud        cloudprovider.CloudProvider
	clock        clock.Clock
	recorder     events.EventRecorder
	unavailable  *unavailable.Cache
	newNodeClaim NewNodeClaimFunc
	opts         Options
}

// New returns the controller. live reads without the cache (the manager's
// API reader): the NodeClaims a pass counts are always the cluster's.
func New(kube client.Client, live client.Reader, cloud cloudprovider.CloudProvider, clk clock.Clock, rec events.EventRecorder,
	unavail *unavailable.Cache, newNodeClaim NewNodeClaimFunc, opts Options) *Controller {
	if opts.Interval <= 0 {
		opts.Interval = time.Minute
	}
	if opts.LimitRetry <= 0 {
		opts.LimitRetry = 30 * time.Second
	}
	return &Controller{kube: kube, live: live, cloud: cloud, clock: clk, recorder: rec, unavailable: unavail, newNodeClaim: newNodeClaim, opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodepool.static" }

// Register watches static NodePools and their NodeClaims' creations and
// deletions.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	static := predicate.NewPredicateFuncs(func(o client.Object) bool {
		np, ok := o.(*karpv1.NodePool)
		return ok && np.Spec.Replicas != nil
	})
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodePool{}, builder.WithPredicates(static)).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			pool := o.GetLabels()[karpv1.NodePoolLabelKey]
			if pool == "" {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
		}), builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return true },
			DeleteFunc: func(event.DeleteEvent) bool { return true },
			UpdateFunc: func(e event.UpdateEvent) bool {
				// Deletion starting, or the instance or node appearing.
				o, n := e.ObjectOld.(*karpv1.NodeClaim), e.ObjectNew.(*karpv1.NodeClaim)
				return o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
					o.Status.ProviderID != n.Status.ProviderID || o.Status.NodeName != n.Status.NodeName
			},
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Complete(c)
}

// Reconcile brings one static pool to its replica count.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &karpv1.NodePool{}
	if err := c.kube.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if np.Spec.Replicas == nil || !np.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	var list karpv1.NodeClaimList
	if err := c.live.List(ctx, &list, client.MatchingLabels{karpv1.NodePoolLabelKey: np.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the NodeClaims of NodePool %s: %w", np.Name, err)
	}
	var active []*karpv1.NodeClaim
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			active = append(active, &list.Items[i])
		}
	}
	want := *np.Spec.Replicas
	switch have := int64(len(active)); {
	case have < want:
		return c.scaleUp(ctx, np, want-have, int64(len(list.Items)))
	case have > want:
		return c.scaleDown(ctx, np, active, int(have-want))
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// Room is how many NodeClaims a static pool may create now: the missing
// replicas, cut to what limits.nodes leaves when every NodeClaim of the
// pool (deleting ones included) is counted.
func Room(np *karpv1.NodePool, missing, all int64) int64 {
	if q, ok := np.Spec.Limits[corev1.ResourceName("nodes")]; ok {
		missing = min(missing, q.Value()-all)
	}
	return max(missing, 0)
}

func (c *Controller) scaleUp(ctx context.Context, np *karpv1.NodePool, missing, all int64) (reconcile.Result, error) {
	if !np.IsTrue(karpv1.ConditionTypeReady) {
		// The readiness controller's status change brings the pool back.
		return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
	}
	n := Room(np, missing, all)
	if n == 0 {
		c.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonLimitReached, "Provision",
			"NodePool %s has %d NodeClaims, limits.nodes allows no more; %d replicas missing", np.Name, all, missing)
		return reconcile.Result{RequeueAfter: c.opts.LimitRetry}, nil
	}
	planned, types, err := c.plan(ctx, np)
	if err != nil {
		c.recorder.Eventf(np, nil, corev1.EventTypeWarning, ReasonCannotLaunch, "Provision", "NodePool %s: %v", np.Name, err)
		log.FromContext(ctx).Info("static pool cannot plan a node", "nodepool", np.Name, "error", err.Error())
		return reconcile.Result{RequeueAfter: c.opts.LimitRetry}, nil
	}
	created := int64(0)
	for range n {
		nc := c.newNodeClaim(np, planned, types, CreationReason)
		nc.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: karpv1.GroupVersion.String(), Kind: "NodePool", Name: np.Name, UID: np.UID,
		}}
		if err := c.kube.Create(ctx, nc); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating a NodeClaim of static NodePool %s (%d of %d created): %w", np.Name, created, n, err)
		}
		created++
	}
	log.FromContext(ctx).Info("static pool scaled up", "nodepool", np.Name, "created", created, "missing", missing)
	c.recorder.Eventf(np, nil, corev1.EventTypeNormal, ReasonScaleUp, "Provision",
		"created %d NodeClaims to keep %d replicas (%s first)", created, *np.Spec.Replicas, planned.Offering.InstanceType)
	if created < missing {
		return reconcile.Result{RequeueAfter: c.opts.LimitRetry}, nil
	}
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}

// plan reads what the pool's node is planned from and plans it.
func (c *Controller) plan(ctx context.Context, np *karpv1.NodePool) (*engine.NewNodeClaim, []*cloudprovider.InstanceType, error) {
	ref := np.Spec.Template.Spec.NodeClassRef
	if ref == nil {
		return nil, nil, fmt.Errorf("spec.template.spec.nodeClassRef is not set")
	}
	class := &awsv1.EC2NodeClass{}
	if err := c.kube.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		return nil, nil, fmt.Errorf("reading EC2NodeClass %s: %w", ref.Name, err)
	}
	its, err := c.cloud.GetInstanceTypes(ctx, np)
	if err != nil {
		return nil, nil, fmt.Errorf("instance types: %w", err)
	}
	if c.opts.NodeOverlays {
		overlays, err := nodeclaimutil.ListNodeOverlays(ctx, c.kube)
		if err != nil {
			return nil, nil, err
		}
		adjusted, _ := snapshot.ApplyOverlays(overlays, []*karpv1.NodePool{np}, map[string][]*cloudprovider.InstanceType{np.Name: its})
		its = adjusted[np.Name]
	}
	var dss appsv1.DaemonSetList
	if err := c.kube.List(ctx, &dss); err != nil {
		return nil, nil, fmt.Errorf("listing DaemonSets: %w", err)
	}
	cl := &snapshot.Cluster{NodePools: []*karpv1.NodePool{np}, NodeClasses: []*awsv1.EC2NodeClass{class}}
	for i := range dss.Items {
		cl.DaemonSets = append(cl.DaemonSets, &dss.Items[i])
	}
	if c.unavailable != nil {
		for _, e := range c.unavailable.List() {
			cl.Unavailable = append(cl.Unavailable, engine.OfferingKey(e.Offering))
		}
	}
	in, err := snapshot.Build(cl, snapshot.StaticSource(its), c.opts.Snapshot)
	if err != nil {
		return nil, nil, err
	}
	planned, err := engine.StaticNodeClaim(in, np.Name)
	if err != nil {
		return nil, nil, err
	}
	return planned, its, nil
}

func (c *Controller) scaleDown(ctx context.Context, np *karpv1.NodePool, active []*karpv1.NodeClaim, count int) (reconcile.Result, error) {
	in := disruption.ScaleDownInput{Count: count, Now: c.clock.Now(), ExpireAfter: snapshot.DisruptionPolicy(np).ExpireAfter}
	byName := make(map[string]*karpv1.NodeClaim, len(active))
	for _, nc := range active {
		byName[nc.Name] = nc
		sn := disruption.StaticNode{NodeClaim: nc.Name, Launched: nc.Status.ProviderID != "", Created: nc.CreationTimestamp.Time}
		if nc.Status.NodeName != "" {
			var pods corev1.PodList
			if err := c.kube.List(ctx, &pods, client.MatchingFields{nodeclaimutil.IndexPodNodeName: nc.Status.NodeName}); err != nil {
				return reconcile.Result{}, fmt.Errorf("listing the pods of node %s: %w", nc.Status.NodeName, err)
			}
			for i := range pods.Items {
				sn.Pods = append(sn.Pods, &pods.Items[i])
			}
		}
		in.Nodes = append(in.Nodes, sn)
	}
	picks := disruption.ScaleDown(in)
	for _, p := range picks {
		nc := byName[p.NodeClaim]
		if err := c.kube.Delete(ctx, nc, client.Preconditions{UID: &nc.UID}); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting NodeClaim %s of static NodePool %s: %w", nc.Name, np.Name, err)
		}
		c.recorder.Eventf(nc, np, corev1.EventTypeNormal, ReasonScaleDown, "Delete",
			"NodePool %s scaled to %d replicas: removing this NodeClaim (%s)", np.Name, *np.Spec.Replicas, p.Rank)
	}
	log.FromContext(ctx).Info("static pool scaled down", "nodepool", np.Name, "deleted", len(picks))
	return reconcile.Result{RequeueAfter: c.opts.Interval}, nil
}
