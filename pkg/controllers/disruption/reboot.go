package disruption

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
)

// Reboot for repair (a repair policy with cloudprovider.RepairReboot):
// the state lives on the NodeClaim and its Node, so a restart picks it up.
const (
	// ConditionTypeRebooting (the peer's) on a NodeClaim: True while a
	// reboot for repair is in progress (reason RebootRequested, then
	// RebootIssued), False once it ended (RebootSucceeded: the node came
	// back with a new boot id; RebootFailed: the cloud refused it or the
	// node did not come back within RebootTimeout).
	ConditionTypeRebooting = "Rebooting"
	RebootReasonRequested  = "RebootRequested"
	RebootReasonIssued     = "RebootIssued"
	RebootReasonSucceeded  = "RebootSucceeded"
	RebootReasonFailed     = "RebootFailed"
	// RebootPreBootIDAnnotationKey (the peer's) holds the Node's boot id
	// before the reboot: a new one means the reboot happened.
	RebootPreBootIDAnnotationKey = "karpenter.sh/reboot-pre-boot-id"
	// RepairRebootsAnnotationKey counts the reboots for repair the
	// NodeClaim had; LastRebootAnnotationKey is when the last one ended
	// (RFC 3339).
	RepairRebootsAnnotationKey = "dovetail.sh/repair-reboots"
	LastRebootAnnotationKey    = "dovetail.sh/repair-last-reboot"
	// RebootingTaintKey (the peer's, effect NoSchedule) fences the Node
	// from new pods while it reboots; the pods bound to it stay.
	RebootingTaintKey = "karpenter.sh/rebooting"
	// RebootTimeout is how long a reboot may take before it counts as
	// failed.
	RebootTimeout  = 10 * time.Minute
	decisionReboot = "reboot"
	// RebootHold is how long a reboot for repair stays requested (the
	// Node fenced, the Rebooting condition True) before the cloud is asked
	// to reboot: pods bound late to the node are caught, and watchers see
	// the reboot coming (the peer holds a drained reboot at least as long).
	RebootHold = 5 * time.Second
)

// rebootState reads a NodeClaim's reboot-for-repair state for the
// planner: in progress, reboots so far, when the last one ended.
func rebootState(nc *karpv1.NodeClaim) (rebooting bool, reboots int, last time.Time) {
	if cond := nc.GetCondition(ConditionTypeRebooting); cond != nil && cond.Status == metav1.ConditionTrue {
		rebooting = true
	}
	reboots, _ = strconv.Atoi(nc.Annotations[RepairRebootsAnnotationKey])
	last, _ = time.Parse(time.RFC3339, nc.Annotations[LastRebootAnnotationKey])
	return rebooting, reboots, last
}

// startReboot carries out a reboot command: it records the Node's boot id
// and the Rebooting condition on the NodeClaim, fences the Node
// (RebootingTaintKey) and asks the cloud to reboot the instance. Nothing
// is evicted: the pods stay bound through the reboot.
func (c *Controller) startReboot(ctx context.Context, st *state, cmd planner.Command, now time.Time) error {
	if len(cmd.Nodes) != 1 {
		return fmt.Errorf("a reboot command has one node, this one %d", len(cmd.Nodes))
	}
	node := st.nodeByName[cmd.Nodes[0]]
	nc := st.claimOfNode[cmd.Nodes[0]]
	if node == nil || nc == nil || nc.DeletionTimestamp != nil || nc.Annotations[CommandAnnotationKey] != "" {
		return fmt.Errorf("reboot of node %s: its NodeClaim is gone, deleting or in a command", cmd.Nodes[0])
	}
	nc = st.own(nc)
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	nc.Annotations[RebootPreBootIDAnnotationKey] = node.Status.NodeInfo.BootID
	if err := nodeclaimutil.Patch(ctx, c.kube, nc, base); err != nil {
		return fmt.Errorf("marking NodeClaim %s for its reboot: %w", nc.Name, err)
	}
	base = nc.DeepCopy()
	nc.SetCondition(ConditionTypeRebooting, metav1.ConditionTrue, RebootReasonRequested, cmd.Message, now)
	nc.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionTrue, string(planner.ReasonUnhealthy), cmd.Message, now)
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil {
		return fmt.Errorf("recording the reboot of NodeClaim %s: %w", nc.Name, err)
	}
	if err := c.setRebootFence(ctx, node, true); err != nil {
		return err
	}
	c.metrics.DisruptionDecisions.WithLabelValues(decisionReboot, strings.ToLower(string(planner.ReasonUnhealthy)), "").Inc()
	if pool := nodeclaimutil.NodePool(nc); pool != "" {
		c.metrics.DisruptionDecisionsByNodePool.WithLabelValues(decisionReboot, strings.ToLower(string(planner.ReasonUnhealthy)), "", pool).Inc()
	}
	c.recorder.Eventf(nc, nil, corev1.EventTypeNormal, ReasonDisruptionLaunching, "Reboot", "%s", cmd.Message)
	c.recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonDisruptionLaunching, "Reboot", "%s", cmd.Message)
	// The cloud is asked once RebootHold has passed (driveReboots).
	return nil
}

