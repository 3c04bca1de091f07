package provisioning_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash"
)

type fixture struct {
	t    *testing.T
	env  *controllerstest.Env
	prov *provisioning.Provisioner
	m    *provisioning.Metrics
	ns   string
}

// setup starts a provisioner (and, with lifecycle, the NodeClaim lifecycle
// controller and the simulated kubelet), and the extra controllers, on the
// test cluster.
func setup(t *testing.T, opts provisioning.Options, withLifecycle bool, extra ...func(*controllerstest.Env) controllerstest.Controller) *fixture {
	env := controllerstest.New(t, cp.RESTConfig())
	m, err := provisioning.NewMetrics(env.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	p := provisioning.New(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), m, env.Unavailable, opts)
	ctrls := []controllerstest.Controller{p}
	if withLifecycle {
		ctrls = append(ctrls, lifecycle.NewController(env.Manager.GetClient(), env.Cloud, env.Clock, env.Recorder(), env.Metrics,
			env.Unavailable, lifecycle.Options{LaunchTimeout: 24 * time.Hour, RegistrationTimeout: 24 * time.Hour}))
	}
	for _, mk := range extra {
		ctrls = append(ctrls, mk(env))
	}
	env.Create(controllerstest.EC2NodeClass("default"))
	env.Start(ctrls...)
	if withLifecycle {
		env.StartKubelet(controllerstest.KubeletOptions{})
	}
	return &fixture{t: t, env: env, prov: p, m: m, ns: env.Namespace()}
}

// readyPool creates the NodePool and marks it Ready, as the NodePool status
// controller would.
func (f *fixture) readyPool(np *karpv1.NodePool) *karpv1.NodePool {
	f.t.Helper()
	f.env.Create(np)
	now := time.Now()
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
	if err := f.env.Client.Status().Update(f.env.Context(), np); err != nil {
		f.t.Fatalf("marking NodePool %s Ready: %v", np.Name, err)
	}
	return np
}

func pendingPod(ns, name, cpu, mem string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
				}},
			}},
		},
	}
}

// createPods creates n pods and waits until the scheduler has marked each
// of them unschedulable.
func (f *fixture) createPods(n int, prefix, cpu, mem string, mutate func(*corev1.Pod)) []*corev1.Pod {
	f.t.Helper()
	var pods []*corev1.Pod
	for i := range n {
		pod := pendingPod(f.ns, fmt.Sprintf("%s-%d", prefix, i), cpu, mem)
		if mutate != nil {
			mutate(pod)
		}
		f.env.Create(pod)
		pods = append(pods, pod)
	}
	f.waitUnschedulable(pods...)
	return pods
}

func (f *fixture) waitUnschedulable(pods ...*corev1.Pod) {
	f.t.Helper()
	f.env.Eventually("pods marked unschedulable by the kube-scheduler", func() (bool, error) {
		for _, pod := range pods {
			got := &corev1.Pod{}
			if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
				return false, err
			}
			if !provisioning.Provisionable(got) {
				return false, fmt.Errorf("pod %s not unschedulable yet: %+v", pod.Name, got.Status.Conditions)
			}
		}
		// The provisioner reads pods from the manager's cache.
		for _, pod := range pods {
			got := &corev1.Pod{}
			if err := f.env.Manager.GetClient().Get(f.env.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
				return false, err
			}
			if !provisioning.Provisionable(got) {
				return false, fmt.Errorf("cache: pod %s not unschedulable yet", pod.Name)
			}
		}
		return true, nil
	})
}

func (f *fixture) provision() *provisioning.Result {
	f.t.Helper()
	res, err := f.prov.Provision(f.env.Context())
	if err != nil {
		f.t.Fatalf("Provision: %v", err)
	}
	return res
}

