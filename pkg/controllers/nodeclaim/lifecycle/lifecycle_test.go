package lifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
)

func start(t *testing.T, opts lifecycle.Options) (*controllerstest.Env, *lifecycle.Controller) {
	env := controllerstest.New(t, cp.RESTConfig())
	c := lifecycle.NewController(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable, opts)
	env.Start(c)
	return env, c
}

func get(t *testing.T, env *controllerstest.Env, name string) *karpv1.NodeClaim {
	t.Helper()
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Get(nc); err != nil {
		t.Fatal(err)
	}
	return nc
}

func waitCondition(t *testing.T, env *controllerstest.Env, name, cond string, status metav1.ConditionStatus) *karpv1.NodeClaim {
	t.Helper()
	var nc *karpv1.NodeClaim
	env.Eventually(fmt.Sprintf("%s %s=%s", name, cond, status), func() (bool, error) {
		nc = &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Get(nc); err != nil {
			return false, err
		}
		c := nc.GetCondition(cond)
		if c == nil || c.Status != status {
			return false, fmt.Errorf("conditions %+v", nc.Status.Conditions)
		}
		return true, nil
	})
	return nc
}

func TestLaunchRegisterInitialize(t *testing.T) {
	env, _ := start(t, lifecycle.Options{})
	env.StartKubelet(controllerstest.KubeletOptions{})
	pool := controllerstest.NodePool("team-a")
	env.Create(pool)

	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	userTaint := corev1.Taint{Key: "dedicated", Value: "team-a", Effect: corev1.TaintEffectNoSchedule}
	nc := controllerstest.NodeClaim("launch", pool.Name)
	nc.Labels["team"] = "a"
	nc.Annotations = map[string]string{"example.com/owner": "platform"}
	nc.Spec.Taints = []corev1.Taint{userTaint}
	nc.Spec.StartupTaints = []corev1.Taint{startup}
	env.Create(nc)

	got := waitCondition(t, env, nc.Name, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)

	// Launch: the cheapest allowed offering is m5.large on-demand in zone A.
	want := map[string]string{
		corev1.LabelInstanceTypeStable: "m5.large",
		corev1.LabelTopologyZone:       controllerstest.ZoneA,
		karpv1.CapacityTypeLabelKey:    karpv1.CapacityTypeOnDemand,
		"team":                         "a",
	}
	for k, v := range want {
		if got.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
		}
	}
	if !slices.Contains(got.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("finalizers %v lack %s", got.Finalizers, karpv1.TerminationFinalizer)
	}
	if p, ok := nodeclaimutil.HourlyPrice(got); !ok || p != 0.096 {
		t.Errorf("price annotation = %v (%v), want 0.096 (m5.large on-demand in zone A)", p, ok)
	}
	if it, zone, ct, ok := nodeclaimutil.Offering(got); !ok || it != "m5.large" || zone != controllerstest.ZoneA || ct != karpv1.CapacityTypeOnDemand {
		t.Errorf("offering annotation = %q, want m5.large/%s/on-demand", got.Annotations[karpv1.AnnotationOffering], controllerstest.ZoneA)
	}
	if got.Annotations[karpv1.NodePoolHashAnnotationKey] != nodepoolhash.Hash(pool) || got.Annotations[karpv1.NodePoolHashVersionAnnotationKey] != nodepoolhash.Version {
		t.Errorf("hash annotations = %q/%q, want %q/%q", got.Annotations[karpv1.NodePoolHashAnnotationKey],
			got.Annotations[karpv1.NodePoolHashVersionAnnotationKey], nodepoolhash.Hash(pool), nodepoolhash.Version)
	}
	insts := env.Cloud.Instances()
	if len(insts) != 1 || insts[0].Status.ProviderID != got.Status.ProviderID {
		t.Fatalf("cloud instances %d, NodeClaim providerID %q", len(insts), got.Status.ProviderID)
	}
	if cpu := got.Status.Capacity[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("2")) != 0 {
		t.Errorf("capacity cpu = %s, want 2", cpu.String())
	}
	if mem := got.Status.Allocatable[corev1.ResourceMemory]; mem.Cmp(resource.MustParse("7592Mi")) != 0 {
		t.Errorf("allocatable memory = %s, want 8Gi-600Mi", mem.String())
	}

	// Registration: the node is dovetail's.
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: got.Status.NodeName}}
	if err := env.Get(node); err != nil {
		t.Fatalf("status.nodeName %q: %v", got.Status.NodeName, err)
	}
	if node.Spec.ProviderID != got.Status.ProviderID {
		t.Fatalf("node %s has providerID %s", node.Name, node.Spec.ProviderID)
	}
	for k, v := range map[string]string{karpv1.NodeRegisteredLabelKey: "true", "team": "a", karpv1.NodePoolLabelKey: pool.Name} {
		if node.Labels[k] != v {
			t.Errorf("node label %s = %q, want %q", k, node.Labels[k], v)
		}
	}
	if node.Annotations["example.com/owner"] != "platform" {
		t.Errorf("node annotations %v lack the NodeClaim's", node.Annotations)
	}
	if !slices.Contains(node.Finalizers, karpv1.TerminationFinalizer) {
		t.Errorf("node finalizers %v", node.Finalizers)
	}
	if refs := node.OwnerReferences; len(refs) != 1 || refs[0].UID != got.UID || refs[0].Kind != "NodeClaim" ||
		refs[0].APIVersion != "karpenter.sh/v1" || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
		t.Errorf("node owner references %+v, want the NodeClaim with blockOwnerDeletion (as the peer writes it)", node.OwnerReferences)
	}
	keys := taintKeys(node)
	if hasTaint(node, karpv1.UnregisteredNoExecuteTaint) || !slices.Contains(keys, userTaint.Key) || !slices.Contains(keys, startup.Key) {
		t.Errorf("node taints %v: want %s and %s, not %v", node.Spec.Taints, userTaint.Key, startup.Key, karpv1.UnregisteredNoExecuteTaint)
	}
	// With no hold, the NoSchedule taint that replaced the NoExecute one
	// goes in the next reconcile.
	env.Eventually("no unregistered taint", func() (bool, error) {
		if err := env.Get(node); err != nil {
			return false, err
		}
		return !slices.Contains(taintKeys(node), karpv1.UnregisteredTaintKey), nil
	})

	// Initialization waits for the startup taint.
	env.Eventually("Initialized=Unknown/StartupTaintsExist once the node is Ready", func() (bool, error) {
		got = get(t, env, nc.Name)
		c := got.GetCondition(karpv1.ConditionTypeInitialized)
		return c != nil && c.Status == metav1.ConditionUnknown && c.Reason == lifecycle.ReasonStartupTaintsExist, nil
	})
	if got.IsTrue(karpv1.ConditionTypeReady) {
		t.Error("Ready before initialization")
	}
	removeTaint(t, env, node.Name, startup.Key)
	got = waitCondition(t, env, nc.Name, karpv1.ConditionTypeReady, metav1.ConditionTrue)
	if !got.IsTrue(karpv1.ConditionTypeInitialized) || !got.IsTrue(karpv1.ConditionTypeLaunched) {
		t.Errorf("Ready without Launched and Initialized: %v", got.Status.Conditions)
	}
	env.Eventually("initialized label", func() (bool, error) {
		if err := env.Get(node); err != nil {
			return false, err
		}
		return node.Labels[karpv1.NodeInitializedLabelKey] == "true", nil
	})
	// The startup taint is not put back after initialization.
	if slices.Contains(taintKeys(node), startup.Key) {
		t.Error("startup taint came back")
	}

	env.EventuallyEventAbout(nc, lifecycle.ReasonLaunched)
	env.EventuallyEventAbout(nc, lifecycle.ReasonRegistered)
	for name, v := range map[string]float64{
		"nodeclaims_created": metricstest.Value(t, env.Metrics.NodeClaimsCreated.WithLabelValues("provisioning", pool.Name, "false")),
		"registered":         metricstest.Value(t, env.Metrics.NodeClaimsRegistered.WithLabelValues(pool.Name)),
		"nodes_created":      metricstest.Value(t, env.Metrics.NodesCreated.WithLabelValues(pool.Name, controllerstest.ZoneA)),
	} {
		if v != 1 {
			t.Errorf("%s = %v, want 1", name, v)
		}
	}
	if n := env.Cloud.Calls("Create"); n != 1 {
		t.Errorf("Create called %d times, want 1", n)
	}
}

