package interruption

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/snapshot"
)

// rebalanceRecheck bounds how long a replacement waits between looks when
// no watch event arrives.
const rebalanceRecheck = 10 * time.Second

// rebalancer finishes proactive replacements: a NodeClaim annotated
// dovetail.sh/replaced-by is cordoned and deleted (drained by termination)
// once every replacement it names is initialized. A replacement that
// disappears before that (refused launch, liveness timeout) is planned
// again. The state lives in the annotation, so a restart resumes it.
type rebalancer struct{ c *Controller }

// indexReplacedBy indexes NodeClaims by the names of their replacements
// (dovetail.sh/replaced-by).
const indexReplacedBy = "dovetail.sh/replaced-by"

func (r *rebalancer) register(ctx context.Context, mgr manager.Manager) error {
	replaced := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetAnnotations()[snapshot.ReplacedByAnnotationKey] != ""
	})
	if err := mgr.GetFieldIndexer().IndexField(ctx, &karpv1.NodeClaim{}, indexReplacedBy, func(o client.Object) []string {
		return replacements(o.(*karpv1.NodeClaim))
	}); err != nil {
		return fmt.Errorf("indexing NodeClaims by %s: %w", indexReplacedBy, err)
	}
	return builder.ControllerManagedBy(mgr).Named("interruption.rebalance").
		For(&karpv1.NodeClaim{}, builder.WithPredicates(replaced)).
		Watches(&karpv1.NodeClaim{}, handler.EnqueueRequestsFromMapFunc(r.replacedBy)).
		Complete(r)
}

// replacedBy maps a NodeClaim to the NodeClaims it replaces.
// It runs on every NodeClaim update, so it looks them up in an index
// (indexReplacedBy) rather than listing every NodeClaim: a list per update
// grows with the square of the fleet (at 3,000 NodeClaims even an
// uncopied list copies every NodeClaim struct into the list's items).
func (r *rebalancer) replacedBy(ctx context.Context, obj client.Object) []reconcile.Request {
	var list karpv1.NodeClaimList
	if err := r.c.kube.List(ctx, &list, client.MatchingFields{indexReplacedBy: obj.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if slices.Contains(replacements(&list.Items[i]), obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return out
}

func replacements(nc *karpv1.NodeClaim) []string {
	v := nc.Annotations[snapshot.ReplacedByAnnotationKey]
	if v == "" || v == noReplacement {
		return nil
	}
	return strings.Split(v, ",")
}

func (r *rebalancer) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := r.c
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || nc.Annotations[snapshot.ReplacedByAnnotationKey] == "" {
		return reconcile.Result{}, nil
	}
	var waiting []string
	for _, name := range replacements(nc) {
		repl := &karpv1.NodeClaim{}
		err := c.kube.Get(ctx, client.ObjectKey{Name: name}, repl)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && !repl.DeletionTimestamp.IsZero()):
			if nc.Status.NodeName == "" || c.replacer == nil {
				break
			}
			c.log.Info("a replacement went away before it was initialized; planning again", "nodeClaim", nc.Name, "replacement", name)
			return reconcile.Result{}, c.startReplacement(ctx, nc)
		case err != nil:
			return reconcile.Result{}, err
		case !repl.IsTrue(karpv1.ConditionTypeInitialized):
			waiting = append(waiting, name)
		}
	}
	if len(waiting) > 0 {
		return reconcile.Result{RequeueAfter: rebalanceRecheck}, nil
	}
	note := "the pods fit on existing nodes"
	if names := replacements(nc); len(names) > 0 {
		note = "replacement NodeClaim " + strings.Join(names, ", ") + " is initialized"
	}
	c.event(ctx, nc, corev1.EventTypeNormal, ReasonRebalanced, fmt.Sprintf("Rebalance: %s; cordoning and draining the node", note))
	if nc.Status.NodeName != "" {
		if err := c.cordon(ctx, nc.Status.NodeName); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := c.kube.Delete(ctx, nc); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	c.metrics.Actions.WithLabelValues("delete").Inc()
	return reconcile.Result{}, nil
}