func (f *fixture) nodeClaims() []karpv1.NodeClaim {
	f.t.Helper()
	var list karpv1.NodeClaimList
	if err := f.env.Client.List(f.env.Context(), &list); err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// ourEvents returns the events the provisioner recorded about exactly this
// pod or NodePool (by UID: a NodePool's events live in the default
// namespace and outlast it) with the reason (the kube-scheduler records
// FailedScheduling events too; those are not ours).
func (f *fixture) ourEvents(obj client.Object, reason string) []eventsv1.Event {
	var out []eventsv1.Event
	for _, ev := range f.env.EventsAbout(obj) {
		if ev.Reason == reason && ev.ReportingController != "default-scheduler" && ev.Action == "Provisioning" {
			out = append(out, ev)
		}
	}
	return out
}

func podRequests(pods []*corev1.Pod) (cpu, mem resource.Quantity) {
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			cpu.Add(c.Resources.Requests[corev1.ResourceCPU])
			mem.Add(c.Resources.Requests[corev1.ResourceMemory])
		}
	}
	return cpu, mem
}

func requirement(nc *karpv1.NodeClaim, key string) *karpv1.NodeSelectorRequirementWithMinValues {
	for i := range nc.Spec.Requirements {
		if nc.Spec.Requirements[i].Key == key {
			return &nc.Spec.Requirements[i]
		}
	}
	return nil
}

