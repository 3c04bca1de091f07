package static_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	nodetermination "github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/readiness"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/controllers/static"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/requirements/apireq"
)

type fixture struct {
	t   *testing.T
	env *controllerstest.Env
	np  *karpv1.NodePool
	ns  string
}

func newNodeClaim(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string) *karpv1.NodeClaim {
	return provisioning.NewNodeClaim(np, planned, types, reason, 0)
}

// setup runs readiness (StaticCapacity on), the NodeClaim lifecycle and
// termination controllers, the simulated kubelet and, unless manual, the
// static controller; it creates a Ready node class and the static pool.
func setup(t *testing.T, manual bool, mutate func(*karpv1.NodePool)) *fixture {
	return setupWith(t, manual, static.Options{}, mutate)
}

// setupWith is setup with the static controller's options.
func setupWith(t *testing.T, manual bool, opts static.Options, mutate func(*karpv1.NodePool)) *fixture {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	class := controllerstest.EC2NodeClass("default")
	env.Create(class)
	for _, c := range awsv1.ReadyDependents {
		class.SetCondition(c, metav1.ConditionTrue, "Resolved", "", env.Clock.Now())
	}
	if err := env.Client.Status().Update(env.Context(), class); err != nil {
		t.Fatal(err)
	}
	ctrls := []controllerstest.Controller{
		readiness.NewController(kube, env.Clock, readiness.Options{StaticCapacity: true}),
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable,
			lifecycle.Options{LaunchTimeout: 24 * time.Hour, RegistrationTimeout: 24 * time.Hour}),
		nctermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		nodetermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, nodetermination.Options{}),
	}
	if !manual {
		ctrls = append(ctrls, static.New(kube, env.Manager.GetAPIReader(), env.Cloud, env.Clock, env.Recorder(), env.Unavailable, newNodeClaim, opts))
	}
	env.Start(ctrls...)
	env.StartKubelet(controllerstest.KubeletOptions{})
	np := controllerstest.NodePool(env.Prefix)
	np.Spec.Replicas = ptr.To(int64(0))
	if mutate != nil {
		mutate(np)
	}
	env.Create(np)
	env.Eventually("pool Ready", func() (bool, error) {
		err := env.Get(np)
		return np.IsTrue(karpv1.ConditionTypeReady), err
	})
	return &fixture{t: t, env: env, np: np, ns: env.Namespace()}
}

// claims lists the pool's NodeClaims from the API server: all, and those
// not being deleted.
func (f *fixture) claims() (all, active []karpv1.NodeClaim) {
	f.t.Helper()
	var list karpv1.NodeClaimList
	if err := f.env.Client.List(f.env.Context(), &list, client.MatchingLabels{karpv1.NodePoolLabelKey: f.np.Name}); err != nil {
		f.t.Fatal(err)
	}
	for _, nc := range list.Items {
		if nc.DeletionTimestamp.IsZero() {
			active = append(active, nc)
		}
	}
	return list.Items, active
}

// settled waits until the pool has exactly n NodeClaims, none deleting,
// all initialized, and returns them sorted by name.
func (f *fixture) settled(n int) []karpv1.NodeClaim {
	f.t.Helper()
	var out []karpv1.NodeClaim
	f.env.Eventually(fmt.Sprintf("%d initialized NodeClaims and no others", n), func() (bool, error) {
		all, active := f.claims()
		if len(all) != n || len(active) != n {
			return false, fmt.Errorf("%d NodeClaims, %d active", len(all), len(active))
		}
		for _, nc := range active {
			if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
				return false, fmt.Errorf("%s not initialized", nc.Name)
			}
		}
		out = active
		return true, nil
	})
	slices.SortFunc(out, func(a, b karpv1.NodeClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// scale sets spec.replicas through the scale subresource, as kubectl scale.
func (f *fixture) scale(n int32) {
	f.t.Helper()
	// The status writers (readiness) change the resource version: read
	// and write again on a conflict, as kubectl scale's user would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc := &autoscalingv1.Scale{}
		if err := f.env.Client.SubResource("scale").Get(f.env.Context(), f.np, sc); err != nil {
			return err
		}
		sc.Spec.Replicas = n
		return f.env.Client.SubResource("scale").Update(f.env.Context(), f.np, client.WithSubResourceBody(sc))
	})
	if err != nil {
		f.t.Fatalf("scaling to %d: %v", n, err)
	}
}

