package operator

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/dovetail-sh/dovetail/config/rbac"
)

// checkLeasePermissions asks the API server (SelfSubjectAccessReview)
// whether this identity may create Leases in the lease's namespace and
// get, update and watch the named one. When the Role does not follow
// --leader-election-name/-namespace, leader election would otherwise retry
// forever without a word; this fails start-up naming the flags and how to
// render a Role that matches.
func checkLeasePermissions(ctx context.Context, cfg *rest.Config, le LeaderElection) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	var denied []string
	for _, a := range []struct{ verb, name string }{
		{"create", ""}, {"get", le.Name}, {"update", le.Name}, {"watch", le.Name},
	} {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: le.Namespace, Verb: a.verb, Group: "coordination.k8s.io", Resource: "leases", Name: a.name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("leader election: checking the Lease permissions: %w", err)
		}
		if !review.Status.Allowed {
			what := a.verb + " leases"
			if a.name != "" {
				what += "/" + a.name
			}
			denied = append(denied, what)
		}
	}
	if len(denied) > 0 {
		return fmt.Errorf("leader election: this identity may not %s in namespace %s: the controller's Role must name the Lease of "+
			"--leader-election-name=%s in --leader-election-namespace=%s (config/rbac/role.yaml names %s in %s; render it for this lease with "+
			"rbac.Render, or set the chart's leaderElection.name/namespace, which moves its Role too)",
			strings.Join(denied, ", "), le.Namespace, le.Name, le.Namespace, rbac.DefaultLeaseName, rbac.DefaultLeaseNamespace)
	}
	return nil
}