func TestNodeClaimFromTemplate(t *testing.T) {
	f := setup(t, provisioning.Options{}, false)
	team := corev1.Taint{Key: "team", Value: "b", Effect: corev1.TaintEffectNoSchedule}
	agent := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	np := controllerstest.NodePool("team-b")
	np.Spec.Template.Labels = map[string]string{"team": "b"}
	np.Spec.Template.Annotations = map[string]string{"example.com/owner": "team-b"}
	np.Spec.Template.Spec.Taints = []corev1.Taint{team}
	np.Spec.Template.Spec.StartupTaints = []corev1.Taint{agent}
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
	expire, err := karpv1.ParseNillableDuration("24h")
	if err != nil {
		t.Fatal(err)
	}
	np.Spec.Template.Spec.ExpireAfter = expire
	f.readyPool(np)

	pods := f.createPods(3, "b", "500m", "1Gi", func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"team": "b"}
		p.Spec.Tolerations = []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoSchedule}}
	})
	res := f.provision()
	if len(res.Created) == 0 || res.Pending != len(pods) {
		t.Fatalf("created %d NodeClaims for %d pending pods, want at least one for %d", len(res.Created), res.Pending, len(pods))
	}

	byName := map[string]*corev1.Pod{}
	for _, p := range pods {
		byName[p.Name] = p
	}
	planned := map[string]int{}
	for i, nc := range res.Created {
		got := &karpv1.NodeClaim{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(nc), got); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(got.Name, "team-b-") {
			t.Errorf("name %q does not start with the NodePool's name", got.Name)
		}
		for k, v := range map[string]string{"team": "b", karpv1.NodePoolLabelKey: "team-b"} {
			if got.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, got.Labels[k], v)
			}
		}
		if _, ok := got.Labels[corev1.LabelHostname]; ok {
			t.Errorf("NodeClaim carries a planned hostname label: %v", got.Labels)
		}
		for k, v := range nodepoolhash.Annotations(np) {
			if got.Annotations[k] != v {
				t.Errorf("annotation %s = %q, want %q", k, got.Annotations[k], v)
			}
		}
		if got.Annotations["example.com/owner"] != "team-b" || got.Annotations[nodeclaimutil.CreationReasonAnnotationKey] != provisioning.ReasonProvisioning {
			t.Errorf("annotations %v lack the template's or the creation reason", got.Annotations)
		}
		if !slices.Equal(got.Spec.Taints, []corev1.Taint{team}) || !slices.Equal(got.Spec.StartupTaints, []corev1.Taint{agent}) {
			t.Errorf("taints %v / startup %v", got.Spec.Taints, got.Spec.StartupTaints)
		}
		if got.Spec.NodeClassRef == nil || *got.Spec.NodeClassRef != *np.Spec.Template.Spec.NodeClassRef {
			t.Errorf("nodeClassRef %v", got.Spec.NodeClassRef)
		}
		if refs := got.OwnerReferences; len(refs) != 1 || refs[0].Kind != "NodePool" || refs[0].APIVersion != "karpenter.sh/v1" ||
			refs[0].Name != np.Name || refs[0].UID != np.UID || refs[0].BlockOwnerDeletion == nil || !*refs[0].BlockOwnerDeletion {
			t.Errorf("ownerReferences %+v, want the NodePool %s/%s with blockOwnerDeletion", refs, np.Name, np.UID)
		}
		if got.Spec.TerminationGracePeriod == nil || got.Spec.TerminationGracePeriod.Duration != time.Hour {
			t.Errorf("terminationGracePeriod %v", got.Spec.TerminationGracePeriod)
		}
		if d, ok := got.Spec.ExpireAfter.Duration(); !ok || d != 24*time.Hour {
			t.Errorf("expireAfter %v", got.Spec.ExpireAfter)
		}
		for key, want := range map[string]string{karpv1.NodePoolLabelKey: "team-b", "team": "b"} {
			r := requirement(got, key)
			if r == nil || r.Operator != corev1.NodeSelectorOpIn || !slices.Equal(r.Values, []string{want}) {
				t.Errorf("requirement %s = %+v, want In [%s]", key, r, want)
			}
		}
		// Every instance-type option must hold the pods planned onto it
		// (the test cloud's types, checked against the pods' requests).
		var onIt []*corev1.Pod
		for _, ref := range res.Plan.NodeClaims[i].Pods {
			onIt = append(onIt, byName[ref.Name])
			planned[ref.Name]++
		}
		cpu, mem := podRequests(onIt)
		if r := got.Spec.Resources.Requests[corev1.ResourceCPU]; r.Cmp(cpu) != 0 {
			t.Errorf("requests.cpu %s, want the pods' %s", r.String(), cpu.String())
		}
		if r := got.Spec.Resources.Requests[corev1.ResourceMemory]; r.Cmp(mem) != 0 {
			t.Errorf("requests.memory %s, want the pods' %s", r.String(), mem.String())
		}
		it := requirement(got, corev1.LabelInstanceTypeStable)
		if it == nil || len(it.Values) == 0 {
			t.Fatalf("no instance-type requirement: %+v", got.Spec.Requirements)
		}
		for _, name := range it.Values {
			var typ *cloudprovider.InstanceType
			for _, candidate := range controllerstest.InstanceTypes() {
				if candidate.Name == name {
					typ = candidate
				}
			}
			if typ == nil {
				t.Fatalf("option %s is not an instance type of the cloud", name)
			}
			alloc := typ.Allocatable()
			if c := alloc[corev1.ResourceCPU]; c.Cmp(cpu) < 0 {
				t.Errorf("option %s has %s CPU allocatable, less than the pods' %s", name, c.String(), cpu.String())
			}
		}
	}
	for _, p := range pods {
		if planned[p.Name] != 1 {
			t.Errorf("pod %s is planned onto %d NodeClaims, want 1", p.Name, planned[p.Name])
		}
		f.env.Eventually("Nominated event on "+p.Name, func() (bool, error) {
			evs := f.ourEvents(p, provisioning.ReasonNominated)
			return holds(len(evs) == 1 && strings.Contains(evs[0].Note, "team-b-"), "events %v", evs)
		})
	}

	// Deleting the NodePool deletes its NodeClaims through the API server's
	// garbage collector (kube-controller-manager), as with the peer.
	if err := f.env.Client.Delete(f.env.Context(), np); err != nil {
		t.Fatal(err)
	}
	f.env.Eventually("the NodePool's NodeClaims deleted with it", func() (bool, error) {
		var live []string
		for _, nc := range f.nodeClaims() {
			if nc.Labels[karpv1.NodePoolLabelKey] == np.Name && nc.DeletionTimestamp.IsZero() {
				live = append(live, nc.Name)
			}
		}
		return holds(len(live) == 0, "NodeClaims not being deleted: %v", live)
	})
}

