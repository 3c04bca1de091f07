package e2e_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
)

// availability watches the pods of an app and records the fewest that were
// available (Running, Ready, not being deleted) after Start.
type availability struct {
	mu     sync.Mutex
	pods   map[string]bool
	lowest int
	events int
}

func watchAvailability(t *testing.T, ns, app string) *availability {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	sel := metav1.ListOptions{LabelSelector: "app=" + app}
	list, err := cs.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	a := &availability{pods: map[string]bool{}}
	for i := range list.Items {
		a.pods[list.Items[i].Name] = available(&list.Items[i])
	}
	a.lowest = a.count()
	sel.ResourceVersion = list.ResourceVersion
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			a.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(a.pods, pod.Name)
			} else {
				a.pods[pod.Name] = available(pod)
			}
			a.events++
			a.lowest = min(a.lowest, a.count())
			a.mu.Unlock()
		}
	}()
	return a
}

// count is the number of available pods; callers hold mu.
func (a *availability) count() int {
	n := 0
	for _, ok := range a.pods {
		if ok {
			n++
		}
	}
	return n
}

func available(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Lowest is the fewest available pods seen since the watch began, and
// the number of pod events seen.
func (a *availability) Lowest() (int, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lowest, a.events
}

// busiestNode returns the node running the most pods of the app, and its
// NodeClaim.
func (s *scenario) busiestNode(app string) (string, *karpv1.NodeClaim) {
	s.t.Helper()
	var pods corev1.PodList
	if err := kube.List(s.ctx, &pods, client.InNamespace(s.ns), client.MatchingLabels{"app": app}); err != nil {
		s.t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			count[p.Spec.NodeName]++
		}
	}
	best := ""
	for n, c := range count {
		if best == "" || c > count[best] || (c == count[best] && n < best) {
			best = n
		}
	}
	for _, nc := range nodeClaims(s.t) {
		if nc.Status.NodeName == best {
			return best, &nc
		}
	}
	s.t.Fatalf("no NodeClaim for node %q", best)
	return "", nil
}

// instanceGone reports whether the emulator shows the instance terminated
// (or forgotten).
func instanceGone(id string) bool {
	in, ok := emu().Instance(id)
	return !ok || in.State == awsemu.StateTerminated || in.State == awsemu.StateShuttingDown
}

// TestSpotInterruptionRespectsPDB: a spot interruption of a node hosting a
// PDB-protected Deployment launches a replacement, evicts the pods without
// ever going below minAvailable, gets them Running again, and the old
// instance ends terminated.
func TestSpotInterruptionRespectsPDB(t *testing.T) {
	s := newScenario(t)
	const replicas, minAvailable = 6, 4
	s.deployment("guarded", replicas, "500m", "512Mi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"} // the arm64 pool is spot only
	})
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "guarded"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{Type: intstr.Int, IntVal: minAvailable},
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "guarded"}},
		},
	}
	if err := kube.Create(s.ctx, pdb); err != nil {
		t.Fatal(err)
	}
	s.waitRunning(replicas, 2*time.Minute)
	eventually(t, time.Minute, "every pod Ready", func() (bool, error) {
		var pods corev1.PodList
		err := kube.List(s.ctx, &pods, client.InNamespace(s.ns))
		n := 0
		for i := range pods.Items {
			if available(&pods.Items[i]) {
				n++
			}
		}
		return n == replicas, err
	})
	node, victim := s.busiestNode("guarded")
	if victim.Labels[karpv1.CapacityTypeLabelKey] != karpv1.CapacityTypeSpot {
		t.Fatalf("node %s is %s, want spot", node, victim.Labels[karpv1.CapacityTypeLabelKey])
	}
	id := instanceID(victim.Status.ProviderID)
	watch := watchAvailability(t, s.ns, "guarded")

	if err := emu().Interrupt(node, awsemu.KindSpotInterruption); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "a replacement NodeClaim", func() (bool, error) {
		for _, nc := range nodeClaims(t) {
			if nc.Annotations[nodeclaimutil.CreationReasonAnnotationKey] == provisioning.ReasonInterruption {
				return true, nil
			}
		}
		return false, nil
	})
	eventually(t, 2*time.Minute, "the interrupted NodeClaim and node gone, the instance terminated", func() (bool, error) {
		claimGone, err := notFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name}})
		if err != nil {
			return false, err
		}
		nodeGone, err := notFound(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
		if err != nil {
			return false, err
		}
		return claimGone && nodeGone && instanceGone(id), nil
	})
	s.waitRunning(replicas, 2*time.Minute)
	eventually(t, time.Minute, "every pod Ready again", func() (bool, error) {
		var pods corev1.PodList
		err := kube.List(s.ctx, &pods, client.InNamespace(s.ns))
		n := 0
		for i := range pods.Items {
			if available(&pods.Items[i]) && pods.Items[i].Spec.NodeName != node {
				n++
			}
		}
		return n == replicas, err
	})
	lowest, events := watch.Lowest()
	t.Logf("lowest availability %d of %d over %d pod events (minAvailable %d)", lowest, replicas, events, minAvailable)
	if events == 0 || lowest < minAvailable {
		t.Errorf("availability fell to %d (%d events), below minAvailable %d", lowest, events, minAvailable)
	}
	if evs := awaitEvents(t, 30*time.Second, "NodeClaim", "", victim.Name, interruption.ReasonSpotInterrupted); len(evs) == 0 {
		t.Errorf("no %s event on NodeClaim %s", interruption.ReasonSpotInterrupted, victim.Name)
	}
	if err := consistent(t); err != nil {
		t.Error(err)
	}
}

