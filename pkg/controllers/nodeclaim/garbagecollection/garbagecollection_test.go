package garbagecollection_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/singleton"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

// setup runs lifecycle and termination in the manager; the sweep under test
// is driven by hand (sweep) so that the fake clock decides grace periods.
func setup(t *testing.T) (*controllerstest.Env, func() time.Duration) {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	gc := garbagecollection.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, garbagecollection.Options{})
	env.Start(
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}),
		termination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
	)
	sweep := func() time.Duration {
		t.Helper()
		res, err := gc.Reconcile(context.Background(), singleton.Request(gc.Name()))
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		return res.RequeueAfter
	}
	return env, sweep
}

func TestLeakedInstancesAreTerminatedAfterTheGracePeriod(t *testing.T) {
	env, sweep := setup(t)
	// A NodeClaim the controllers know, and an instance nobody knows.
	known := controllerstest.NodeClaim("known", "team-a")
	env.Create(known)
	env.Eventually("known to launch", func() (bool, error) {
		if err := env.Get(known); err != nil {
			return false, err
		}
		return known.IsTrue(karpv1.ConditionTypeLaunched), nil
	})
	_, err := env.Cloud.Create(context.Background(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: "leaked", CreationTimestamp: metav1.NewTime(env.Clock.Now()),
	}})
	if err != nil {
		t.Fatal(err)
	}

	if next := sweep(); next <= 0 || next > garbagecollection.DefaultGracePeriod {
		t.Fatalf("next sweep in %s, want within the grace period", next)
	}
	if n := len(env.Cloud.Instances()); n != 2 {
		t.Fatalf("%d instances after a sweep inside the grace period, want 2", n)
	}
	env.Clock.Step(garbagecollection.DefaultGracePeriod)
	if next := sweep(); next != garbagecollection.DefaultInterval {
		t.Errorf("next sweep in %s, want the interval", next)
	}
	insts := env.Cloud.Instances()
	if len(insts) != 1 || insts[0].Status.ProviderID != known.Status.ProviderID {
		t.Fatalf("instances %v, want only %s", insts, known.Status.ProviderID)
	}
	if v := metricstest.Value(t, env.Metrics.GarbageCollected.WithLabelValues(garbagecollection.KindInstance)); v != 1 {
		t.Errorf("instances collected = %v", v)
	}
}

func TestNodeClaimsWhoseInstanceVanishedAreDeleted(t *testing.T) {
	env, sweep := setup(t)
	nc := controllerstest.NodeClaim("vanished", "team-a")
	env.Create(nc)
	env.Eventually("launch", func() (bool, error) {
		if err := env.Get(nc); err != nil {
			return false, err
		}
		return nc.IsTrue(karpv1.ConditionTypeLaunched), nil
	})
	// The sweep reads the manager's cache: it must have seen the launch
	// (on a loaded machine it can lag the API server by seconds).
	env.Eventually("the cache to see the launch", func() (bool, error) {
		cached := &karpv1.NodeClaim{}
		if err := env.Manager.GetClient().Get(context.Background(), client.ObjectKeyFromObject(nc), cached); err != nil {
			return false, err
		}
		return cached.IsTrue(karpv1.ConditionTypeLaunched) && cached.Status.ProviderID != "", nil
	})
	// The instance dies behind dovetail's back (say, terminated in the console).
	if err := env.Cloud.CloudProvider.Delete(context.Background(), nc); err != nil {
		t.Fatal(err)
	}
	sweep()
	env.Eventually("the NodeClaim to be gone", func() (bool, error) { return env.NotFound(nc) })
	env.EventuallyEventAbout(nc, garbagecollection.ReasonInstanceGone)
	if v := metricstest.Value(t, env.Metrics.GarbageCollected.WithLabelValues(garbagecollection.KindNodeClaim)); v != 1 {
		t.Errorf("nodeclaims collected = %v", v)
	}
}

