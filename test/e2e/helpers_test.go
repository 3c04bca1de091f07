package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
)

// eventually polls cond every 200 ms (the stack is busy enough) until it
// holds, failing the test after timeout with what and the last error.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	poll.Until(t, timeout, 200*time.Millisecond, what, cond)
}

// consistently checks cond every 200 ms for d, failing at the first miss.
func consistently(t testing.TB, d time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	poll.While(t, d, 200*time.Millisecond, what, cond)
}

// scenario is one test's namespace and the extra NodePools it made; its
// cleanup returns the cluster to the shared baseline: no workload, no
// NodeClaims, no nodes, no live instances, no faults.
type scenario struct {
	t     testing.TB
	ctx   context.Context
	ns    string
	pools []string
}

var unsafeChars = regexp.MustCompile(`[^a-z0-9]+`)

func newScenario(t testing.TB) *scenario {
	t.Helper()
	name := strings.Trim(unsafeChars.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 40 {
		name = strings.TrimRight(name[:40], "-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}
	if err := kube.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	s := &scenario{t: t, ctx: t.Context(), ns: ns.Name}
	t.Cleanup(s.cleanup)
	return s
}

func (s *scenario) cleanup() {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	emu().ClearFaults()
	// The workload goes first: a terminating namespace refuses evictions,
	// so draining nodes before its pods are gone would only retry.
	_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}})
	eventually(t, 3*time.Minute, "the test's pods gone", func() (bool, error) {
		var pods corev1.PodList
		if err := kube.List(ctx, &pods, client.InNamespace(s.ns)); err != nil {
			return false, err
		}
		if n := len(pods.Items); n > 0 {
			return false, fmt.Errorf("%d pods left", n)
		}
		return true, nil
	})
	for _, p := range s.pools {
		_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p}})
	}
	var ncs karpv1.NodeClaimList
	if err := kube.List(ctx, &ncs); err == nil {
		for i := range ncs.Items {
			_ = kube.Delete(ctx, &ncs.Items[i])
		}
	}
	eventually(t, 2*time.Minute, "no NodeClaims, nodes or instances left", func() (bool, error) {
		var ncs karpv1.NodeClaimList
		if err := kube.List(ctx, &ncs); err != nil {
			return false, err
		}
		var nodes corev1.NodeList
		if err := kube.List(ctx, &nodes); err != nil {
			return false, err
		}
		live := liveInstances()
		if len(ncs.Items)+len(nodes.Items)+len(live) > 0 {
			return false, fmt.Errorf("%d NodeClaims, %d nodes, %d live instances left", len(ncs.Items), len(nodes.Items), len(live))
		}
		return true, nil
	})
}

// describePending logs the scenario's unbound pods with their scheduling
// condition and dovetail's events about them (for failures).
func (s *scenario) describePending() {
	var pods corev1.PodList
	if err := kube.List(context.Background(), &pods, client.InNamespace(s.ns)); err != nil {
		return
	}
	shown := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" || shown >= 5 {
			continue
		}
		shown++
		s.t.Logf("pending pod %s: conditions %+v", p.Name, p.Status.Conditions)
		var list eventsv1.EventList
		_ = kube.List(context.Background(), &list, client.InNamespace(s.ns))
		for _, ev := range list.Items {
			if ev.Regarding.Name == p.Name {
				s.t.Logf("  event %s/%s: %s", ev.ReportingController, ev.Reason, ev.Note)
			}
		}
	}
}

// pool creates a NodePool for this test only: the example arm64 spot
// pool's requirements, a template label e2e=<name> (pods select it to land
// there and nowhere else), consolidateAfter: Never (so consolidation does
// not change what the test measures; disruption tests set their own), then
// mutate.
func (s *scenario) pool(name string, mutate func(*karpv1.NodePool)) *karpv1.NodePool {
	s.t.Helper()
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{
			ObjectMeta: karpv1.ObjectMeta{Labels: map[string]string{"e2e": name}},
			Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
					{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"spot"}},
					{Key: "karpenter.k8s.aws/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
				},
			},
		}},
	}
	np.Spec.Disruption.ConsolidateAfter = karpv1.NeverDuration()
	if mutate != nil {
		mutate(np)
	}
	if err := kube.Create(s.ctx, np); err != nil {
		s.t.Fatal(err)
	}
	s.pools = append(s.pools, name)
	eventually(s.t, time.Minute, "NodePool "+name+" Ready", func() (bool, error) {
		err := kube.Get(s.ctx, client.ObjectKeyFromObject(np), np)
		return np.IsTrue(karpv1.ConditionTypeReady), err
	})
	return np
}

// deployment creates a Deployment of pause pods requesting cpu and memory.
func (s *scenario) deployment(name string, replicas int32, cpu, mem string, mutate func(*appsv1.Deployment)) *appsv1.Deployment {
	s.t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: name, Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
					}},
				}}},
			},
		},
	}
	if mutate != nil {
		mutate(d)
	}
	if err := kube.Create(s.ctx, d); err != nil {
		s.t.Fatal(err)
	}
	return d
}

