package termination

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// Defaults.
const (
	// DefaultVolumeDetachTimeout bounds the wait for VolumeAttachments when
	// the NodeClaim sets no terminationGracePeriod.
	DefaultVolumeDetachTimeout = 5 * time.Minute
	// InstancePollInterval is how often a terminating instance is checked.
	InstancePollInterval = 5 * time.Second
)

// Options tunes the controller.
type Options struct {
	// VolumeDetachTimeout; zero means DefaultVolumeDetachTimeout.
	VolumeDetachTimeout time.Duration
}

// Controller terminates Nodes that are being deleted: taint, drain,
// wait for volumes, terminate the instance, release the finalizer.
type Controller struct {
	kube     client.Client
	cloud    cloudprovider.CloudProvider
	clock    clock.Clock
	recorder events.EventRecorder
	metrics  *metrics.Registry
	backoff  *evictionBackoff
	opts     Options
}

// NewController returns the controller.
func NewController(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder, m *metrics.Registry, opts Options) *Controller {
	if opts.VolumeDetachTimeout <= 0 {
		opts.VolumeDetachTimeout = DefaultVolumeDetachTimeout
	}
	return &Controller{kube: kube, cloud: cloud, clock: clk, recorder: recorder, metrics: m, backoff: newEvictionBackoff(clk), opts: opts}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "node.termination" }

// Register adds the controller to the manager. Besides Nodes it watches
// what a drain waits for, mapped to the node only while that node is
// being deleted: its pods, its NodeClaim and its VolumeAttachments.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	r := mgr.GetClient()
	toDeletingNode := func(name string) []reconcile.Request {
		node := &corev1.Node{}
		if name == "" || r.Get(context.Background(), client.ObjectKey{Name: name}, node) != nil || node.DeletionTimestamp.IsZero() {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
	}
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&corev1.Node{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return toDeletingNode(o.(*corev1.Pod).Spec.NodeName)
		})).
		Watches(&storagev1.VolumeAttachment{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return toDeletingNode(o.(*storagev1.VolumeAttachment).Spec.NodeName)
		})).
		Watches(&karpv1.NodeClaim{}, nodeclaimutil.MapNodeClaimToNodes(r)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 10}).
		Complete(c)
}