func TestManagedNodesWithoutNodeClaimAreDeleted(t *testing.T) {
	env, sweep := setup(t)
	mk := func(name string, labels map[string]string) *corev1.Node {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-" + name, Labels: labels},
			Spec:       corev1.NodeSpec{ProviderID: "fake:///" + controllerstest.ZoneA + "/" + name},
		}
		env.Create(n)
		return n
	}
	orphan := mk("orphan", map[string]string{karpv1.NodePoolLabelKey: "team-a"})
	unmanaged := mk("unmanaged", map[string]string{"example.com/group": "static"})

	sweep()
	controllerstest.Consistently(t, 300*time.Millisecond, "nodes to survive the grace period", func() (bool, error) {
		ok1, err1 := env.NotFound(orphan)
		ok2, err2 := env.NotFound(unmanaged)
		return !ok1 && !ok2 && err1 == nil && err2 == nil, nil
	})
	env.Clock.Step(garbagecollection.DefaultGracePeriod + time.Second)
	sweep()
	env.Eventually("the orphan node to be gone", func() (bool, error) { return env.NotFound(orphan) })
	if ok, err := env.NotFound(unmanaged); ok || err != nil {
		t.Fatalf("unmanaged node deleted (%v, %v)", ok, err)
	}
	env.EventuallyEventAbout(orphan, garbagecollection.ReasonNoNodeClaim)
}

func TestTheSweepRunsPeriodicallyInTheManager(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	env.Start(garbagecollection.NewController(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), env.Metrics,
		garbagecollection.Options{Interval: 100 * time.Millisecond}))
	env.Eventually("three sweeps", func() (bool, error) { return env.Cloud.Calls("List") >= 3, nil })
}

// lagging is a cache that has not heard of any NodeClaim yet, as a watch
// behind a loaded API server can be for longer than the grace period.
type lagging struct{ client.Client }

func (l lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if ncs, ok := list.(*karpv1.NodeClaimList); ok {
		ncs.Items = nil
		return nil
	}
	return l.Client.List(ctx, list, opts...)
}

func TestALaggingCacheNeverCostsALiveInstanceOrNode(t *testing.T) {
	env, _ := setup(t)
	live := controllerstest.NodeClaim("live", "team-a")
	env.Create(live)
	env.Eventually("live to launch", func() (bool, error) {
		if err := env.Get(live); err != nil {
			return false, err
		}
		return live.IsTrue(karpv1.ConditionTypeLaunched) && live.Status.ProviderID != "", nil
	})
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-live", Labels: map[string]string{karpv1.NodePoolLabelKey: "team-a"}},
		Spec:       corev1.NodeSpec{ProviderID: live.Status.ProviderID},
	}
	env.Create(node)
	// An instance no NodeClaim owns, to show the sweep still works.
	if _, err := env.Cloud.Create(context.Background(), &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: "leaked", CreationTimestamp: metav1.NewTime(env.Clock.Now()),
	}}); err != nil {
		t.Fatal(err)
	}
	gc := garbagecollection.NewController(lagging{env.Manager.GetClient()}, env.Cloud, env.Clock, env.Recorder(), env.Metrics,
		garbagecollection.Options{Live: env.Manager.GetAPIReader()})
	// Past the grace period of both instances (the live one was launched
	// at its NodeClaim's creation, on the wall clock).
	env.Clock.SetTime(live.CreationTimestamp.Add(garbagecollection.DefaultGracePeriod + time.Second))
	if _, err := gc.Reconcile(context.Background(), singleton.Request(gc.Name())); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	insts := env.Cloud.Instances()
	if len(insts) != 1 || insts[0].Status.ProviderID != live.Status.ProviderID {
		t.Fatalf("instances after the sweep %v, want only the live NodeClaim's %s", insts, live.Status.ProviderID)
	}
	if ok, err := env.NotFound(node); ok || err != nil {
		t.Fatalf("the live NodeClaim's node was deleted (%v, %v)", ok, err)
	}
	if ok, err := env.NotFound(live); ok || err != nil {
		t.Fatalf("the live NodeClaim was deleted (%v, %v)", ok, err)
	}
}
