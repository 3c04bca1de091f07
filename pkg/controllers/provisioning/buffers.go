package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// Reasons of a CapacityBuffer's Provisioning condition, written after
// each pass that planned its room.
const (
	// ReasonFitsExistingCapacity: every chunk fits on existing nodes.
	ReasonFitsExistingCapacity = "FitsExistingCapacity"
	// ReasonRequiresNewCapacity: some chunks wait for NodeClaims being
	// launched, or fit nowhere (NodePool limits, constraints).
	ReasonRequiresNewCapacity = "RequiresNewCapacity"
)

// readBuffers adds the CapacityBuffers and the PodTemplates their status
// names to c.
func (p *Provisioner) readBuffers(ctx context.Context, c *snapshot.Cluster) error {
	var cbs autoscalingv1beta1.CapacityBufferList
	if err := p.kube.List(ctx, &cbs); err != nil {
		return fmt.Errorf("listing CapacityBuffers: %w", err)
	}
	for i := range cbs.Items {
		cb := &cbs.Items[i]
		c.CapacityBuffers = append(c.CapacityBuffers, cb)
		if cb.Status.PodTemplateRef == nil {
			continue
		}
		pt := &corev1.PodTemplate{}
		err := p.kube.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: cb.Status.PodTemplateRef.Name}, pt)
		switch {
		case apierrors.IsNotFound(err):
			continue // the buffer controller reports it
		case err != nil:
			return fmt.Errorf("reading PodTemplate %s/%s of CapacityBuffer %s: %w", cb.Namespace, cb.Status.PodTemplateRef.Name, cb.Name, err)
		}
		c.PodTemplates = append(c.PodTemplates, pt)
	}
	return nil
}

// unschedulableBufferPods counts the buffer pods among the plan's
// unschedulable pods (they are not pods anyone waits for).
func unschedulableBufferPods(plan *engine.Plan) int {
	n := 0
	for _, r := range plan.Buffers {
		n += r.Unschedulable
	}
	return n
}

// bufferMetrics sets each planned buffer's room gauges (and drops those
// of buffers no longer planned).
func (p *Provisioner) bufferMetrics(plan *engine.Plan) {
	p.metrics.BufferPods.Reset()
	if plan == nil {
		return
	}
	for _, r := range plan.Buffers {
		for placement, n := range map[string]int{"wanted": r.Wanted, "existing": r.Existing, "inflight": r.InFlight, "new": r.New, "nowhere": r.Unschedulable} {
			p.metrics.BufferPods.WithLabelValues(r.Namespace, r.Name, placement).Set(float64(n))
		}
	}
}

// bufferStatus writes each planned buffer's Provisioning condition when
// it changed: True (FitsExistingCapacity) when all its chunks fit on
// existing nodes, else False (RequiresNewCapacity) with the counts.
func (p *Provisioner) bufferStatus(ctx context.Context, v *view, plan *engine.Plan) error {
	byKey := map[string]*autoscalingv1beta1.CapacityBuffer{}
	for _, cb := range v.cluster.CapacityBuffers {
		byKey[cb.Namespace+"/"+cb.Name] = cb
	}
	var errs []error
	for _, r := range plan.Buffers {
		cb := byKey[r.Namespace+"/"+r.Name]
		if cb == nil {
			continue
		}
		cond := metav1.Condition{Type: autoscalingv1beta1.ConditionProvisioning, ObservedGeneration: cb.Generation,
			Status: metav1.ConditionTrue, Reason: ReasonFitsExistingCapacity,
			Message: fmt.Sprintf("all %d chunks fit on existing nodes", r.Wanted)}
		if r.Existing < r.Wanted {
			cond.Status, cond.Reason = metav1.ConditionFalse, ReasonRequiresNewCapacity
			cond.Message = fmt.Sprintf("%d of %d chunks fit on existing nodes, %d on NodeClaims being launched, %d on new NodeClaims, %d nowhere (NodePool limits or constraints)",
				r.Existing, r.Wanted, r.InFlight, r.New, r.Unschedulable)
		}
		old := apimeta.FindStatusCondition(cb.Status.Conditions, cond.Type)
		if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message && old.ObservedGeneration == cond.ObservedGeneration {
			continue
		}
		patched := cb.DeepCopy()
		cond.LastTransitionTime = metav1.NewTime(p.clock.Now())
		apimeta.SetStatusCondition(&patched.Status.Conditions, cond)
		err := p.kube.Status().Patch(ctx, patched, client.MergeFromWithOptions(cb, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // the next pass writes it
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("writing the status of CapacityBuffer %s/%s: %w", cb.Namespace, cb.Name, err))
		}
	}
	return errors.Join(errs...)
}
