package interruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// RebalanceAnnotationKey on a NodePool opts its nodes into proactive
// replacement on a rebalance recommendation (value RebalanceReplace).
// Without it a recommendation is only recorded as an event, as the peer
// does.
const (
	RebalanceAnnotationKey = "dovetail.sh/rebalance-recommendation"
	RebalanceReplace       = "Replace"
)

// Event reasons (on the NodeClaim and its Node).
const (
	ReasonSpotInterrupted         = "SpotInterrupted"
	ReasonRebalanceRecommendation = "RebalanceRecommendation"
	ReasonScheduledChange         = "ScheduledChange"
	ReasonInstanceStopping        = "InstanceStopping"
	ReasonInstanceTerminating     = "InstanceTerminating"
	// ReasonReplacing: replacement capacity was planned for the node's pods.
	ReasonReplacing = "Replacing"
	// ReasonRebalanced: the replacements are initialized; the node is
	// cordoned and drained.
	ReasonRebalanced = "Rebalanced"
)

// Queue is the cloud's interruption queue, provider-neutral (the AWS
// provider's SQS queue in production, through its Events adapter).
type Queue = cloudprovider.InterruptionQueue

// Replacer plans and creates replacement capacity for the pods of nodes
// about to go and returns the new NodeClaims' names (the provisioning
// controller's Provisioner in production; the controllers package wires
// it, so this package does not import another controller).
type Replacer interface {
	ReplacementsFor(ctx context.Context, nodes ...string) ([]string, error)
}

// Controller handles the interruption queue (see the package doc).
type Controller struct {
	kube        client.Client
	queue       Queue
	replacer    Replacer
	clock       clock.Clock
	recorder    events.EventRecorder
	metrics     *Metrics
	unavailable *unavailable.Cache
	scheduled   ScheduledEventsOptions
	log         logr.Logger
}

var _ manager.LeaderElectionRunnable = (*Controller)(nil)

// New returns the controller. q nil disables queue polling (no
// INTERRUPTION_QUEUE); the rebalance reconciler still runs so replacements
// started before a restart finish. m may be nil.
func New(kube client.Client, q Queue, r Replacer, clk clock.Clock, recorder events.EventRecorder, m *Metrics, unavailable *unavailable.Cache) *Controller {
	if m == nil {
		m, _ = NewMetrics(nil)
	}
	return &Controller{kube: kube, queue: q, replacer: r, clock: clk, recorder: recorder, metrics: m, unavailable: unavailable, log: logr.Discard()}
}

// Name is the controller's name in logs.
func (c *Controller) Name() string { return "interruption" }

// NeedLeaderElection: only the leader polls the queue.
func (c *Controller) NeedLeaderElection() bool { return true }

// Register adds the queue poller (when there is a queue), the scheduled
// events poller (when there is a source) and the rebalance reconciler to
// the manager.
func (c *Controller) Register(ctx context.Context, mgr manager.Manager) error {
	c.log = mgr.GetLogger().WithName(c.Name())
	if err := (&rebalancer{c: c}).register(ctx, mgr); err != nil {
		return err
	}
	if c.scheduled.Source != nil {
		if err := mgr.Add(&scheduledPoller{c: c, seen: map[string]bool{}}); err != nil {
			return err
		}
	}
	if c.queue == nil {
		return nil
	}
	return mgr.Add(c)
}

// Start polls the queue until ctx ends. Receive errors back off 1 s
// doubling to 30 s (on the clock).
func (c *Controller) Start(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		msgs, err := c.queue.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			failures++
			delay := min(time.Duration(1<<min(failures-1, 5))*time.Second, 30*time.Second)
			c.log.Error(err, "receiving interruption messages", "retryIn", delay)
			t := c.clock.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C():
			}
			continue
		}
		failures = 0
		workqueue.ParallelizeUntil(ctx, 10, len(msgs), func(i int) {
			if err := c.Handle(ctx, msgs[i]); err != nil {
				c.log.Error(err, "handling interruption message; it will be received again", "id", msgs[i].ID)
			}
		})
	}
	return nil
}

// MessageType is the message_type label of a message.
func MessageType(m *cloudprovider.InterruptionEvent) string {
	if m.Malformed != nil {
		return TypeMalformed
	}
	switch m.Kind {
	case cloudprovider.InterruptionSpot:
		return TypeSpotInterrupted
	case cloudprovider.InterruptionRebalance:
		return TypeRebalanceRecommendation
	case cloudprovider.InterruptionScheduledChange:
		return TypeScheduledChange
	case cloudprovider.InterruptionStopping:
		return TypeInstanceStopped
	case cloudprovider.InterruptionTerminating:
		return TypeInstanceTerminated
	}
	return TypeUnknown
}

