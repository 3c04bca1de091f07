package termination

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// Reasons of the drain (conditions and events).
const (
	ReasonDraining                      = "Draining"
	ReasonDrained                       = "Drained"
	ReasonEvicted                       = "Evicted"
	ReasonEvictionBlocked               = "EvictionBlocked"
	ReasonTerminationGracePeriodExpired = "TerminationGracePeriodExpiring"
)

// Drain groups, evicted in this order: each group starts only once the
// ones before it are empty.
const (
	groupNonCritical = iota
	groupNonCriticalDaemon
	groupCritical
	groupCriticalDaemon
	numGroups
)

// stuckTerminatingAfter: a pod still present this long after its
// deletion deadline is taken to be on a dead kubelet and no longer waited
// for.
const stuckTerminatingAfter = time.Minute

// defaultPodGrace is the pod termination grace period Kubernetes applies
// when a pod sets none.
const defaultPodGrace = 30 * time.Second

// drain evicts the node's pods group by group and reports whether none is
// left to wait for. With a deadline, every pod is deleted (not evicted) in
// time to finish its own grace period before the deadline: PDBs and
// do-not-disrupt no longer protect it then.
func (c *Controller) drain(ctx context.Context, node *corev1.Node, status *conditionWriter, deadline *time.Time) (bool, reconcile.Result, error) {
	pods, err := nodeclaimutil.PodsOnNode(ctx, c.kube, node.Name)
	if err != nil {
		return false, reconcile.Result{}, err
	}
	now := c.clock.Now()
	var waiting, evictable [numGroups][]*corev1.Pod
	var wakeups []time.Time
	for i := range pods {
		p := &pods[i]
		if !drainable(p) {
			continue
		}
		g := group(p)
		if !p.DeletionTimestamp.IsZero() {
			if stuck := p.DeletionTimestamp.Add(stuckTerminatingAfter); now.Before(stuck) {
				waiting[g] = append(waiting[g], p)
			}
			continue
		}
		if deadline != nil {
			deleteAt := deadline.Add(-podGrace(p))
			if !now.Before(deleteAt) {
				if err := c.deleteForDeadline(ctx, node, p, *deadline, now); err != nil {
					return false, reconcile.Result{}, err
				}
				waiting[g] = append(waiting[g], p)
				continue
			}
			wakeups = append(wakeups, deleteAt)
		}
		waiting[g] = append(waiting[g], p)
		if until, ok := protected(p, now); !ok {
			evictable[g] = append(evictable[g], p)
		} else if !until.IsZero() {
			wakeups = append(wakeups, until) // evicted when its protection ends
		}
	}
	for g := range numGroups {
		if len(waiting[g]) == 0 {
			continue
		}
		if next, ok := c.evictAll(ctx, node, evictable[g], now); ok {
			wakeups = append(wakeups, next)
		}
		total := 0
		var names []string
		for _, ps := range waiting {
			total += len(ps)
			for _, p := range ps {
				if len(names) < 3 {
					names = append(names, p.Namespace+"/"+p.Name)
				}
			}
		}
		msg := fmt.Sprintf("%d pods remaining (%s)", total, strings.Join(names, ", "))
		status.set(karpv1.ConditionTypeDrained, metav1.ConditionFalse, ReasonDraining, msg)
		return false, requeueAt(now, wakeups), nil
	}
	return true, reconcile.Result{}, nil
}

// drainable: pods a drain deals with. Mirror pods (static pods) belong to
// the kubelet, and finished pods hold nothing.
func drainable(p *corev1.Pod) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return false
	}
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func group(p *corev1.Pod) int {
	critical := p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
	daemon := false
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			daemon = true
		}
	}
	switch {
	case critical && daemon:
		return groupCriticalDaemon
	case critical:
		return groupCritical
	case daemon:
		return groupNonCriticalDaemon
	default:
		return groupNonCritical
	}
}

// protected: the pod carries karpenter.sh/do-not-disrupt ("true", or a
// duration counted from the pod's start, as the peer counts it, that has
// not elapsed), and until when (zero: indefinitely).
func protected(p *corev1.Pod, now time.Time) (time.Time, bool) {
	v, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]
	if !ok || v == "false" {
		return time.Time{}, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		start := p.CreationTimestamp.Time
		if p.Status.StartTime != nil {
			start = p.Status.StartTime.Time
		}
		until := start.Add(d)
		return until, now.Before(until)
	}
	return time.Time{}, true
}

func podGrace(p *corev1.Pod) time.Duration {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return defaultPodGrace
}

// deleteForDeadline deletes the pod with whatever grace is left before the
// node's deadline.
func (c *Controller) deleteForDeadline(ctx context.Context, node *corev1.Node, p *corev1.Pod, deadline, now time.Time) error {
	grace := int64(0)
	if left := deadline.Sub(now); left > 0 {
		grace = int64(left.Seconds())
	}
	uid := p.UID
	err := c.kube.Delete(ctx, p, client.GracePeriodSeconds(grace), client.Preconditions{UID: &uid})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting pod %s/%s for the termination deadline of node %s: %w", p.Namespace, p.Name, node.Name, err)
	}
	c.recorder.Eventf(p, node, corev1.EventTypeWarning, ReasonTerminationGracePeriodExpired, "Delete",
		"Deleting pod with %ds of grace: node %s must be gone by %s", grace, node.Name, deadline.UTC().Format(time.RFC3339))
	return nil
}

func requeueAt(now time.Time, wakeups []time.Time) reconcile.Result {
	var res reconcile.Result
	for _, w := range wakeups {
		d := w.Sub(now)
		if d <= 0 {
			d = time.Millisecond
		}
		if res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
	}
	return res
}