func TestNoSecondLaunchForTheSamePods(t *testing.T) {
	f := setup(t, provisioning.Options{}, false)
	f.readyPool(controllerstest.NodePool("default"))
	pods := f.createPods(5, "web", "700m", "1Gi", nil)
	first := f.provision()
	if len(first.Created) == 0 {
		t.Fatal("no NodeClaim created")
	}
	if v := metricstest.Value(t, f.m.NominatedPods); v != 0 {
		t.Errorf("nominated pods before the first plan took effect = %v, want 0", v)
	}

	again := f.provision()
	if len(again.Created) != 0 {
		t.Errorf("second pass created %d more NodeClaims for the same pods", len(again.Created))
	}
	if v := metricstest.Value(t, f.m.NominatedPods); v != float64(len(pods)) {
		t.Errorf("nominated pods = %v, want %d", v, len(pods))
	}

	// A restarted controller has no memory of the nominations: the
	// in-flight NodeClaims must still count as capacity.
	fresh := provisioning.New(f.env.Manager.GetClient(), f.env.Cloud, f.env.Clock, nil, nil, f.env.Unavailable, provisioning.Options{})
	f.env.Eventually("the cache to see the NodeClaims", func() (bool, error) {
		var list karpv1.NodeClaimList
		err := f.env.Manager.GetClient().List(f.env.Context(), &list)
		return len(list.Items) == len(first.Created), err
	})
	res, err := fresh.Provision(f.env.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) != 0 {
		t.Errorf("a restarted provisioner created %d NodeClaims for pods that already have capacity", len(res.Created))
	}
	inFlight := 0
	for _, pl := range res.Plan.Existing {
		if pl.InFlight {
			inFlight++
		}
	}
	if inFlight != len(pods) {
		t.Errorf("restarted provisioner placed %d pods on in-flight NodeClaims, want %d (plan %+v)", inFlight, len(pods), res.Plan.Existing)
	}
	if n := len(f.nodeClaims()); n != len(first.Created) {
		t.Errorf("%d NodeClaims exist, want %d", n, len(first.Created))
	}
}

// TestPodThatNeverFitsGetsOneEventAndNoLaunch: a pod larger than every
// instance type gets the ResourcesExceedAllTypes reason (one event, the
// gauge) and no NodeClaim, whether it is a little too large or so large
// that quantity arithmetic would overflow (cpu 1e18, memory 1e19).
func TestPodThatNeverFitsGetsOneEventAndNoLaunch(t *testing.T) {
	for _, c := range []struct{ name, cpu, mem string }{
		{"cpu-64", "64", "1Gi"},
		{"cpu-1e18", "1e18", "1Gi"},
		{"memory-1e19", "1", "1e19"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t, provisioning.Options{}, false)
			f.readyPool(controllerstest.NodePool("default"))
			huge := f.createPods(1, "huge", c.cpu, c.mem, nil)[0]
			for range 3 {
				res := f.provision()
				if len(res.Created) != 0 {
					t.Fatalf("created %d NodeClaims for a pod no instance type can hold", len(res.Created))
				}
				if len(res.Plan.Unschedulable) != 1 || res.Plan.Unschedulable[0].Code != engine.ResourcesExceedAllTypes {
					t.Fatalf("unschedulable = %+v, want the pod with %s", res.Plan.Unschedulable, engine.ResourcesExceedAllTypes)
				}
			}
			f.env.Eventually("one FailedScheduling event", func() (bool, error) {
				return len(f.ourEvents(huge, provisioning.ReasonFailedScheduling)) == 1, nil
			})
			controllerstest.Consistently(t, time.Second, "a single FailedScheduling event", func() (bool, error) {
				evs := f.ourEvents(huge, provisioning.ReasonFailedScheduling)
				return holds(len(evs) == 1 && strings.Contains(evs[0].Note, string(engine.ResourcesExceedAllTypes)), "events %+v", evs)
			})
			if v := metricstest.Value(t, f.m.UnschedulablePods); v != 1 {
				t.Errorf("unschedulable pods gauge = %v, want 1", v)
			}
			if n := f.env.Cloud.Calls("Create"); n != 0 {
				t.Errorf("the cloud was asked to launch %d times", n)
			}
			if n := len(f.nodeClaims()); n != 0 {
				t.Errorf("%d NodeClaims exist", n)
			}
		})
	}
}