// TestRebalanceReplacementReadyBeforeCordon: on a NodePool opted into
// proactive rebalancing, the replacement is initialized before the old
// node is cordoned. Both moments are taken from watches, and ordered by
// the API server's resourceVersions (one etcd, so one counter).
func TestRebalanceReplacementReadyBeforeCordon(t *testing.T) {
	s := newScenario(t)
	s.pool("rebalance", func(np *karpv1.NodePool) {
		np.Annotations = map[string]string{interruption.RebalanceAnnotationKey: interruption.RebalanceReplace}
	})
	s.deployment("web", 2, "500m", "512Mi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"e2e": "rebalance"}
	})
	s.waitRunning(2, 2*time.Minute)
	node, old := s.busiestNode("web")

	ready := watchFirst(t, &karpv1.NodeClaimList{}, nil, func(_ watch.EventType, o client.Object) bool {
		nc := o.(*karpv1.NodeClaim)
		return nc.Name != old.Name && nc.IsTrue(karpv1.ConditionTypeInitialized)
	})
	cordon := watchCordon(t, node)

	if err := emu().Interrupt(node, awsemu.KindRebalance); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the old NodeClaim gone", func() (bool, error) {
		return notFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old.Name}})
	})
	s.waitRunning(2, 2*time.Minute)
	readyRV, readyAt, _ := ready()
	cordonRV, cordonAt, _ := cordon()
	if readyRV == 0 || cordonRV == 0 {
		t.Fatalf("saw replacement initialized at rv %d and cordon at rv %d; want both", readyRV, cordonRV)
	}
	t.Logf("replacement initialized at rv %d (%s), old node cordoned at rv %d (%s later)", readyRV, readyAt.Format(time.StampMilli), cordonRV, cordonAt.Sub(readyAt))
	if readyRV >= cordonRV {
		t.Errorf("the old node was cordoned (rv %d) before its replacement was initialized (rv %d)", cordonRV, readyRV)
	}
	if evs := awaitEvents(t, 30*time.Second, "NodeClaim", "", old.Name, interruption.ReasonRebalanced); len(evs) == 0 {
		t.Errorf("no %s event on NodeClaim %s", interruption.ReasonRebalanced, old.Name)
	}
}

func notFound(obj client.Object) (bool, error) {
	err := kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if err == nil {
		return false, nil
	}
	if client.IgnoreNotFound(err) == nil {
		return true, nil
	}
	return false, fmt.Errorf("reading %s: %w", obj.GetName(), err)
}