// Handle acts on one message and deletes it from the queue. An error
// leaves the message on the queue, to be received again. Malformed and
// unknown messages, and messages about instances no NodeClaim owns, are
// deleted without action.
func (c *Controller) Handle(ctx context.Context, m cloudprovider.InterruptionEvent) error {
	typ := MessageType(&m)
	c.metrics.Received.WithLabelValues(typ).Inc()
	if m.Malformed == nil {
		var errs []error
		for _, id := range m.InstanceIDs {
			errs = append(errs, c.handleInstance(ctx, &m, typ, id))
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
	} else {
		c.log.Info("deleting a malformed interruption message", "id", m.ID, "error", m.Malformed)
	}
	if err := c.queue.Delete(ctx, m); err != nil {
		return err
	}
	c.metrics.Deleted.Inc()
	if m.Malformed == nil && !m.Time.IsZero() {
		c.metrics.QueueDuration.Observe(max(c.clock.Since(m.Time), 0).Seconds())
	}
	return nil
}

// nodeClaimFor finds the live NodeClaim of an instance id (its providerID
// ends in /<id>).
func (c *Controller) nodeClaimFor(ctx context.Context, instanceID string) (*karpv1.NodeClaim, error) {
	// The cache's objects, uncopied (a copied list per message is some
	// 12 MB at 3,000 NodeClaims); the one found is copied.
	var list karpv1.NodeClaimList
	if err := c.kube.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing NodeClaims: %w", err)
	}
	for i := range list.Items {
		pid := list.Items[i].Status.ProviderID
		if pid != "" && strings.HasSuffix(pid, "/"+instanceID) {
			return list.Items[i].DeepCopy(), nil
		}
	}
	return nil, nil
}

func (c *Controller) handleInstance(ctx context.Context, msg *cloudprovider.InterruptionEvent, typ, id string) error {
	nc, err := c.nodeClaimFor(ctx, id)
	if err != nil {
		return err
	}
	if nc == nil {
		c.log.V(1).Info("no NodeClaim for the instance", "instance", id, "type", typ)
		return nil
	}
	if msg.Kind == cloudprovider.InterruptionSpot && nc.Labels[karpv1.CapacityTypeLabelKey] == karpv1.CapacityTypeSpot && c.unavailable != nil {
		c.unavailable.MarkUnavailable(cloudprovider.OfferingKey{
			InstanceType: nc.Labels[corev1.LabelInstanceTypeStable],
			Zone:         nc.Labels[corev1.LabelTopologyZone],
			CapacityType: karpv1.CapacityTypeSpot,
		})
	}
	if !nc.DeletionTimestamp.IsZero() {
		return nil // already going
	}
	switch {
	case msg.Disruptive():
		reason, note := disruptiveEvent(msg, id)
		c.event(ctx, nc, corev1.EventTypeWarning, reason, note)
		return c.disrupt(ctx, nc)
	case msg.Kind == cloudprovider.InterruptionRebalance:
		return c.rebalance(ctx, nc, id)
	default:
		return nil
	}
}

func disruptiveEvent(msg *cloudprovider.InterruptionEvent, id string) (reason, note string) {
	switch msg.Kind {
	case cloudprovider.InterruptionSpot:
		return ReasonSpotInterrupted, fmt.Sprintf("Spot interruption warning for %s: replacing the node, then draining it", id)
	case cloudprovider.InterruptionScheduledChange:
		if msg.State != "" && !msg.NotBefore.IsZero() {
			return ReasonScheduledChange, fmt.Sprintf("Scheduled %s of %s from %s: replacing the node, then draining it", msg.State, id, msg.NotBefore.UTC().Format(time.RFC3339))
		}
		return ReasonScheduledChange, fmt.Sprintf("Scheduled maintenance of %s: replacing the node, then draining it", id)
	}
	if msg.Kind == cloudprovider.InterruptionStopping {
		return ReasonInstanceStopping, fmt.Sprintf("Instance %s is %s: replacing the node, then draining it", id, msg.State)
	}
	return ReasonInstanceTerminating, fmt.Sprintf("Instance %s is %s: replacing the node, then draining it", id, msg.State)
}