// watchCount follows the pool's NodeClaims through a watch and reports
// the most that existed at once (deleting ones included).
func (f *fixture) watchCount() (peak func() int) {
	f.t.Helper()
	wc, err := client.NewWithWatch(cp.RESTConfig(), client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		f.t.Fatal(err)
	}
	w, err := wc.Watch(f.env.Context(), &karpv1.NodeClaimList{}, client.MatchingLabels{karpv1.NodePoolLabelKey: f.np.Name})
	if err != nil {
		f.t.Fatal(err)
	}
	var mu sync.Mutex
	live, max := map[string]bool{}, 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			nc, ok := ev.Object.(*karpv1.NodeClaim)
			if !ok {
				continue
			}
			mu.Lock()
			switch ev.Type {
			case watch.Added, watch.Modified:
				live[nc.Name] = true
			case watch.Deleted:
				delete(live, nc.Name)
			}
			max = maxInt(max, len(live))
			mu.Unlock()
		}
	}()
	f.t.Cleanup(func() { w.Stop(); <-done })
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return max
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// kubectl scale up to N: exactly N NodeClaims, owned by the pool, each
// with every type the pool allows; then up again through the subresource.
func TestScaleUpToReplicas(t *testing.T) {
	f := setup(t, false, nil)
	peak := f.watchCount()
	f.scale(3)
	got := f.settled(3)
	for _, nc := range got {
		if len(nc.OwnerReferences) != 1 || nc.OwnerReferences[0].Kind != "NodePool" || nc.OwnerReferences[0].UID != f.np.UID {
			t.Errorf("%s owners %v, want the NodePool", nc.Name, nc.OwnerReferences)
		}
		if nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey] != static.CreationReason {
			t.Errorf("%s creation reason %q", nc.Name, nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey])
		}
	}
	controllerstest.Consistently(t, 2*time.Second, "3 NodeClaims stay 3", func() (bool, error) {
		all, _ := f.claims()
		return len(all) == 3, nil
	})
	f.scale(5)
	f.settled(5)
	if p := peak(); p != 5 {
		t.Errorf("at most %d NodeClaims existed at once, want 5", p)
	}
	if n := len(f.env.Cloud.Instances()); n != 5 {
		t.Errorf("%d instances, want 5", n)
	}
}

// Scale down: empty nodes go first, then the cheapest to disrupt, and a
// node with a do-not-disrupt pod last.
func TestScaleDownRemovesEmptyFirst(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(5)) })
	ncs := f.settled(5)
	busy, kept := ncs[0], ncs[1]
	for i, nc := range []karpv1.NodeClaim{busy, kept} {
		p := controllerstest.Pod(f.ns, fmt.Sprintf("pod-%d", i), nc.Status.NodeName)
		if nc.Name == kept.Name {
			p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
		}
		f.env.Create(p)
		f.env.Eventually("pod running", func() (bool, error) {
			err := f.env.Get(p)
			return p.Status.Phase == corev1.PodRunning, err
		})
	}
	f.scale(2)
	left := f.settled(2)
	if names := []string{left[0].Name, left[1].Name}; !slices.Contains(names, busy.Name) || !slices.Contains(names, kept.Name) {
		t.Fatalf("kept %v, want the two nodes with pods %s and %s", names, busy.Name, kept.Name)
	}
	f.scale(1)
	left = f.settled(1)
	if left[0].Name != kept.Name {
		t.Fatalf("kept %s, want %s (its pod is do-not-disrupt)", left[0].Name, kept.Name)
	}
	if n := len(f.env.Cloud.Instances()); n != 1 {
		t.Errorf("%d instances left, want 1", n)
	}
}