func taintKeys(node *corev1.Node) []string {
	var keys []string
	for _, t := range node.Spec.Taints {
		keys = append(keys, t.Key)
	}
	return keys
}

func hasTaint(node *corev1.Node, t corev1.Taint) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

// TestRegistrationHoldsScheduling: registration turns the unregistered
// taint from NoExecute into NoSchedule, so no NoExecute taint is removed
// while pods can be bound; the NoSchedule one goes once Registered has been
// True for the hold, and only then is the NodeClaim Initialized.
func TestRegistrationHoldsScheduling(t *testing.T) {
	const hold = time.Minute
	env, c := start(t, lifecycle.Options{RegistrationHold: hold})
	env.StartKubelet(controllerstest.KubeletOptions{})
	env.Create(controllerstest.NodePool("team-a"))
	nc := controllerstest.NodeClaim("held", "team-a")
	env.Create(nc)

	got := waitCondition(t, env, nc.Name, karpv1.ConditionTypeRegistered, metav1.ConditionTrue)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: got.Status.NodeName}}
	env.Eventually("the hold taint in place of the NoExecute one", func() (bool, error) {
		if err := env.Get(node); err != nil {
			return false, err
		}
		held := corev1.Taint{Key: karpv1.UnregisteredTaintKey, Effect: corev1.TaintEffectNoSchedule}
		if hasTaint(node, held) && !hasTaint(node, karpv1.UnregisteredNoExecuteTaint) {
			return true, nil
		}
		return false, fmt.Errorf("taints %v", node.Spec.Taints)
	})
	env.Eventually("Initialized=Unknown/StartupTaintsExist while held", func() (bool, error) {
		got = get(t, env, nc.Name)
		c := got.GetCondition(karpv1.ConditionTypeInitialized)
		if c != nil && c.Status == metav1.ConditionUnknown && c.Reason == lifecycle.ReasonStartupTaintsExist {
			return true, nil
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	// A reconcile before the hold has passed leaves the taint and asks to
	// look again when it ends.
	env.Clock.Step(hold - time.Second)
	req := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(got)}
	res, err := c.Reconcile(env.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Get(node); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(taintKeys(node), karpv1.UnregisteredTaintKey) {
		t.Fatalf("hold lifted a second early: taints %v", node.Spec.Taints)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > time.Second {
		t.Errorf("RequeueAfter %v, want the second left of the hold", res.RequeueAfter)
	}
	env.Clock.Step(time.Second)
	env.Eventually("the hold lifted once it has passed", func() (bool, error) {
		if _, err := c.Reconcile(env.Context(), req); err != nil {
			return false, err
		}
		if err := env.Get(node); err != nil {
			return false, err
		}
		if !slices.Contains(taintKeys(node), karpv1.UnregisteredTaintKey) {
			return true, nil
		}
		return false, fmt.Errorf("taints %v", node.Spec.Taints)
	})
	got = waitCondition(t, env, nc.Name, karpv1.ConditionTypeReady, metav1.ConditionTrue)
	if err := env.Get(node); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(taintKeys(node), karpv1.UnregisteredTaintKey) {
		t.Errorf("Ready with taints %v", node.Spec.Taints)
	}
}

func removeTaint(t *testing.T, env *controllerstest.Env, nodeName, key string) {
	t.Helper()
	// The controller patches the node too (labels, taints): on a conflict,
	// read it again and retry, as a DaemonSet removing its taint would.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
		if err := env.Get(node); err != nil {
			return err
		}
		base := node.DeepCopy()
		node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(x corev1.Taint) bool { return x.Key == key })
		return env.Client.Patch(env.Context(), node, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestInsufficientCapacityRecordsOfferingsAndDeletesTheNodeClaim(t *testing.T) {
	env, _ := start(t, lifecycle.Options{})
	refused := []cloudprovider.OfferingKey{
		{InstanceType: "m5.large", Zone: controllerstest.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand},
		{InstanceType: "m5.large", Zone: controllerstest.ZoneB, CapacityType: karpv1.CapacityTypeOnDemand},
	}
	for _, k := range refused {
		env.Cloud.SetInsufficientCapacity(k, true)
	}
	nc := controllerstest.NodeClaim("ice", "team-a")
	env.Create(nc)

	env.Eventually("the NodeClaim to be deleted", func() (bool, error) {
		got := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}}
		if err := env.Get(got); err != nil {
			return false, err
		}
		return !got.DeletionTimestamp.IsZero(), nil
	})
	for _, k := range refused {
		if !env.Unavailable.IsUnavailable(k) {
			t.Errorf("%s not recorded as unavailable", k)
		}
	}
	other := cloudprovider.OfferingKey{InstanceType: "c5.xlarge", Zone: controllerstest.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand}
	if env.Unavailable.IsUnavailable(other) {
		t.Errorf("%s recorded though never refused", other)
	}
	ev := env.EventuallyEventAbout(nc, lifecycle.ReasonInsufficientCapacity)
	if ev.Type != corev1.EventTypeWarning {
		t.Errorf("event type %s", ev.Type)
	}
	if v := metricstest.Value(t, env.Metrics.NodeClaimsInsufficientCapacity.WithLabelValues("team-a")); v != 1 {
		t.Errorf("insufficient capacity metric = %v", v)
	}
	// Three minutes later the offerings are available again.
	env.Clock.Step(3 * time.Minute)
	if env.Unavailable.IsUnavailable(refused[0]) {
		t.Error("offering still unavailable after the TTL")
	}
	if len(env.Cloud.Instances()) != 0 {
		t.Error("an instance was launched")
	}
}

func TestLaunchErrorSetsConditionAndRetriesWithBackoff(t *testing.T) {
	env, _ := start(t, lifecycle.Options{})
	env.Cloud.FailNext("Create",
		&cloudprovider.CreateError{Reason: "UnauthorizedOperation", Err: fmt.Errorf("not allowed to launch")},
		&cloudprovider.NodeClassNotReadyError{NodeClass: "default"},
	)
	nc := controllerstest.NodeClaim("retry", "team-a")
	env.Create(nc)

	env.EventuallyEventAbout(nc, lifecycle.ReasonLaunchFailed)
	got := waitCondition(t, env, nc.Name, karpv1.ConditionTypeLaunched, metav1.ConditionTrue)
	if n := env.Cloud.Calls("Create"); n != 3 {
		t.Errorf("Create called %d times, want 3 (two failures, one success)", n)
	}
	if got.Status.ProviderID == "" || len(env.Cloud.Instances()) != 1 {
		t.Errorf("providerID %q, %d instances", got.Status.ProviderID, len(env.Cloud.Instances()))
	}
	reasons := map[string]bool{}
	for _, ev := range env.EventsAbout(nc) {
		if ev.Reason == lifecycle.ReasonLaunchFailed {
			reasons[ev.Note] = true
		}
	}
	if len(reasons) == 0 {
		t.Error("no LaunchFailed event")
	}
}

func TestLivenessDeletesNodeClaimsThatDoNotProgress(t *testing.T) {
	tests := []struct {
		name     string
		failures int // Create failures to inject (the launch never succeeds when large)
		step     time.Duration
		phase    string
		reason   string
		deleted  bool
	}{
		{"registration timeout", 0, lifecycle.DefaultRegistrationTimeout + time.Second, lifecycle.PhaseRegistration, lifecycle.ReasonRegistrationTimeout, true},
		{"not yet registration timeout", 0, lifecycle.DefaultRegistrationTimeout - time.Minute, lifecycle.PhaseRegistration, "", false},
		{"launch timeout", 1000, lifecycle.DefaultLaunchTimeout + time.Second, lifecycle.PhaseLaunch, lifecycle.ReasonLaunchTimeout, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, c := start(t, lifecycle.Options{})
			// No kubelet: the node never registers.
			errs := make([]error, tt.failures)
			for i := range errs {
				errs[i] = &cloudprovider.CreateError{Reason: "Boom"}
			}
			env.Cloud.FailNext("Create", errs...)
			nc := controllerstest.NodeClaim("live", "team-a")
			env.Create(nc)
			want := metav1.ConditionTrue
			if tt.failures > 0 {
				want = metav1.ConditionFalse
			}
			waitCondition(t, env, nc.Name, karpv1.ConditionTypeLaunched, want)
			// The hand-driven reconcile reads the manager's cache: wait
			// until it has caught up with the API server.
			env.Eventually("the cache to catch up", func() (bool, error) {
				live, cached := get(t, env, nc.Name), &karpv1.NodeClaim{}
				if err := env.Manager.GetClient().Get(env.Context(), client.ObjectKeyFromObject(nc), cached); err != nil {
					return false, err
				}
				if cached.ResourceVersion != live.ResourceVersion {
					return false, fmt.Errorf("cache at %s, API server at %s", cached.ResourceVersion, live.ResourceVersion)
				}
				return true, nil
			})

			env.Clock.Step(tt.step)
			// Requeues run on the wall clock; drive the reconcile by hand.
			if _, err := c.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(nc)}); err != nil && tt.failures == 0 {
				t.Fatal(err)
			}
			got := get(t, env, nc.Name)
			if deleted := !got.DeletionTimestamp.IsZero(); deleted != tt.deleted {
				t.Fatalf("deleted = %v, want %v", deleted, tt.deleted)
			}
			if !tt.deleted {
				return
			}
			env.EventuallyEventAbout(nc, tt.reason)
			if v := metricstest.Value(t, env.Metrics.NodeClaimsLivenessTimeouts.WithLabelValues("team-a", tt.phase)); v != 1 {
				t.Errorf("liveness metric = %v, want 1", v)
			}
		})
	}
}

