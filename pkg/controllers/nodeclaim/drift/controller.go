package drift

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/requirements/apireq"
)

// Drift reasons found by this controller (the cloud provider adds its own,
// see cloudprovider.DriftReason).
const (
	ReasonNodePoolDrifted     = "NodePoolDrifted"
	ReasonRequirementsDrifted = "RequirementsDrifted"
)

// DefaultPollInterval is how often a launched NodeClaim is re-checked even
// without events: cloud-side drift (a newer image) makes none.
const DefaultPollInterval = 5 * time.Minute

// Controller records the Drifted condition of launched NodeClaims. It only
// observes: replacing drifted nodes is the disruption controller's job.
type Controller struct {
	kube         client.Client
	cloud        cloudprovider.CloudProvider
	clock        clock.Clock
	pollInterval time.Duration
}

// NewController returns the controller; pollInterval <= 0 means
// DefaultPollInterval.
func NewController(kube client.Client, cloud cloudprovider.CloudProvider, clk clock.Clock, pollInterval time.Duration) *Controller {
	if pollInterval <= 0 {
		pollInterval = DefaultPollInterval
	}
	return &Controller{kube: kube, cloud: cloud, clock: clk, pollInterval: pollInterval}
}

// Name is the controller's name in logs and metrics.
func (c *Controller) Name() string { return "nodeclaim.drift" }

// Register adds the controller to the manager. A NodePool change re-checks
// its NodeClaims (a change of its spec or annotations, where its template
// hash lives: not its status, which changes with every launch and would
// re-check the whole pool each time); an EC2NodeClass change re-checks the
// NodeClaims that launch with it.
func (c *Controller) Register(_ context.Context, mgr manager.Manager) error {
	r := mgr.GetClient()
	return builder.ControllerManagedBy(mgr).Named(c.Name()).
		For(&karpv1.NodeClaim{}).
		Watches(&karpv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requests(ctx, r, client.MatchingLabels{karpv1.NodePoolLabelKey: o.GetName()})
		}), builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&awsv1.EC2NodeClass{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return requests(ctx, r, client.MatchingFields{nodeclaimutil.IndexNodeClaimNodeClassName: o.GetName()})
		})).
		Complete(c)
}

func requests(ctx context.Context, r client.Reader, opt client.ListOption) []reconcile.Request {
	var ncs karpv1.NodeClaimList
	// Only names are read: no copies (this runs on every NodePool status
	// change, i.e. with every launch at fleet size).
	if err := r.List(ctx, &ncs, opt, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(ncs.Items))
	for _, nc := range ncs.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: nc.Name}})
	}
	return out
}

// Reconcile sets Drifted=True with the first reason found, or removes the
// condition, and looks again after the poll interval.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nc := &karpv1.NodeClaim{}
	if err := c.kube.Get(ctx, req.NamespacedName, nc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nc.DeletionTimestamp.IsZero() || !nc.IsTrue(karpv1.ConditionTypeLaunched) {
		return reconcile.Result{}, nil
	}
	reason, msg, err := c.drifted(ctx, nc)
	if err != nil {
		return reconcile.Result{}, err
	}
	base := nc.DeepCopy()
	if reason != "" {
		if !nc.IsTrue(karpv1.ConditionTypeDrifted) {
			// Once per NodeClaim: which rule found it drifted.
			log.FromContext(ctx).Info("nodeclaim drifted", "nodeclaim", nc.Name, "reason", reason, "message", msg)
		}
		nc.SetCondition(karpv1.ConditionTypeDrifted, metav1.ConditionTrue, reason, msg, c.clock.Now())
	} else {
		nc.ClearCondition(karpv1.ConditionTypeDrifted)
	}
	if !equality.Semantic.DeepEqual(base.Status, nc.Status) {
		if err := nodeclaimutil.PatchStatus(ctx, c.kube, nc, base); err != nil {
			return nodeclaimutil.RequeueOnConflict(client.IgnoreNotFound(err))
		}
	}
	return reconcile.Result{RequeueAfter: c.pollInterval}, nil
}

// drifted checks, in order: the NodePool template hash, the NodePool
// requirements against the NodeClaim's labels, and the cloud provider.
func (c *Controller) drifted(ctx context.Context, nc *karpv1.NodeClaim) (reason, message string, err error) {
	np := &karpv1.NodePool{}
	if name := nodeclaimutil.NodePool(nc); name != "" {
		if err := c.kube.Get(ctx, client.ObjectKey{Name: name}, np); client.IgnoreNotFound(err) != nil {
			return "", "", err
		} else if err == nil {
			if r, m := staticDrift(np, nc); r != "" {
				return r, m, nil
			}
		}
	}
	cloudReason, err := c.cloud.IsDrifted(ctx, nc)
	if err != nil {
		return "", "", fmt.Errorf("asking the cloud whether %s drifted: %w", nc.Name, err)
	}
	if cloudReason != "" {
		return string(cloudReason), "the cloud provider reports " + string(cloudReason), nil
	}
	return "", "", nil
}

// staticDrift compares the NodeClaim with its NodePool: the template hash
// (only when both were stamped by the same hash version) and every pool
// requirement against the NodeClaim's label of that key, when it has one.
func staticDrift(np *karpv1.NodePool, nc *karpv1.NodeClaim) (string, string) {
	npHash, npOK := np.Annotations[karpv1.NodePoolHashAnnotationKey]
	ncHash, ncOK := nc.Annotations[karpv1.NodePoolHashAnnotationKey]
	sameVersion := np.Annotations[karpv1.NodePoolHashVersionAnnotationKey] == nc.Annotations[karpv1.NodePoolHashVersionAnnotationKey]
	if npOK && ncOK && sameVersion && npHash != ncHash {
		return ReasonNodePoolDrifted, "the NodePool template changed (hash " + ncHash + " -> " + npHash + ")"
	}
	for i, r := range np.Spec.Template.Spec.Requirements {
		v, ok := nc.Labels[r.Key]
		if !ok {
			continue
		}
		rs, errs := apireq.Convert(np.Spec.Template.Spec.Requirements[i:i+1], field.NewPath("spec", "template", "spec", "requirements"))
		if len(errs) > 0 {
			continue // the pool's status reports invalid requirements
		}
		if req := rs.Get(r.Key); req != nil && !req.Has(v) {
			return ReasonRequirementsDrifted, fmt.Sprintf("label %s=%s no longer satisfies spec.template.spec.requirements[%d] of NodePool %s", r.Key, v, i, np.Name)
		}
	}
	return "", ""
}
