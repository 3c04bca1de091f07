package termination_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

func setup(t *testing.T) *controllerstest.Env {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	env.Start(
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}),
		termination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
	)
	return env
}

func TestDeletingANodeClaimWithoutANodeTerminatesItsInstance(t *testing.T) {
	tests := []struct {
		name     string
		launched bool
		// deleteErrs are returned by the first Delete calls.
		deleteErrs []error
	}{
		{"launched, node never registered", true, nil},
		{"launched, cloud fails once", true, []error{errors.New("throttled")}},
		{"never launched", false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := setup(t)
			nc := controllerstest.NodeClaim("gone", "team-a")
			if !tt.launched {
				env.Cloud.FailNext("Create", cloudErrs(1000)...)
			}
			nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
			env.Create(nc)
			env.Eventually("launch attempt", func() (bool, error) {
				if err := env.Get(nc); err != nil {
					return false, err
				}
				return nc.GetCondition(karpv1.ConditionTypeLaunched) != nil, nil
			})
			env.Cloud.FailNext("Delete", tt.deleteErrs...)
			env.Delete(nc)
			env.Eventually("the NodeClaim to be gone", func() (bool, error) { return env.NotFound(nc) })
			if n := len(env.Cloud.Instances()); n != 0 {
				t.Fatalf("%d instances left", n)
			}
			if got := env.Cloud.Calls("Delete"); got < 1+len(tt.deleteErrs) {
				t.Errorf("Delete called %d times, want at least %d", got, 1+len(tt.deleteErrs))
			}
			// The counter moves just after the finalizer goes, which the
			// test can see first.
			env.Eventually("the termination counted", func() (bool, error) {
				if v := metricstest.Count(env.Metrics.NodeClaimsTerminated); v != 1 {
					return false, fmt.Errorf("terminated series = %d, want 1", v)
				}
				return true, nil
			})
			// An instance was terminated only if one was launched (the
			// duration is observed just after the counter moves).
			want := 0
			if tt.launched {
				want = 1
			}
			env.Eventually("the instance termination timed", func() (bool, error) {
				if n := histogramCount(t, env, "team-a"); n != want {
					return false, fmt.Errorf("instance termination durations observed = %d, want %d", n, want)
				}
				return true, nil
			})
		})
	}
}

func cloudErrs(n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = &cloudprovider.CreateError{Reason: "Boom"}
	}
	return out
}

func TestTerminationStampsTheDeadlineWhileTheNodeClaimIsHeld(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	env.Start(termination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics))
	nc := controllerstest.NodeClaim("stamp", "team-a")
	nc.Finalizers = []string{karpv1.TerminationFinalizer, "example.com/hold"}
	nc.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 90 * time.Minute}
	env.Create(nc)
	env.Delete(nc)
	env.Eventually("the deadline annotation and the released finalizer", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		s, ok := nc.Annotations[karpv1.NodeClaimTerminationTimestampAnnotationKey]
		if !ok || len(nc.Finalizers) != 1 {
			return false, nil
		}
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return false, err
		}
		if want := nc.DeletionTimestamp.Add(90 * time.Minute); !at.Equal(want) {
			t.Fatalf("deadline %s, want %s", at, want)
		}
		return true, nil
	})
	if nc.Finalizers[0] != "example.com/hold" {
		t.Fatalf("finalizers %v", nc.Finalizers)
	}
}