// Reconcile advances the termination of one node by as much as it can,
// then asks to be called again when something it waits for can change.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := c.kube.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if node.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(node, karpv1.TerminationFinalizer) {
		return reconcile.Result{}, nil
	}
	nc, err := nodeclaimutil.NodeClaimForProviderID(ctx, c.kube, node.Spec.ProviderID)
	if err != nil {
		return reconcile.Result{}, err
	}
	// Deleting the node deletes its NodeClaim too, so that both paths
	// (kubectl delete node, kubectl delete nodeclaim) end the same way.
	if nc != nil && nc.DeletionTimestamp.IsZero() {
		if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting nodeclaim %s of node %s: %w", nc.Name, node.Name, err)
		}
		return reconcile.Result{}, nil // the NodeClaim's update brings us back
	}
	if err := c.taint(ctx, node); err != nil {
		return nodeclaimutil.RequeueOnConflict(err)
	}
	now := c.clock.Now()
	deadline := Deadline(nc)
	expired := deadline != nil && !now.Before(*deadline)

	status := &conditionWriter{nc: nc, now: now}
	drained, requeue, err := c.drain(ctx, node, status, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !drained && !expired {
		if err := status.write(ctx, c.kube); err != nil {
			return nodeclaimutil.RequeueOnConflict(err)
		}
		return requeue, nil
	}
	status.set(karpv1.ConditionTypeDrained, metav1.ConditionTrue, "Drained", "")

	detached, requeue, err := c.volumesDetached(ctx, node, nc, status, deadline)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !detached {
		if err := status.write(ctx, c.kube); err != nil {
			return nodeclaimutil.RequeueOnConflict(err)
		}
		return requeue, nil
	}

	gone, err := c.terminateInstance(ctx, node, nc, status)
	if werr := status.write(ctx, c.kube); werr != nil && err == nil {
		return nodeclaimutil.RequeueOnConflict(werr)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	if !gone {
		return reconcile.Result{RequeueAfter: InstancePollInterval}, nil
	}
	return reconcile.Result{}, c.release(ctx, node)
}

// taint puts karpenter.sh/disrupted:NoSchedule on the node. On a node
// with taints the patch is a JSON patch appending the one taint, without
// a resource version: it keeps whatever other taints the node has on the
// server, and a node whose status the kubelet (or kwok) keeps updating
// does not refuse it as stale. (Under optimistic locking a fleet's nodes
// terminating at once on a loaded API server, the cache seconds behind,
// conflicted again and again: 11,000 refused patches in 2.5 minutes for
// 115 nodes.) A node without taints gets them under optimistic locking:
// there is no list to append to, and setting one must not overwrite
// taints written meanwhile.
func (c *Controller) taint(ctx context.Context, node *corev1.Node) error {
	for _, t := range node.Spec.Taints {
		if t.Key == karpv1.DisruptedTaintKey && t.Effect == corev1.TaintEffectNoSchedule {
			return nil
		}
	}
	base := node.DeepCopy()
	node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
	if len(base.Spec.Taints) == 0 {
		return nodeclaimutil.Patch(ctx, c.kube, node, base)
	}
	op, err := json.Marshal([]map[string]any{{"op": "add", "path": "/spec/taints/-", "value": karpv1.DisruptedNoScheduleTaint}})
	if err != nil {
		return err
	}
	return c.kube.Patch(ctx, node, client.RawPatch(types.JSONPatchType, op))
}

// terminateInstance asks the cloud to delete the instance and reports
// whether it is gone.
func (c *Controller) terminateInstance(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim, status *conditionWriter) (bool, error) {
	target := nc
	if target == nil {
		// No NodeClaim: the instance by its providerID alone. A name
		// would be taken for the claim the instance must be tagged for
		// (the AWS provider refuses to terminate another claim's).
		target = &karpv1.NodeClaim{}
		target.Status.ProviderID = node.Spec.ProviderID
	}
	if target.Status.ProviderID == "" {
		return true, nil
	}
	err := c.cloud.Delete(ctx, target)
	if cloudprovider.IsNodeClaimNotFound(err) {
		status.set(karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, "InstanceTerminated", "")
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("terminating instance %s of node %s: %w", target.Status.ProviderID, node.Name, err)
	}
	status.set(karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, "InstanceTerminating", "")
	if _, err := c.cloud.Get(ctx, target.Status.ProviderID); cloudprovider.IsNodeClaimNotFound(err) {
		return true, nil
	}
	return false, nil
}

// release drops the node's finalizer and records the termination. The
// patch is a JSON patch that tests the finalizer is where the cache saw it
// and removes it there, without a resource version, for the reason
// taint's has none; if the list moved meanwhile the test fails and the
// next reconcile tries again.
func (c *Controller) release(ctx context.Context, node *corev1.Node) error {
	i := slices.Index(node.Finalizers, karpv1.TerminationFinalizer)
	if i < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	op, err := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": karpv1.TerminationFinalizer}, {"op": "remove", "path": path}})
	if err != nil {
		return err
	}
	if err := c.kube.Patch(ctx, node, client.RawPatch(types.JSONPatchType, op)); err != nil {
		return client.IgnoreNotFound(err)
	}
	pool := nodeclaimutil.NodePool(node)
	c.metrics.NodesTerminated.WithLabelValues(pool, node.Labels[corev1.LabelTopologyZone]).Inc()
	c.metrics.NodesTerminationDuration.WithLabelValues(pool).Observe(c.clock.Since(node.DeletionTimestamp.Time).Seconds())
	return nil
}

// Deadline is when the NodeClaim's node must be gone: the
// karpenter.sh/nodeclaim-termination-timestamp annotation, else its
// deletion time plus spec.terminationGracePeriod; nil when unbounded.
func Deadline(nc *karpv1.NodeClaim) *time.Time {
	if nc == nil {
		return nil
	}
	if s, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]; ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return &t
		}
	}
	if nc.Spec.TerminationGracePeriod == nil || nc.DeletionTimestamp.IsZero() {
		return nil
	}
	t := nc.DeletionTimestamp.Add(nc.Spec.TerminationGracePeriod.Duration)
	return &t
}

// conditionWriter collects condition changes for the NodeClaim and writes
// them in one status patch.
type conditionWriter struct {
	nc      *karpv1.NodeClaim
	base    *karpv1.NodeClaim
	now     time.Time
	changed bool
}

func (w *conditionWriter) set(t string, status metav1.ConditionStatus, reason, msg string) {
	if w.nc == nil {
		return
	}
	if w.base == nil {
		w.base = w.nc.DeepCopy()
	}
	if w.nc.SetCondition(t, status, reason, msg, w.now) {
		w.changed = true
	}
}

func (w *conditionWriter) write(ctx context.Context, kube client.Client) error {
	if w.nc == nil || !w.changed {
		return nil
	}
	err := nodeclaimutil.PatchStatus(ctx, kube, w.nc, w.base)
	if err == nil {
		w.base, w.changed = nil, false
	}
	return client.IgnoreNotFound(err)
}