func TestNodePoolLimitStopsScaleUp(t *testing.T) {
	f := setup(t, provisioning.Options{}, false)
	np := controllerstest.NodePool("limited")
	limit := resource.MustParse("2")
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: limit}
	f.readyPool(np)
	f.createPods(4, "web", "900m", "1Gi", nil)
	res := f.provision()
	if len(res.Created) == 0 {
		t.Fatal("no NodeClaim created although the limit leaves room for one")
	}
	// The capacity launched must stay within the limit: every option of
	// every NodeClaim counts at its full CPU capacity.
	var total resource.Quantity
	for _, nc := range res.Created {
		var most resource.Quantity
		for _, name := range requirement(nc, corev1.LabelInstanceTypeStable).Values {
			for _, it := range controllerstest.InstanceTypes() {
				if it.Name == name {
					if c := it.Capacity[corev1.ResourceCPU]; c.Cmp(most) > 0 {
						most = c
					}
				}
			}
		}
		total.Add(most)
	}
	if total.Cmp(limit) > 0 {
		t.Errorf("NodeClaims may launch %s CPU, over the limit %s", total.String(), limit.String())
	}
	limited := 0
	for _, pe := range res.Plan.Unschedulable {
		if pe.Code == engine.NodePoolLimitReached {
			limited++
		}
	}
	if limited == 0 {
		t.Errorf("no pod reported %s: %+v", engine.NodePoolLimitReached, res.Plan.Unschedulable)
	}
	f.env.Eventually("a limit event on the NodePool", func() (bool, error) {
		evs := f.ourEvents(np, provisioning.ReasonLimitReached)
		return holds(len(evs) == 1 && strings.Contains(evs[0].Note, "cpu"), "events %+v", evs)
	})
	f.provision()
	controllerstest.Consistently(t, 500*time.Millisecond, "one limit event", func() (bool, error) {
		return len(f.ourEvents(np, provisioning.ReasonLimitReached)) == 1, nil
	})
}

func TestNodePoolsThatAreNotReadyAreSkipped(t *testing.T) {
	f := setup(t, provisioning.Options{}, false)
	f.env.Create(controllerstest.NodePool("not-ready"))
	f.createPods(1, "web", "100m", "128Mi", nil)
	res := f.provision()
	if len(res.Created) != 0 {
		t.Errorf("created %d NodeClaims from a NodePool that is not Ready", len(res.Created))
	}
	if !strings.Contains(res.Skipped["not-ready"], "not Ready") {
		t.Errorf("skipped = %v, want not-ready skipped as not Ready", res.Skipped)
	}
}

// TestBatchedScaleUpWithInsufficientCapacity runs the whole loop: the
// batcher (on the fake clock), the lifecycle controller and the simulated
// kubelet. The cheapest offering's launch fails for lack of capacity; the
// pods must still end Running, on the next choice.
func TestBatchedScaleUpWithInsufficientCapacity(t *testing.T) {
	f := setup(t, provisioning.Options{}, true)
	f.readyPool(controllerstest.NodePool("default"))
	cheapest := cloudprovider.OfferingKey{InstanceType: "m5.large", Zone: controllerstest.ZoneA, CapacityType: karpv1.CapacityTypeOnDemand}
	f.env.Cloud.FailNext("Create", cloudprovider.NewInsufficientCapacityError(fmt.Errorf("no m5.large left"), cheapest))

	var pods []*corev1.Pod
	for i := range 4 {
		pod := pendingPod(f.ns, fmt.Sprintf("web-%d", i), "800m", "1Gi")
		f.env.Create(pod)
		pods = append(pods, pod)
	}
	// The batch window runs on the fake clock: let the cache see all four
	// pods before time moves, so that one pass plans them together (a
	// pass over two, then two more, is a different scenario).
	f.env.Eventually("the cache to see the pods", func() (bool, error) {
		var list corev1.PodList
		err := f.env.Manager.GetClient().List(f.env.Context(), &list, client.InNamespace(f.ns))
		return holds(err == nil && len(list.Items) == len(pods), "%d pods in the cache (%v)", len(list.Items), err)
	})
	f.env.Eventually("every pod Running", func() (bool, error) {
		f.env.Clock.Step(time.Second) // lets batch windows close
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
				return false, err
			}
			if got.Status.Phase != corev1.PodRunning {
				return false, fmt.Errorf("pod %s is %s", p.Name, got.Status.Phase)
			}
		}
		return true, nil
	})
	if !f.env.Unavailable.IsUnavailable(cheapest) {
		t.Errorf("the refused offering %s is not marked unavailable", cheapest)
	}
	for _, inst := range f.env.Cloud.Instances() {
		key := cloudprovider.OfferingKey{InstanceType: inst.Labels[corev1.LabelInstanceTypeStable], Zone: inst.Labels[corev1.LabelTopologyZone], CapacityType: inst.Labels[karpv1.CapacityTypeLabelKey]}
		if key == cheapest {
			t.Errorf("instance %s launched on the refused offering", inst.Status.ProviderID)
		}
	}
	if v := metricstest.Value(t, f.m.SchedulingDuration); v < 2 {
		t.Errorf("%v scheduling passes observed, want at least 2 (the plan, and the re-plan after the refusal)", v)
	}
}

