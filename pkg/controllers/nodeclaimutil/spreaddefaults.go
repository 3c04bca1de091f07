package nodeclaimutil

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dovetail-sh/dovetail/pkg/spreaddefaults"
)

// ApplySpreadDefaults gives pods the cluster's default topology spread
// constraints (SCHEDULER_CONFIG; spreaddefaults.Apply), deducing each
// pod's selector from the Services, ReplicationControllers, ReplicaSets
// and StatefulSets kube reads (the manager's cache). With no defaults it
// returns pods and reads nothing, so those kinds are only cached when the
// setting is used. The pods are never modified: defaulted ones are
// copies. A kind that cannot be listed is left out and named in the error,
// with the pods defaulted from the rest, as kube-scheduler goes on without
// a lister that fails; the caller logs it and plans.
func ApplySpreadDefaults(ctx context.Context, kube client.Reader, defaults []corev1.TopologySpreadConstraint, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	if len(defaults) == 0 {
		return pods, nil
	}
	fast := client.UnsafeDisableDeepCopy
	var objs spreaddefaults.Objects
	var errs []error
	var svcs corev1.ServiceList
	if err := kube.List(ctx, &svcs, fast); err != nil {
		errs = append(errs, fmt.Errorf("listing Services: %w", err))
	}
	for i := range svcs.Items {
		objs.Services = append(objs.Services, &svcs.Items[i])
	}
	var rcs corev1.ReplicationControllerList
	if err := kube.List(ctx, &rcs, fast); err != nil {
		errs = append(errs, fmt.Errorf("listing ReplicationControllers: %w", err))
	}
	for i := range rcs.Items {
		objs.ReplicationControllers = append(objs.ReplicationControllers, &rcs.Items[i])
	}
	var rss appsv1.ReplicaSetList
	if err := kube.List(ctx, &rss, fast); err != nil {
		errs = append(errs, fmt.Errorf("listing ReplicaSets: %w", err))
	}
	for i := range rss.Items {
		objs.ReplicaSets = append(objs.ReplicaSets, &rss.Items[i])
	}
	var stss appsv1.StatefulSetList
	if err := kube.List(ctx, &stss, fast); err != nil {
		errs = append(errs, fmt.Errorf("listing StatefulSets: %w", err))
	}
	for i := range stss.Items {
		objs.StatefulSets = append(objs.StatefulSets, &stss.Items[i])
	}
	out := spreaddefaults.Apply(defaults, pods, objs)
	if len(errs) > 0 {
		return out, fmt.Errorf("default topology spread constraints: %w", errors.Join(errs...))
	}
	return out, nil
}