// issueReboot asks the cloud to reboot a NodeClaim whose reboot was
// requested RebootHold ago.
func (c *Controller) issueReboot(ctx context.Context, st *state, nc *karpv1.NodeClaim, node *corev1.Node, now time.Time) error {
	msg := ""
	if cond := nc.GetCondition(ConditionTypeRebooting); cond != nil {
		msg = cond.Message
	}
	if err := c.cloud.Reboot(ctx, nc); err != nil {
		return errors.Join(fmt.Errorf("rebooting the instance of NodeClaim %s: %w", nc.Name, err),
			c.endReboot(ctx, st, nc, node, false, "the cloud provider refused the reboot: "+err.Error(), now))
	}
	nc = st.own(nc)
	base := nc.DeepCopy()
	nc.SetCondition(ConditionTypeRebooting, metav1.ConditionTrue, RebootReasonIssued, msg, now)
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).V(1).Info("recording the reboot issued", "nodeclaim", nc.Name, "error", err.Error())
	}
	bootID := ""
	if node != nil {
		bootID = node.Status.NodeInfo.BootID
	}
	log.FromContext(ctx).Info("rebooting for repair", "nodeclaim", nc.Name, "bootID", bootID)
	return nil
}

// driveReboots issues the reboots requested RebootHold ago, and ends the
// reboots in progress whose Node came back with a new boot id (succeeded)
// or did not within RebootTimeout (failed). It reports whether any is
// still in progress.
func (c *Controller) driveReboots(ctx context.Context, st *state, now time.Time) (bool, error) {
	inProgress := false
	var errs []error
	for _, nc := range st.claims {
		cond := nc.GetCondition(ConditionTypeRebooting)
		if cond == nil || cond.Status != metav1.ConditionTrue || nc.DeletionTimestamp != nil {
			continue
		}
		node := st.nodeOfClaim[nc.Name]
		pre, marked := nc.Annotations[RebootPreBootIDAnnotationKey]
		switch {
		case cond.Reason == RebootReasonRequested && now.Sub(cond.LastTransitionTime.Time) < RebootHold:
			inProgress = true
		case cond.Reason == RebootReasonRequested:
			errs = append(errs, c.issueReboot(ctx, st, nc, node, now))
			inProgress = true
		case node != nil && marked && node.Status.NodeInfo.BootID != pre:
			errs = append(errs, c.endReboot(ctx, st, nc, node, true, "the node came back with boot id "+node.Status.NodeInfo.BootID, now))
		case now.Sub(cond.LastTransitionTime.Time) >= RebootTimeout:
			errs = append(errs, c.endReboot(ctx, st, nc, node, false, fmt.Sprintf("the node did not come back with a new boot id within %s", RebootTimeout), now))
		default:
			inProgress = true
		}
	}
	return inProgress, errors.Join(errs...)
}

// endReboot records the end of a reboot (one more reboot counted, when it
// ended, the condition False with why) and lifts the fence.
func (c *Controller) endReboot(ctx context.Context, st *state, nc *karpv1.NodeClaim, node *corev1.Node, ok bool, why string, now time.Time) error {
	reason, evType := RebootReasonSucceeded, corev1.EventTypeNormal
	if !ok {
		reason, evType = RebootReasonFailed, corev1.EventTypeWarning
	}
	_, reboots, _ := rebootState(nc)
	nc = st.own(nc)
	base := nc.DeepCopy()
	if nc.Annotations == nil {
		nc.Annotations = map[string]string{}
	}
	delete(nc.Annotations, RebootPreBootIDAnnotationKey)
	nc.Annotations[RepairRebootsAnnotationKey] = strconv.Itoa(reboots + 1)
	nc.Annotations[LastRebootAnnotationKey] = now.UTC().Format(time.RFC3339)
	if err := nodeclaimutil.Patch(ctx, c.kube, nc, base); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording the end of the reboot of NodeClaim %s: %w", nc.Name, err))
	}
	base = nc.DeepCopy()
	msg := fmt.Sprintf("reboot %d for repair %s: %s", reboots+1, map[bool]string{true: "succeeded", false: "failed"}[ok], why)
	nc.SetCondition(ConditionTypeRebooting, metav1.ConditionFalse, reason, msg, now)
	nc.SetCondition(karpv1.ConditionTypeDisruptionReason, metav1.ConditionFalse, reason, msg, now)
	if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("recording the end of the reboot of NodeClaim %s: %w", nc.Name, err)
	}
	c.recorder.Eventf(nc, nil, evType, reason, "Reboot", "%s", msg)
	if node != nil {
		c.recorder.Eventf(node, nil, evType, reason, "Reboot", "%s", msg)
		if err := c.setRebootFence(ctx, node, false); err != nil {
			return err
		}
	}
	log.FromContext(ctx).Info("reboot for repair ended", "nodeclaim", nc.Name, "succeeded", ok, "why", why)
	return nil
}

// setRebootFence adds or removes RebootingTaintKey:NoSchedule (retried on
// a conflict, as setTaint).
func (c *Controller) setRebootFence(ctx context.Context, n *corev1.Node, on bool) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &corev1.Node{}
		if err := c.kube.Get(ctx, client.ObjectKeyFromObject(n), cur); err != nil {
			return client.IgnoreNotFound(err)
		}
		i := -1
		for j, t := range cur.Spec.Taints {
			if t.Key == RebootingTaintKey {
				i = j
			}
		}
		if (i >= 0) == on {
			return nil
		}
		base := cur.DeepCopy()
		if on {
			cur.Spec.Taints = append(cur.Spec.Taints, corev1.Taint{Key: RebootingTaintKey, Effect: corev1.TaintEffectNoSchedule})
		} else {
			cur.Spec.Taints = append(cur.Spec.Taints[:i:i], cur.Spec.Taints[i+1:]...)
		}
		return nodeclaimutil.Patch(ctx, c.kube, cur, base)
	})
	if err != nil {
		return fmt.Errorf("%s the rebooting taint of node %s: %w", map[bool]string{true: "adding", false: "removing"}[on], n.Name, err)
	}
	return nil
}