// TestReplaceLaunchesBeforeEviction: Replace plans the movable pods of a
// node onto new capacity, marks the node as going away, and does not plan
// the same pods twice.
func TestReplaceLaunchesBeforeEviction(t *testing.T) {
	f := setup(t, provisioning.Options{}, true)
	f.readyPool(controllerstest.NodePool("default"))
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       pendingPod(f.ns, "", "600m", "1Gi").Spec,
			},
		},
	}
	f.env.Create(rs)
	var node string
	f.env.Eventually("the ReplicaSet's pods Running", func() (bool, error) {
		f.env.Clock.Step(time.Second)
		var pods corev1.PodList
		if err := f.env.Client.List(f.env.Context(), &pods, client.InNamespace(f.ns)); err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
				node = p.Spec.NodeName
			}
		}
		return holds(running == 2, "%d running", running)
	})
	before := len(f.nodeClaims())
	f.env.Eventually("the cache to see the pods bound", func() (bool, error) {
		var pods corev1.PodList
		err := f.env.Manager.GetClient().List(f.env.Context(), &pods, client.InNamespace(f.ns))
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 2, err
	})

	res, err := f.prov.Replace(f.env.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Created) == 0 || len(res.Replacements) == 0 {
		t.Fatalf("Replace created %d NodeClaims (replacements %v), want the node's pods planned onto new capacity", len(res.Created), res.Replacements)
	}
	for _, nc := range res.Created {
		if nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey] != provisioning.ReasonInterruption {
			t.Errorf("replacement %s has creation reason %q", nc.Name, nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey])
		}
	}
	if n := len(f.nodeClaims()); n != before+len(res.Created) {
		t.Errorf("%d NodeClaims, want %d", n, before+len(res.Created))
	}
	// The same node again, and a regular pass: nothing more.
	again, err := f.prov.Replace(f.env.Context(), node)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 0 {
		t.Errorf("a second Replace of the same node created %d NodeClaims", len(again.Created))
	}
	if res := f.provision(); len(res.Created) != 0 {
		t.Errorf("a pass after Replace created %d NodeClaims", len(res.Created))
	}
}

// holds turns a condition and a description of the state into an
// Eventually result: the description is the error only while cond fails.
func holds(cond bool, format string, args ...any) (bool, error) {
	if cond {
		return true, nil
	}
	return false, fmt.Errorf(format, args...)
}

