package lifecycle

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Default liveness timeouts (before Options.TimeScale).
const (
	DefaultLaunchTimeout       = 5 * time.Minute
	DefaultRegistrationTimeout = 15 * time.Minute
	// DefaultRegistrationHold is the controller binary's RegistrationHold:
	// far longer than a Node or Pod watch event's usual lag, and far
	// shorter than a real node takes from registering to Ready.
	DefaultRegistrationHold = time.Second
)

// Options tunes the controller.
type Options struct {
	// LaunchTimeout: a NodeClaim not launched this long after creation is
	// deleted. Zero means DefaultLaunchTimeout.
	LaunchTimeout time.Duration
	// RegistrationTimeout: a NodeClaim whose node has not registered this
	// long after launch is deleted. Zero means DefaultRegistrationTimeout.
	RegistrationTimeout time.Duration
	// RegistrationHold is how long a registered node keeps the
	// karpenter.sh/unregistered:NoSchedule taint that replaced its
	// NoExecute one (registration.go says why). Zero lifts it in the first
	// reconcile after the swap; the controller binary uses
	// DefaultRegistrationHold.
	RegistrationHold time.Duration
	// Workers is how many NodeClaims are reconciled at once. Zero means
	// the Workers constant; the controller binary scales it with the
	// container's CPU request (ScaledWorkers).
	Workers int
}

func (o Options) withDefaults() Options {
	if o.LaunchTimeout <= 0 {
		o.LaunchTimeout = DefaultLaunchTimeout
	}
	if o.RegistrationTimeout <= 0 {
		o.RegistrationTimeout = DefaultRegistrationTimeout
	}
	if o.Workers <= 0 {
		o.Workers = Workers
	}
	return o
}

// MaxWorkers bounds ScaledWorkers.
const MaxWorkers = 5000

// ScaledWorkers is Workers scaled with the controller's CPU request in
// millicores, as the peer scales this controller (the peer's CPU_REQUESTS):
// Workers at one core or less, MaxWorkers at 60 cores, linear between in
// whole cores (rounded up).
func ScaledWorkers(cpuMillis int64) int {
	cores := max((cpuMillis+999)/1000, 1)
	w := Workers + int(float64(MaxWorkers-Workers)/59*float64(cores-1))
	return min(w, MaxWorkers)
}

// Controller drives a NodeClaim from creation to Ready: finalizer, launch,
// registration, initialization, and liveness.
type Controller struct {
	kube client.Client
	// live reads the API server directly (the manager's API reader), set
	// by Register; the launch step checks the NodeClaim through it.
	live        client.Reader
	cloud       cloudprovider.CloudProvider
	clock       clock.Clock
	recorder    events.EventRecorder
	metrics     *metrics.Registry
	unavailable *unavailable.Cache
	opts        Options
}

// NewController returns the controller. unavailable receives the offerings
// the cloud refuses for lack of capacity.
func NewController(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, recorder events.EventRecorder,
	m *metrics.Registry, unavailable *unavailable.Cache, opts Options) *Controller {
	return &Controller{kube: kube, cloud: cloud, clock: clk, recorder: recorder, metrics: m, unavailable: unavailable, opts: opts.withDefaults()}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.lifecycle" }

// Workers is how many NodeClaims the controller reconciles at once. A
// reconcile is mostly waiting on the API server and the cloud (a launch,
// a status patch), so in a burst the queue drains at Workers over the
// API server's latency: at 3,000 NodeClaims on a loaded stack, with 10
// workers and about a second a reconcile, NodeClaims waited in the queue
// past their launch timeout before their first launch.
const Workers = 100

// Register adds the controller to the manager. It watches NodeClaims and
// the Nodes that register for them.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	c.live = mgr.GetAPIReader()
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Watches(&corev1.Node{}, nodeclaimutil.MapNodeToNodeClaim(mgr.GetClient())).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.Workers}).
		Complete(c)
}

// errDeleted stops the pipeline: the step deleted the NodeClaim, or found
// it deleted or launched behind the cache's back.
var errDeleted = errors.New("nodeclaim deleted")

// state is one reconcile's working copy of the NodeClaim and the version
// its status patch is computed against. A step that writes the NodeClaim
// itself resets base.
type state struct {
	nc   *karpv1.NodeClaim
	base *karpv1.NodeClaim
	// onCommit runs once the status patch has succeeded: metrics and
	// events of a transition are reported exactly once, by the reconcile
	// whose write won.
	onCommit []func()
}

// Reconcile runs the lifecycle steps in order; each returns when to look
// again. The fence runs first (fence.go: a NodeClaim whose status claims
// another's instance or node is never linked to it). Liveness runs next, so that a NodeClaim whose launch keeps failing
// still times out. Status changes are written once, at the end, under
// optimistic locking (a conflict requeues).
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // termination's job
	}
	if !controllerutil.ContainsFinalizer(nc, karpv1.TerminationFinalizer) {
		if err := c.adopt(ctx, nc); err != nil {
			return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	st := &state{nc: nc, base: nc.DeepCopy()}
	var results []reconcile.Result
	var stepErr error
	for _, step := range []func(context.Context, *state) (reconcile.Result, error){
		c.fence, c.liveness, c.launch, c.register, c.initialize,
	} {
		res, err := step(ctx, st)
		if errors.Is(err, errDeleted) {
			return reconcile.Result{}, nil
		}
		if err != nil {
			stepErr = err
			break
		}
		results = append(results, res)
	}
	if !equality.Semantic.DeepEqual(st.base.Status, st.nc.Status) {
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, st.nc, st.base); err != nil {
			if stepErr == nil {
				return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
			}
			st.onCommit = nil
		}
	}
	for _, f := range st.onCommit {
		f()
	}
	if stepErr != nil {
		return nodeclaimutil.RequeueOnConflict(stepErr)
	}
	return nodeclaimutil.Earliest(results...), nil
}

// adopt adds the termination finalizer (and the pool's hash annotations
// when the creator did not set them) and counts the NodeClaim as created.
func (c *Controller) adopt(ctx context.Context, nc *karpv1.NodeClaim) error {
	base := nc.DeepCopy()
	controllerutil.AddFinalizer(nc, karpv1.TerminationFinalizer)
	if _, ok := nc.Annotations[karpv1.NodePoolHashAnnotationKey]; !ok {
		np := &karpv1.NodePool{}
		if name := nodeclaimutil.NodePool(nc); name != "" {
			if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, np); err == nil {
				if nc.Annotations == nil {
					nc.Annotations = map[string]string{}
				}
				for k, v := range nodepoolhash.Annotations(np) {
					nc.Annotations[k] = v
				}
			}
		}
	}
	if err := nodeclaimutil.Patch(ctx, c.kube, nc, base); err != nil {
		return err
	}
	reason := nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey]
	if reason == "" {
		reason = nodeclaimutil.DefaultCreationReason
	}
	relaxed := nc.Annotations[karpv1.NodeClaimMinValuesRelaxedAnnotationKey]
	if relaxed == "" {
		relaxed = "false"
	}
	c.metrics.NodeClaimsCreated.WithLabelValues(reason, nodeclaimutil.NodePool(nc), relaxed).Inc()
	return nil
}