// TestScheduledRetirementReplacesBeforeDrain: EC2 schedules the retirement
// of a node's instance (reported only by DescribeInstanceStatus, no queue
// message); the controller's poll finds it, a replacement NodeClaim is
// created before the old node is cordoned and drained, and the old
// NodeClaim is gone well before the retirement starts. The two moments
// come from watches, ordered by the API server's resourceVersions.
func TestScheduledRetirementReplacesBeforeDrain(t *testing.T) {
	s := newScenario(t)
	s.pool("retire", nil)
	s.deployment("retire", 2, "500m", "512Mi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"e2e": "retire"}
	})
	s.waitRunning(2, 2*time.Minute)
	node, old := s.busiestNode("retire")

	created := watchFirst(t, &karpv1.NodeClaimList{}, nil, func(typ watch.EventType, o client.Object) bool {
		return typ == watch.Added && o.GetAnnotations()[nodeclaimutil.CreationReasonAnnotationKey] == provisioning.ReasonInterruption
	})
	cordon := watchCordon(t, node)

	const lead = 30 * time.Minute
	ev, err := emu().ScheduleEvent(node, awsemu.EventInstanceRetirement, lead)
	if err != nil {
		t.Fatal(err)
	}
	// The controller polls every minute.
	eventually(t, 3*time.Minute, "the retiring NodeClaim gone", func() (bool, error) {
		return notFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old.Name}})
	})
	if now := time.Now(); !now.Before(ev.NotBefore) {
		t.Errorf("the NodeClaim went at %v, not before the retirement's start %v", now, ev.NotBefore)
	}
	s.waitRunning(2, 2*time.Minute)
	replacementRV, _, replacement := created()
	cordonRV, _, _ := cordon()
	if replacementRV == 0 || cordonRV == 0 {
		t.Fatalf("saw the replacement created at rv %d and the cordon at rv %d; want both", replacementRV, cordonRV)
	}
	t.Logf("replacement %s created at rv %d, old node %s cordoned at rv %d", replacement, replacementRV, node, cordonRV)
	if replacementRV >= cordonRV {
		t.Errorf("the retiring node was cordoned (rv %d) before its replacement was created (rv %d)", cordonRV, replacementRV)
	}
	evs := awaitEvents(t, 30*time.Second, "NodeClaim", "", old.Name, interruption.ReasonScheduledChange)
	if len(evs) == 0 || !strings.Contains(evs[0].Note, awsemu.EventInstanceRetirement) {
		t.Errorf("events %s on NodeClaim %s: %+v; want one naming %s", interruption.ReasonScheduledChange, old.Name, evs, awsemu.EventInstanceRetirement)
	}
	if err := consistent(t); err != nil {
		t.Error(err)
	}
}

// watchFirst watches objects of list's kind (those matching opts) from
// now and returns a function reading the first event match accepts: its
// resourceVersion (0 before any), when it was seen and the object's name.
func watchFirst(t *testing.T, list client.ObjectList, opts []client.ListOption, match func(watch.EventType, client.Object) bool) func() (int64, time.Time, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	w, err := watchClient.Watch(ctx, list, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	var mu sync.Mutex
	var rv int64
	var at time.Time
	var name string
	go func() {
		for ev := range w.ResultChan() {
			o, ok := ev.Object.(client.Object)
			if !ok || !match(ev.Type, o) {
				continue
			}
			v, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
			mu.Lock()
			if rv == 0 {
				rv, at, name = v, time.Now(), o.GetName()
			}
			mu.Unlock()
		}
	}()
	return func() (int64, time.Time, string) {
		mu.Lock()
		defer mu.Unlock()
		return rv, at, name
	}
}

// watchCordon watches a node from now until it is marked unschedulable.
func watchCordon(t *testing.T, node string) func() (int64, time.Time, string) {
	return watchFirst(t, &corev1.NodeList{}, []client.ListOption{client.MatchingFields{"metadata.name": node}},
		func(_ watch.EventType, o client.Object) bool { return o.(*corev1.Node).Spec.Unschedulable })
}