// histogramCount is the number of instance termination durations observed
// for pool, read from a scrape of the registry.
func histogramCount(t *testing.T, env *controllerstest.Env, pool string) int {
	t.Helper()
	fams, err := env.Metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "karpenter_nodeclaims_instance_termination_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "nodepool" && l.GetValue() == pool {
					return int(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	return 0
}

// TestInstanceTerminationIsTimedFromTheFirstCall: a NodeClaim whose
// instance termination began 45 s ago (the InstanceTerminating condition,
// kept in the cluster: a controller restarted in between) and whose
// instance is now gone observes 45 s in
// karpenter_nodeclaims_instance_termination_duration_seconds.
func TestInstanceTerminationIsTimedFromTheFirstCall(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	env.Start(termination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics))
	nc := controllerstest.NodeClaim("timed", "team-t")
	nc.Finalizers = []string{karpv1.TerminationFinalizer}
	env.Create(nc)
	nc.Status.ProviderID = "fake:///timed"
	began := env.Clock.Now().Add(-45 * time.Second)
	nc.SetCondition(karpv1.ConditionTypeInstanceTerminating, metav1.ConditionTrue, termination.ReasonInstanceTerminating, "", began)
	if err := env.Client.Status().Update(env.Context(), nc); err != nil {
		t.Fatal(err)
	}
	env.Delete(nc)
	env.Eventually("the NodeClaim to be gone", func() (bool, error) { return env.NotFound(nc) })
	env.Eventually("one duration observed", func() (bool, error) { return histogramCount(t, env, "team-t") == 1, nil })
	fams, err := env.Metrics.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "karpenter_nodeclaims_instance_termination_duration_seconds" {
			for _, m := range f.GetMetric() {
				if got := m.GetHistogram().GetSampleSum(); m.GetLabel()[0].GetValue() == "team-t" && got != 45 {
					t.Errorf("observed %v s, want 45", got)
				}
			}
		}
	}
}

// TestDeletingAnImpostorLeavesTheRightfulNode: a NodeClaim whose status
// copies another claim's providerID, deleted, never deletes that claim's
// node nor terminates its instance.
func TestDeletingAnImpostorLeavesTheRightfulNode(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(termination.NewController(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), env.Metrics))

	owner := controllerstest.NodeClaim("owner", "team-a")
	env.Create(owner)
	inst, err := env.Cloud.Create(env.Context(), owner)
	if err != nil {
		t.Fatal(err)
	}
	pid := inst.Status.ProviderID
	setProviderID(t, env, owner, pid)
	node := env.NodeFor(inst)
	node.OwnerReferences = []metav1.OwnerReference{{APIVersion: karpv1.GroupVersion.String(), Kind: "NodeClaim", Name: owner.Name, UID: owner.UID}}
	env.Create(node)

	imp := controllerstest.NodeClaim("impostor", "team-a")
	imp.Finalizers = []string{karpv1.TerminationFinalizer}
	env.Create(imp)
	setProviderID(t, env, imp, pid)
	// Deleted once the cache knows both claims carry the providerID.
	env.Eventually("the cache to see both claims", func() (bool, error) {
		var list karpv1.NodeClaimList
		if err := env.Manager.GetClient().List(env.Context(), &list, client.MatchingFields{nodeclaimutil.IndexNodeClaimProviderID: pid}); err != nil {
			return false, err
		}
		return len(list.Items) == 2, nil
	})
	env.Delete(imp)
	env.Eventually("the impostor to be gone", func() (bool, error) { return env.NotFound(imp) })

	if err := env.Get(node); err != nil {
		t.Fatalf("the rightful claim's node: %v", err)
	}
	if !node.DeletionTimestamp.IsZero() {
		t.Error("the rightful claim's node is being deleted")
	}
	if _, err := env.Cloud.Get(env.Context(), pid); err != nil {
		t.Errorf("the rightful claim's instance: %v", err)
	}
}

func setProviderID(t *testing.T, env *controllerstest.Env, nc *karpv1.NodeClaim, pid string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Get(nc); err != nil {
			return err
		}
		nc.Status.ProviderID = pid
		nc.SetCondition(karpv1.ConditionTypeLaunched, metav1.ConditionTrue, "Launched", "", env.Clock.Now())
		return env.Client.Status().Update(env.Context(), nc)
	})
	if err != nil {
		t.Fatal(err)
	}
}