// apply creates every object of a multi-document YAML stream, putting
// namespaced objects without a namespace into the scenario's.
func (s *scenario) apply(data []byte) {
	s.t.Helper()
	for _, obj := range decode(s.t, data) {
		if obj.GetNamespace() == "" && namespaced(obj.GetKind()) {
			obj.SetNamespace(s.ns)
		}
		if obj.GetKind() == "PersistentVolume" {
			if ref, ok, _ := unstructured.NestedMap(obj.Object, "spec", "claimRef"); ok && ref["namespace"] == nil {
				_ = unstructured.SetNestedField(obj.Object, s.ns, "spec", "claimRef", "namespace")
			}
		}
		if err := kube.Create(s.ctx, obj); err != nil {
			s.t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

func namespaced(kind string) bool {
	switch kind {
	case "PersistentVolume", "StorageClass", "Namespace", "NodePool", "EC2NodeClass", "ClusterRole", "ClusterRoleBinding":
		return false
	}
	return true
}

func decode(t testing.TB, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(obj.Object) > 0 {
			out = append(out, obj)
		}
	}
}

// running counts the scenario's pods that run and are not being deleted,
// and those not bound yet.
func (s *scenario) running() (running, pending int, err error) {
	var pods corev1.PodList
	if err := kube.List(s.ctx, &pods, client.InNamespace(s.ns)); err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		switch {
		case p.DeletionTimestamp != nil:
		case p.Status.Phase == corev1.PodRunning:
			running++
		case p.Spec.NodeName == "":
			pending++
		}
	}
	return running, pending, nil
}

// waitRunning waits until want pods of the scenario run.
func (s *scenario) waitRunning(want int, timeout time.Duration) {
	s.t.Helper()
	defer func() {
		if s.t.Failed() {
			s.describePending()
		}
	}()
	eventually(s.t, timeout, fmt.Sprintf("%d pods Running", want), func() (bool, error) {
		n, pending, err := s.running()
		if err != nil {
			return false, err
		}
		if n != want {
			return false, fmt.Errorf("%d running, %d pending", n, pending)
		}
		return true, nil
	})
}

func nodeClaims(t testing.TB) []karpv1.NodeClaim {
	t.Helper()
	var list karpv1.NodeClaimList
	if err := kube.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func managedNodes(t testing.TB) []corev1.Node {
	t.Helper()
	var list corev1.NodeList
	if err := kube.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Node
	for _, n := range list.Items {
		if n.Labels[karpv1.NodePoolLabelKey] != "" {
			out = append(out, n)
		}
	}
	return out
}

// liveInstances are the emulator's instances that are not shut down.
func liveInstances() []awsemu.Instance {
	var out []awsemu.Instance
	for _, in := range emu().Instances() {
		if in.State == awsemu.StatePending || in.State == awsemu.StateRunning || in.State == awsemu.StateStopping || in.State == awsemu.StateStopped {
			out = append(out, in)
		}
	}
	return out
}

func instanceID(providerID string) string {
	return providerID[strings.LastIndexByte(providerID, '/')+1:]
}

// consistent reports instances without a NodeClaim and launched NodeClaims
// without a live instance (NodeClaims being deleted are left out).
func consistent(t testing.TB) error {
	claims := map[string]string{}
	for _, nc := range nodeClaims(t) {
		if nc.Status.ProviderID != "" && nc.DeletionTimestamp == nil {
			claims[instanceID(nc.Status.ProviderID)] = nc.Name
		}
	}
	live := map[string]bool{}
	var problems []string
	for _, in := range liveInstances() {
		live[in.ID] = true
		if _, ok := claims[in.ID]; !ok {
			problems = append(problems, "instance "+in.ID+" has no NodeClaim")
		}
	}
	for id, name := range claims {
		if !live[id] {
			problems = append(problems, "NodeClaim "+name+" has no live instance ("+id+")")
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// fleetPrice sums the hourly prices of the NodeClaims not being deleted.
func fleetPrice(t testing.TB) float64 {
	var sum float64
	for _, nc := range nodeClaims(t) {
		if p, ok := nodeclaimutil.HourlyPrice(&nc); ok && nc.DeletionTimestamp == nil {
			sum += p
		}
	}
	return sum
}

// controllerEvents lists dovetail's events about an object with a reason.
func controllerEvents(t testing.TB, kind, namespace, name, reason string) []eventsv1.Event {
	t.Helper()
	var list eventsv1.EventList
	opts := []client.ListOption{}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := kube.List(context.Background(), &list, opts...); err != nil {
		t.Fatal(err)
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.ReportingController == "dovetail" && ev.Regarding.Kind == kind && ev.Regarding.Name == name && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// awaitEvents polls for dovetail's Events of a reason on an object until
// there is one or timeout passes, and returns them (none when it timed
// out). Events are written asynchronously by the controller's recorder, so
// the object's own change (a NodeClaim gone) can be seen before its Event.
func awaitEvents(t testing.TB, timeout time.Duration, kind, namespace, name, reason string) []eventsv1.Event {
	t.Helper()
	var evs []eventsv1.Event
	deadline := time.Now().Add(timeout)
	for {
		if evs = controllerEvents(t, kind, namespace, name, reason); len(evs) > 0 || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(200 * time.Millisecond) // poll interval, not synchronisation: the deadline above bounds it
	}
}

// nodeOf returns the Node of a NodeClaim, or nil when it has none.
func nodeOf(t testing.TB, nc *karpv1.NodeClaim) *corev1.Node {
	if nc.Status.NodeName == "" {
		return nil
	}
	n := &corev1.Node{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: nc.Status.NodeName}, n); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return n
}