// disrupt replaces a node that is going away: replacement capacity is
// planned and created first (so it boots while the old node drains), then
// the node is cordoned and tainted and its NodeClaim deleted; termination
// evicts the pods, honouring PodDisruptionBudgets.
func (c *Controller) disrupt(ctx context.Context, nc *karpv1.NodeClaim) error {
	if node := nc.Status.NodeName; node != "" && c.replacer != nil {
		replacements, err := c.replacer.ReplacementsFor(ctx, node)
		if err != nil {
			return fmt.Errorf("planning replacements for node %s: %w", node, err)
		}
		c.metrics.Actions.WithLabelValues("replace").Inc()
		if len(replacements) > 0 {
			c.event(ctx, nc, corev1.EventTypeNormal, ReasonReplacing, "Replacement capacity: NodeClaim "+strings.Join(replacements, ", "))
		}
		if err := c.cordon(ctx, node); err != nil {
			return err
		}
	}
	if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting NodeClaim %s: %w", nc.Name, err)
	}
	c.metrics.Actions.WithLabelValues("delete").Inc()
	return nil
}

// rebalance starts a proactive replacement for an opted-in NodePool, or
// records the recommendation.
func (c *Controller) rebalance(ctx context.Context, nc *karpv1.NodeClaim, id string) error {
	np := &karpv1.NodePool{}
	optedIn := false
	if name := nc.Labels[karpv1.NodePoolLabelKey]; name != "" {
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, np); err == nil {
			optedIn = np.Annotations[RebalanceAnnotationKey] == RebalanceReplace
		} else if !apierrors.IsNotFound(err) {
			return err
		}
	}
	if !optedIn || nc.Status.NodeName == "" || c.replacer == nil {
		c.event(ctx, nc, corev1.EventTypeNormal, ReasonRebalanceRecommendation,
			fmt.Sprintf("Rebalance recommendation for %s: the instance is at elevated risk of interruption (annotate its NodePool %s=%s to replace it proactively)", id, RebalanceAnnotationKey, RebalanceReplace))
		c.metrics.Actions.WithLabelValues("record").Inc()
		return nil
	}
	if nc.Annotations[snapshot.ReplacedByAnnotationKey] != "" {
		return nil // already being replaced
	}
	c.event(ctx, nc, corev1.EventTypeNormal, ReasonRebalanceRecommendation,
		fmt.Sprintf("Rebalance recommendation for %s: launching a replacement before draining the node", id))
	return c.startReplacement(ctx, nc)
}

// startReplacement plans the node's replacement and records it on the
// NodeClaim; the rebalancer drains the node once the replacements are
// initialized.
func (c *Controller) startReplacement(ctx context.Context, nc *karpv1.NodeClaim) error {
	replacements, err := c.replacer.ReplacementsFor(ctx, nc.Status.NodeName)
	if err != nil {
		return fmt.Errorf("planning replacements for node %s: %w", nc.Status.NodeName, err)
	}
	c.metrics.Actions.WithLabelValues("rebalance").Inc()
	value := noReplacement
	if len(replacements) > 0 {
		value = strings.Join(replacements, ",")
		c.event(ctx, nc, corev1.EventTypeNormal, ReasonReplacing, "Replacement capacity: NodeClaim "+strings.Join(replacements, ", ")+"; the node is drained once it is initialized")
	}
	patch := client.MergeFrom(nc.DeepCopy())
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[snapshot.ReplacedByAnnotationKey] = value
	if err := c.kube.Patch(ctx, nc, patch); err != nil {
		return fmt.Errorf("recording the replacement of NodeClaim %s: %w", nc.Name, err)
	}
	return nil
}

// noReplacement is the replaced-by value when the pods fit on existing
// capacity.
const noReplacement = "-"

// cordon marks the node unschedulable and taints it
// karpenter.sh/disrupted:NoSchedule.
func (c *Controller) cordon(ctx context.Context, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return client.IgnoreNotFound(err)
		}
		hasTaint := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.MatchTaint(&karpv1.DisruptedNoScheduleTaint) })
		if node.Spec.Unschedulable && hasTaint {
			return nil
		}
		patch := client.MergeFromWithOptions(node.DeepCopy(), client.MergeFromWithOptimisticLock{})
		node.Spec.Unschedulable = true
		if !hasTaint {
			node.Spec.Taints = append(node.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
		}
		return c.kube.Patch(ctx, node, patch)
	})
}

// event records an event on the NodeClaim and, when it has one, its Node.
func (c *Controller) event(ctx context.Context, nc *karpv1.NodeClaim, typ, reason, note string) {
	if c.recorder == nil {
		return
	}
	c.recorder.Eventf(nc, nil, typ, reason, "Interruption", "%s", note)
	if nc.Status.NodeName != "" {
		node := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKey{Name: nc.Status.NodeName}, node); err == nil {
			c.recorder.Eventf(node, nil, typ, reason, "Interruption", "%s", note)
		}
	}
}