// limits.nodes is never overshot, even while replicas change quickly and
// deleting NodeClaims are still around.
func TestLimitNeverOvershot(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceName("nodes"): resource.MustParse("3")}
	})
	peak := f.watchCount()
	f.scale(5)
	f.settled(3)
	f.env.EventuallyEventAbout(f.np, static.ReasonLimitReached)
	for _, n := range []int32{1, 6, 0, 4, 2, 7} {
		f.scale(n)
	}
	f.settled(3)
	if p := peak(); p > 3 {
		t.Fatalf("%d NodeClaims existed at once, limits.nodes is 3", p)
	}
	f.scale(0)
	f.settled(0)
	if p := peak(); p > 3 {
		t.Fatalf("%d NodeClaims existed at once, limits.nodes is 3", p)
	}
}

// Static nodes are not consolidated: a disruption pass leaves the empty
// nodes of a static pool, while it removes an empty node of a dynamic pool.
func TestStaticNodesNotConsolidated(t *testing.T) {
	f := setup(t, false, func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(2)) })
	ncs := f.settled(2)
	dyn := controllerstest.NodePool(f.env.Prefix + "-dyn")
	f.env.Create(dyn)
	// The readiness controller of the fixture makes it Ready.
	f.env.Eventually("the dynamic pool Ready", func() (bool, error) {
		err := f.env.Get(dyn)
		return dyn.IsTrue(karpv1.ConditionTypeReady), err
	})
	loose := controllerstest.NodeClaim(f.env.Prefix+"-loose", dyn.Name)
	f.env.Create(loose)
	f.env.Eventually("the dynamic node initialized", func() (bool, error) {
		err := f.env.Get(loose)
		return loose.IsTrue(karpv1.ConditionTypeInitialized), err
	})

	c := disruption.New(f.env.Client, f.env.Cloud, f.env.Clock, f.env.Recorder(), f.env.Metrics, f.env.Unavailable, newNodeClaim, disruption.Options{})
	pass := func() {
		if _, err := c.Pass(context.Background()); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	pass()
	f.env.Clock.Step(disruption.DefaultValidationPeriod)
	pass()
	pass()
	f.env.Eventually("the dynamic pool's empty node consolidated", func() (bool, error) { return f.env.NotFound(loose) })
	for i := range ncs {
		nc := &ncs[i]
		if err := f.env.Get(nc); err != nil || !nc.DeletionTimestamp.IsZero() || nc.Annotations[disruption.CommandAnnotationKey] != "" {
			t.Fatalf("static NodeClaim %s disrupted (err %v)", nc.Name, err)
		}
	}
	f.settled(2)
}

// With the NodeOverlay gate on, a static pool's NodeClaim is planned at the
// overlaid prices, as provisioning's: an overlay that makes g4dn.xlarge
// the cheapest puts it first among the options, where m5.large (the
// cloud's cheapest) was before the overlay.
func TestStaticUsesOverlays(t *testing.T) {
	f := setupWith(t, false, static.Options{NodeOverlays: true}, nil)
	firstOption := func(nc karpv1.NodeClaim) string {
		vs, _ := apireq.OrderedValues(nc.Spec.Requirements, corev1.LabelInstanceTypeStable)
		if len(vs) == 0 {
			return ""
		}
		return vs[0]
	}
	f.scale(1)
	before := f.settled(1)
	if got := firstOption(before[0]); got != "m5.large" {
		t.Fatalf("without an overlay the first option is %q, want the cloud's cheapest m5.large", got)
	}
	no := &karpv1alpha1.NodeOverlay{ObjectMeta: metav1.ObjectMeta{Name: f.np.Name + "-gpu-cheap"},
		Spec: karpv1alpha1.NodeOverlaySpec{Price: ptr.To("0.001"), Requirements: []karpv1alpha1.NodeSelectorRequirement{
			{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{f.np.Name}},
			{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"g4dn.xlarge"}}}}}
	f.env.Create(no)
	t.Cleanup(func() { _ = f.env.Client.Delete(context.Background(), no) })
	f.scale(2)
	got := f.settled(2)
	for _, nc := range got {
		if nc.Name == before[0].Name {
			continue
		}
		if first := firstOption(nc); first != "g4dn.xlarge" {
			t.Errorf("with the overlay the new NodeClaim's first option is %q, want g4dn.xlarge", first)
		}
	}
}