func TestInitializationWaitsForRequestedResources(t *testing.T) {
	tests := []struct {
		name     string
		resource corev1.ResourceName
		ready    bool
	}{
		{"GPU the node reports", "nvidia.com/gpu", true},
		{"device the node never reports", "example.com/fpga", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _ := start(t, lifecycle.Options{})
			env.StartKubelet(controllerstest.KubeletOptions{})
			nc := controllerstest.NodeClaim("gpu", "team-a", controllerstest.Requirement(corev1.LabelInstanceTypeStable, "g4dn.xlarge"))
			nc.Spec.Resources.Requests = corev1.ResourceList{tt.resource: resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1")}
			env.Create(nc)
			if tt.ready {
				waitCondition(t, env, nc.Name, karpv1.ConditionTypeInitialized, metav1.ConditionTrue)
				return
			}
			got := waitCondition(t, env, nc.Name, karpv1.ConditionTypeInitialized, metav1.ConditionUnknown)
			env.Eventually("reason ResourceNotRegistered", func() (bool, error) {
				got = get(t, env, nc.Name)
				c := got.GetCondition(karpv1.ConditionTypeInitialized)
				return c != nil && c.Reason == lifecycle.ReasonResourceNotRegistered, nil
			})
			if got.IsTrue(karpv1.ConditionTypeReady) {
				t.Error("Ready without the requested resource")
			}
		})
	}
}
