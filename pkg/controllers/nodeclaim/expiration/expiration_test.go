package expiration_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/expiration"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

func TestExpiresAtCreationPlusExpireAfterOnTheClock(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ctrl := expiration.NewController(env.Manager.GetClient(), env.Clock, env.Recorder(), env.Metrics)
	env.Start(ctrl)

	nc := controllerstest.NodeClaim(env.Prefix+"-1h", "team-a")
	nc.Spec.ExpireAfter = karpv1.MustParseNillableDuration("1h")
	env.Create(nc)
	never := controllerstest.NodeClaim(env.Prefix+"-never", "team-a")
	never.Spec.ExpireAfter = karpv1.NeverDuration()
	env.Create(never)
	env.Clock.SetTime(nc.CreationTimestamp.Time)

	reconcileNC := func(obj *karpv1.NodeClaim) reconcile.Result {
		t.Helper()
		res, err := ctrl.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := reconcileNC(nc); res.RequeueAfter != time.Hour {
		t.Errorf("a new NodeClaim with expireAfter 1h asks again after %v, want 1h", res.RequeueAfter)
	}
	env.Clock.Step(time.Hour - time.Second)
	if res := reconcileNC(nc); res.RequeueAfter != time.Second {
		t.Errorf("1 s before expiry: requeue after %v, want 1s", res.RequeueAfter)
	}
	if gone, err := env.NotFound(nc); err != nil || gone {
		t.Fatalf("deleted before expiry (gone=%v, err=%v)", gone, err)
	}
	env.Clock.Step(time.Second)
	reconcileNC(nc)
	env.Eventually("the expired NodeClaim to go", func() (bool, error) { return env.NotFound(nc) })
	ev := env.EventuallyEventAbout(nc, expiration.ReasonExpired)
	if !strings.Contains(ev.Note, "expireAfter 1h") {
		t.Errorf("event note %q does not name expireAfter", ev.Note)
	}
	if v := metricstest.Value(t, env.Metrics.NodeClaimsDisrupted.WithLabelValues("expired", "team-a", karpv1.CapacityTypeOnDemand)); v != 1 {
		t.Errorf("karpenter_nodeclaims_disrupted_total{reason=expired} = %v, want 1", v)
	}

	env.Clock.Step(100000 * time.Hour)
	if res := reconcileNC(never); res.RequeueAfter != 0 {
		t.Errorf("expireAfter Never asks to run again after %v", res.RequeueAfter)
	}
	if gone, err := env.NotFound(never); err != nil || gone {
		t.Errorf("a NodeClaim with expireAfter Never was deleted (gone=%v, err=%v)", gone, err)
	}
}

// On the real clock, with nothing driving the reconciler by hand: the
// requeue alone deletes the NodeClaim when it expires.
func TestExpiresOnTheRealClock(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(expiration.NewController(env.Manager.GetClient(), clock.RealClock{}, env.Recorder(), env.Metrics))
	nc := controllerstest.NodeClaim(env.Prefix, "team-a")
	nc.Spec.ExpireAfter = karpv1.MustParseNillableDuration("3s")
	env.Create(nc)
	created := nc.CreationTimestamp.Time
	env.Eventually("the NodeClaim to expire", func() (bool, error) { return env.NotFound(nc) })
	// creationTimestamp has second precision: allow for its truncation.
	if age := time.Since(created); age < 2*time.Second {
		t.Errorf("deleted %v after creation, before expireAfter 3s", age)
	}
}