// TestPodsLandWhereTheyWerePlanned: once a NodeClaim's node appears, the
// pods planned onto it are handed to the kube-scheduler
// (status.nominatedNodeName), so each pod ends on the node of the
// NodeClaim it was planned onto, not on whichever node came up first, and
// no second launch is needed.
//
// The hand-off is advice: a nominated pod the scheduler tries while its
// node is still tainted may bind to another node that is ready. Under a
// loaded machine that happens, so the exact placement is reported, not
// required; what must hold is that every pod runs, on the capacity the
// plan launched.
func TestPodsLandWhereTheyWerePlanned(t *testing.T) {
	f := setup(t, provisioning.Options{}, true)
	f.readyPool(controllerstest.NodePool("default"))
	// Small pods that fit anywhere, and big ones that need a node each.
	small := f.createPods(6, "small", "200m", "256Mi", nil)
	big := f.createPods(3, "big", "1500m", "2Gi", nil)
	res := f.provision()
	if len(res.Created) < 2 {
		t.Fatalf("%d NodeClaims planned, want several", len(res.Created))
	}
	plannedOn := map[string]string{} // pod -> NodeClaim
	for i, nc := range res.Created {
		for _, ref := range res.Plan.NodeClaims[i].Pods {
			plannedOn[ref.Name] = nc.Name
		}
	}
	pods := append(small, big...)
	// The fake clock stands still while pods make progress; when nothing
	// has changed for a few seconds, the hand-offs are let expire (as time
	// would pass in production), so that displaced pods are planned again.
	running, progressAt, expired := -1, time.Now(), false
	f.env.Eventually("every pod Running", func() (bool, error) {
		n := 0
		var waiting string
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
				return false, err
			}
			if got.Status.Phase == corev1.PodRunning {
				n++
			} else {
				waiting = fmt.Sprintf("pod %s is %s", p.Name, got.Status.Phase)
			}
		}
		switch {
		case n != running:
			running, progressAt = n, time.Now()
		case time.Since(progressAt) > 5*time.Second:
			f.env.Clock.Step(provisioning.DefaultNominationTTL + time.Second)
			progressAt, expired = time.Now(), true
		}
		return holds(n == len(pods), "%s", waiting)
	})
	misplaced := 0
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		nc := &karpv1.NodeClaim{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKey{Name: plannedOn[p.Name]}, nc); err != nil {
			t.Fatal(err)
		}
		if got.Spec.NodeName != nc.Status.NodeName {
			misplaced++
			t.Logf("pod %s runs on %s, but was planned onto NodeClaim %s (node %s)", p.Name, got.Spec.NodeName, nc.Name, nc.Status.NodeName)
		}
	}
	t.Logf("%d of %d pods run where they were planned", len(pods)-misplaced, len(pods))
	n := len(f.nodeClaims())
	switch {
	case n < len(res.Created):
		t.Errorf("%d NodeClaims exist, the plan made %d", n, len(res.Created))
	case n > len(res.Created) && !expired:
		t.Errorf("%d NodeClaims exist, the plan made %d: a second launch while the hand-offs held", n, len(res.Created))
	case n > len(res.Created):
		t.Logf("%d NodeClaims exist, the plan made %d: pods the scheduler placed elsewhere needed a second launch", n, len(res.Created))
	}
}

// TestHandoffCanBeTurnedOff: with DisableHandoff the provisioner never
// writes status.nominatedNodeName; the pods still end Running on the
// capacity it launched.
func TestHandoffCanBeTurnedOff(t *testing.T) {
	f := setup(t, provisioning.Options{DisableHandoff: true}, true)
	f.readyPool(controllerstest.NodePool("default"))
	pods := append(f.createPods(4, "small", "200m", "256Mi", nil), f.createPods(2, "big", "1500m", "2Gi", nil)...)
	if res := f.provision(); len(res.Created) == 0 {
		t.Fatal("no NodeClaim planned")
	}
	f.env.Eventually("every pod Running", func() (bool, error) {
		f.env.Clock.Step(time.Second)
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
				return false, err
			}
			if got.Status.Phase != corev1.PodRunning {
				return holds(false, "pod %s is %s", p.Name, got.Status.Phase)
			}
		}
		return true, nil
	})
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		for _, mf := range got.ManagedFields {
			if mf.Subresource == "status" && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), "nominatedNodeName") && mf.Manager != "kube-scheduler" {
				t.Errorf("pod %s: %s wrote status.nominatedNodeName with the hand-off off", p.Name, mf.Manager)
			}
		}
	}
}

// nominatedByUs reports whether someone other than the kube-scheduler
// wrote the pod's status.nominatedNodeName.
func nominatedByUs(pod *corev1.Pod) bool {
	for _, mf := range pod.ManagedFields {
		if mf.Subresource == "status" && mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), "nominatedNodeName") && mf.Manager != "kube-scheduler" {
			return true
		}
	}
	return false
}

