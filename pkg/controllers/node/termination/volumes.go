package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Reasons of the VolumesDetached condition.
const (
	ReasonVolumesDetached          = "VolumesDetached"
	ReasonAwaitingVolumeDetachment = "AwaitingVolumeDetachment"
	ReasonVolumeDetachTimedOut     = "VolumeDetachmentTimedOut"
)

// volumesDetached waits until no VolumeAttachment names the node, so that
// volumes are not lost with the instance. The wait is bounded: by the
// node's deadline when it has one, else by VolumeDetachTimeout after the
// drain finished. Past the bound, termination goes on with
// VolumesDetached=False.
func (c *Controller) volumesDetached(ctx context.Context, node *corev1.Node, nc *karpv1.NodeClaim, status *conditionWriter, deadline *time.Time) (bool, reconcile.Result, error) {
	var vas storagev1.VolumeAttachmentList
	if err := c.kube.List(ctx, &vas, client.MatchingFields{nodeclaimutil.IndexVolumeAttachmentNodeName: node.Name}); err != nil {
		return false, reconcile.Result{}, fmt.Errorf("listing volume attachments of node %s: %w", node.Name, err)
	}
	if len(vas.Items) == 0 {
		status.set(karpv1.ConditionTypeVolumesDetached, metav1.ConditionTrue, ReasonVolumesDetached, "")
		return true, reconcile.Result{}, nil
	}
	now := c.clock.Now()
	bound := deadline
	if bound == nil {
		// Count from the moment the drain finished (the Drained transition
		// just recorded, or an earlier one).
		start := now
		if nc != nil {
			if d := nc.GetCondition(karpv1.ConditionTypeDrained); d != nil && d.Status == metav1.ConditionTrue {
				start = d.LastTransitionTime.Time
			}
		}
		b := start.Add(c.opts.VolumeDetachTimeout)
		bound = &b
	}
	if !now.Before(*bound) {
		status.set(karpv1.ConditionTypeVolumesDetached, metav1.ConditionFalse, ReasonVolumeDetachTimedOut,
			fmt.Sprintf("%d volume attachments remained at the deadline; terminating anyway", len(vas.Items)))
		return true, reconcile.Result{}, nil
	}
	status.set(karpv1.ConditionTypeVolumesDetached, metav1.ConditionFalse, ReasonAwaitingVolumeDetachment,
		fmt.Sprintf("waiting for %d volume attachments (e.g. %s)", len(vas.Items), vas.Items[0].Name))
	return false, reconcile.Result{RequeueAfter: bound.Sub(now)}, nil
}