// TestNoHandoffWhereNoOtherPodCanGo: two tainted pools, each with pods
// that tolerate and select only it, one NodeClaim each. No other pod can
// use either node, so the hand-off writes no nomination (the scheduler
// cannot put the pods anywhere else); the pods still run where they were
// planned.
func TestNoHandoffWhereNoOtherPodCanGo(t *testing.T) {
	f := setup(t, provisioning.Options{}, true)
	var pods []*corev1.Pod
	for _, team := range []string{"a", "b"} {
		np := controllerstest.NodePool("team-" + team)
		np.Spec.Template.Labels = map[string]string{"team": team}
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: team, Effect: corev1.TaintEffectNoSchedule}}
		f.readyPool(np)
		pods = append(pods, f.createPods(3, "team-"+team, "100m", "128Mi", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{"team": team}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "team", Value: team, Effect: corev1.TaintEffectNoSchedule}}
		})...)
	}
	res := f.provision()
	if len(res.Created) != 2 {
		t.Fatalf("%d NodeClaims planned, want one per pool", len(res.Created))
	}
	f.env.Eventually("every pod Running", func() (bool, error) {
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
				return false, err
			}
			if got.Status.Phase != corev1.PodRunning {
				return holds(false, "pod %s is %s", p.Name, got.Status.Phase)
			}
		}
		return true, nil
	})
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
			t.Fatal(err)
		}
		if nominatedByUs(got) {
			t.Errorf("pod %s got a nomination although no other pod can use its node", p.Name)
		}
	}
	if n := len(f.nodeClaims()); n != 2 {
		t.Errorf("%d NodeClaims exist, want 2", n)
	}
}

// TestHandoffWritesWhereOtherPodsCouldGo: pods of one pool that fit on any
// of its nodes, several NodeClaims: each node is contested, so the pods
// planned onto it are handed to the scheduler (status.nominatedNodeName
// written by the provisioner, observed before the pod binds or in the
// pod's managed fields after).
func TestHandoffWritesWhereOtherPodsCouldGo(t *testing.T) {
	f := setup(t, provisioning.Options{}, true)
	f.readyPool(controllerstest.NodePool("default"))
	pods := f.createPods(3, "big", "1500m", "2Gi", nil)
	if res := f.provision(); len(res.Created) < 2 {
		t.Fatalf("%d NodeClaims planned, want several", len(res.Created))
	}
	f.env.Eventually("a hand-off written to a pod", func() (bool, error) {
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(p), got); err != nil {
				return false, err
			}
			if nominatedByUs(got) {
				return true, nil
			}
		}
		return false, errors.New("no pod carries a nomination written by the provisioner")
	})
}

// TestPodsThatRefuseEveryPoolAreCountedAsIgnored: a pending pod whose
// required node affinity asks for karpenter.sh/nodepool DoesNotExist gets
// no node and is counted in karpenter_scheduler_ignored_pods_count (and
// its alias karpenter_ignored_pod_count); the pod beside it is planned;
// once the ignored pod is gone the count is 0.
func TestPodsThatRefuseEveryPoolAreCountedAsIgnored(t *testing.T) {
	f := setup(t, provisioning.Options{}, false)
	f.readyPool(controllerstest.NodePool("default"))
	refusing := f.createPods(1, "unmanaged-only", "100m", "64Mi", func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpDoesNotExist}},
			}}},
		}}
	})[0]
	web := f.createPods(1, "web", "100m", "64Mi", nil)[0]
	res := f.provision()
	if len(res.Created) != 1 || len(res.Plan.Unschedulable) != 1 {
		t.Fatalf("created %d NodeClaims, %d pods unschedulable; want 1 and 1 (the refusing pod)", len(res.Created), len(res.Plan.Unschedulable))
	}
	for name, g := range map[string]prometheus.Gauge{"karpenter_scheduler_ignored_pods_count": f.m.IgnoredPods, "karpenter_ignored_pod_count": f.m.IgnoredPodsAlias} {
		if v := metricstest.Value(t, g); v != 1 {
			t.Errorf("%s = %v, want 1", name, v)
		}
	}
	if provisioning.IgnoredPod(web) || !provisioning.IgnoredPod(refusing) {
		t.Error("IgnoredPod does not tell the refusing pod from the other")
	}
	if err := f.env.Client.Delete(f.env.Context(), refusing); err != nil {
		t.Fatal(err)
	}
	f.env.Eventually("no pod ignored once it is gone", func() (bool, error) {
		f.provision()
		return metricstest.Value(t, f.m.IgnoredPods) == 0 && metricstest.Value(t, f.m.IgnoredPodsAlias) == 0, nil
	})
}
