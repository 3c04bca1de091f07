package capacitybuffer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/capacitybuffer"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	nodetermination "github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

type fixture struct {
	t       *testing.T
	env     *controllerstest.Env
	prov    *provisioning.Provisioner
	metrics *provisioning.Metrics
	np      *karpv1.NodePool
	ns      string
}

// setup runs the capacity buffer controller, provisioning with buffers on
// (driven by hand through Provision), the NodeClaim lifecycle and
// termination controllers and the simulated kubelet, with a Ready pool.
func setup(t *testing.T) *fixture {
	env := controllerstest.New(t, cp.RESTConfig())
	kube := env.Manager.GetClient()
	env.Create(controllerstest.EC2NodeClass("default"))
	m, err := provisioning.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	prov := provisioning.New(kube, env.Cloud, env.Clock, env.Recorder(), m, env.Unavailable, provisioning.Options{CapacityBuffers: true})
	env.Start(
		capacitybuffer.New(kube, env.Clock, env.Recorder(), capacitybuffer.Options{}),
		prov,
		lifecycle.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, env.Unavailable,
			lifecycle.Options{LaunchTimeout: 24 * time.Hour, RegistrationTimeout: 24 * time.Hour}),
		nctermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics),
		nodetermination.NewController(kube, env.Cloud, env.Clock, env.Recorder(), env.Metrics, nodetermination.Options{}),
	)
	env.StartKubelet(controllerstest.KubeletOptions{})
	np := controllerstest.NodePool(env.Prefix)
	env.Create(np)
	now := time.Now()
	np.SetCondition(karpv1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, "Valid", "", now)
	np.SetCondition(karpv1.ConditionTypeNodeClassReady, metav1.ConditionTrue, "Ready", "", now)
	if err := env.Client.Status().Update(env.Context(), np); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, env: env, prov: prov, metrics: m, np: np, ns: env.Namespace()}
	// The provisioner reads the pool from its cache.
	f.env.Eventually("pool Ready in the provisioner's cache", func() (bool, error) {
		got := &karpv1.NodePool{}
		err := kube.Get(env.Context(), client.ObjectKeyFromObject(np), got)
		return err == nil && got.IsTrue(karpv1.ConditionTypeReady), err
	})
	return f
}

// chunk is a pod spec of one cpu that wants no other app=buf pod on its
// node, so each chunk of a buffer holds a node of its own.
func chunk() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "buf"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "buf"}}}}}},
		},
	}
}

func (f *fixture) template(name string) *corev1.PodTemplate {
	pt := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Template: chunk()}
	f.env.Create(pt)
	return pt
}

func (f *fixture) buffer(name string, spec autoscalingv1beta1.CapacityBufferSpec) *autoscalingv1beta1.CapacityBuffer {
	cb := &autoscalingv1beta1.CapacityBuffer{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name}, Spec: spec}
	f.env.Create(cb)
	return cb
}

// condition waits until the buffer's condition typ has status and reason,
// and returns the buffer.
func (f *fixture) condition(cb *autoscalingv1beta1.CapacityBuffer, typ string, status metav1.ConditionStatus, reason string) *autoscalingv1beta1.CapacityBuffer {
	f.t.Helper()
	f.env.Eventually(fmt.Sprintf("%s %s=%s (%s)", cb.Name, typ, status, reason), func() (bool, error) {
		if err := f.env.Get(cb); err != nil {
			return false, err
		}
		c := apimeta.FindStatusCondition(cb.Status.Conditions, typ)
		if c == nil || c.Status != status || c.Reason != reason {
			return false, fmt.Errorf("conditions %+v", cb.Status.Conditions)
		}
		return true, nil
	})
	return cb
}

// provision runs a pass (once the buffers are in the provisioner's cache)
// and returns how many NodeClaims it created.
func (f *fixture) provision() int {
	f.t.Helper()
	res, err := f.prov.Provision(context.Background())
	if err != nil {
		f.t.Fatalf("provisioning pass: %v", err)
	}
	return len(res.Created)
}

// bufferPods reads the dovetail_capacitybuffer_pods gauges of buffer
// name: placement -> pods.
func (f *fixture) bufferPods(name string) map[string]float64 {
	f.t.Helper()
	out := map[string]float64{}
	for _, placement := range []string{"wanted", "existing", "inflight", "new", "nowhere"} {
		g, err := f.metrics.BufferPods.GetMetricWithLabelValues(f.ns, name, placement)
		if err != nil {
			f.t.Fatal(err)
		}
		var m dto.Metric
		if err := g.Write(&m); err != nil {
			f.t.Fatal(err)
		}
		out[placement] = m.GetGauge().GetValue()
	}
	return out
}

// claims lists the pool's NodeClaims not being deleted.
func (f *fixture) claims() []karpv1.NodeClaim {
	f.t.Helper()
	var list karpv1.NodeClaimList
	if err := f.env.Client.List(f.env.Context(), &list, client.MatchingLabels{karpv1.NodePoolLabelKey: f.np.Name}); err != nil {
		f.t.Fatal(err)
	}
	var out []karpv1.NodeClaim
	for _, nc := range list.Items {
		if nc.DeletionTimestamp.IsZero() {
			out = append(out, nc)
		}
	}
	return out
}

// initialized waits until n NodeClaims of the pool are initialized and
// returns them.
func (f *fixture) initialized(n int) []karpv1.NodeClaim {
	f.t.Helper()
	var out []karpv1.NodeClaim
	f.env.Eventually(fmt.Sprintf("%d initialized NodeClaims", n), func() (bool, error) {
		out = f.claims()
		if len(out) != n {
			return false, fmt.Errorf("%d NodeClaims", len(out))
		}
		for _, nc := range out {
			if !nc.IsTrue(karpv1.ConditionTypeInitialized) {
				return false, fmt.Errorf("%s not initialized", nc.Name)
			}
		}
		return true, nil
	})
	return out
}

// synced waits until the provisioner's cache shows the buffer resolved
// as the API server has it (replicas and ReadyForProvisioning).
func (f *fixture) synced(cb *autoscalingv1beta1.CapacityBuffer) {
	f.t.Helper()
	f.env.Eventually("buffer status in the cache", func() (bool, error) {
		want := &autoscalingv1beta1.CapacityBuffer{}
		if err := f.env.Client.Get(f.env.Context(), client.ObjectKeyFromObject(cb), want); err != nil {
			return false, err
		}
		got := &autoscalingv1beta1.CapacityBuffer{}
		if err := f.env.Manager.GetClient().Get(f.env.Context(), client.ObjectKeyFromObject(cb), got); err != nil {
			return false, err
		}
		ready := func(b *autoscalingv1beta1.CapacityBuffer) string {
			c := apimeta.FindStatusCondition(b.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
			if c == nil {
				return ""
			}
			return string(c.Status)
		}
		return ready(want) != "" && ready(got) == ready(want) && ptr.Equal(got.Status.Replicas, want.Status.Replicas), nil
	})
}

// A buffer of 2 gets room for 2 chunks (a node each, anti-affinity), the
// room is kept while it exists, a real pod that takes one chunk's room
// gets it refilled, and the nodes that hold the room are not
// empty-consolidated until the buffer is deleted.
func TestBufferRoomConsumedRefilledAndReleased(t *testing.T) {
	f := setup(t)
	pt := f.template("tmpl")
	cb := f.buffer("warm", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "tmpl"}, Replicas: ptr.To[int32](2)})
	cb = f.condition(cb, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue, capacitybuffer.ReasonResolved)
	if cb.Status.Replicas == nil || *cb.Status.Replicas != 2 || cb.Status.PodTemplateRef == nil || cb.Status.PodTemplateRef.Name != "tmpl" ||
		cb.Status.PodTemplateGeneration == nil || cb.Status.ProvisioningStrategy == nil || *cb.Status.ProvisioningStrategy != autoscalingv1beta1.ActiveCapacityStrategy {
		t.Fatalf("status %+v, want replicas 2 from PodTemplate tmpl with its generation and the strategy", cb.Status)
	}
	_ = pt
	f.synced(cb)
	if n := f.provision(); n != 2 {
		t.Fatalf("%d NodeClaims created for a buffer of 2 (one chunk per node), want 2", n)
	}
	if got := f.bufferPods(cb.Name); got["wanted"] != 2 || got["new"] != 2 || got["existing"] != 0 || got["nowhere"] != 0 {
		t.Errorf("dovetail_capacitybuffer_pods after the first pass: %v, want 2 wanted on 2 new", got)
	}
	f.condition(cb, autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, provisioning.ReasonRequiresNewCapacity)
	if n := f.provision(); n != 0 {
		t.Fatalf("a second pass created %d more NodeClaims while the room is launching", n)
	}
	claims := f.initialized(2)
	f.env.Eventually("room on existing nodes", func() (bool, error) {
		if n := f.provision(); n != 0 {
			return false, fmt.Errorf("a pass created %d NodeClaims for room that exists", n)
		}
		err := f.env.Get(cb)
		c := apimeta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
		return err == nil && c != nil && c.Reason == provisioning.ReasonFitsExistingCapacity, err
	})
	if got := f.bufferPods(cb.Name); got["wanted"] != 2 || got["existing"] != 2 || got["new"] != 0 || got["inflight"] != 0 {
		t.Errorf("dovetail_capacitybuffer_pods once the room exists: %v, want 2 wanted on 2 existing", got)
	}

	// Disruption keeps both empty nodes: they hold the room.
	dis := disruption.New(f.env.Client, f.env.Cloud, f.env.Clock, f.env.Recorder(), f.env.Metrics, f.env.Unavailable,
		func(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string) *karpv1.NodeClaim {
			return provisioning.NewNodeClaim(np, planned, types, reason, 0)
		}, disruption.Options{CapacityBuffers: true, ValidationPeriod: -1})
	pass := func() {
		t.Helper()
		if _, err := dis.Pass(context.Background()); err != nil {
			t.Fatalf("disruption pass: %v", err)
		}
	}
	for range 3 {
		pass()
		f.env.Clock.Step(time.Minute)
	}
	if got := f.claims(); len(got) != 2 {
		t.Fatalf("%d NodeClaims left after disruption passes, want both buffer nodes kept", len(got))
	}
	for _, nc := range claims {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
		if err := f.env.Get(node); err != nil {
			t.Fatal(err)
		}
		ev := f.env.EventuallyEventAbout(node, disruption.ReasonDisruptionBlocked)
		if !strings.Contains(ev.Note, "CapacityBuffer") || !strings.Contains(ev.Note, cb.Name) {
			t.Errorf("node %s: DisruptionBlocked note %q does not name the buffer", node.Name, ev.Note)
		}
	}

	// A real pod of the same shape takes one node's room: refilled.
	real := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "real", Labels: map[string]string{"app": "buf"}},
		Spec: chunk().Spec}
	real.Spec.NodeName = claims[0].Status.NodeName
	f.env.Create(real)
	f.env.Eventually("real pod running", func() (bool, error) {
		err := f.env.Get(real)
		return real.Status.Phase == corev1.PodRunning, err
	})
	// (The provisioner's own loop may run the pass: the binding triggers
	// it once the fake clock has moved.)
	f.env.Eventually("the room refilled", func() (bool, error) {
		f.provision()
		if n := len(f.claims()); n != 3 {
			return false, fmt.Errorf("%d NodeClaims", n)
		}
		return true, nil
	})
	f.initialized(3)
	if n := f.provision(); n != 0 {
		t.Fatalf("%d NodeClaims created after the refill, want none", n)
	}

	// Deleted, the buffer lets its empty nodes go; the real pod's stays.
	f.env.Delete(cb)
	f.env.Eventually("buffer gone from the cache", func() (bool, error) {
		err := f.env.Manager.GetClient().Get(f.env.Context(), client.ObjectKeyFromObject(cb), &autoscalingv1beta1.CapacityBuffer{})
		return client.IgnoreNotFound(err) == nil && err != nil, client.IgnoreNotFound(err)
	})
	f.provision()
	series := make(chan prometheus.Metric, 16)
	f.metrics.BufferPods.Collect(series)
	close(series)
	if n := len(series); n != 0 {
		t.Errorf("%d dovetail_capacitybuffer_pods series left after the buffer was deleted", n)
	}
	f.env.Eventually("empty buffer nodes consolidated", func() (bool, error) {
		pass()
		f.env.Clock.Step(time.Minute)
		left := f.claims()
		if len(left) != 1 {
			return false, fmt.Errorf("%d NodeClaims left", len(left))
		}
		if left[0].Name != claims[0].Name {
			return false, fmt.Errorf("%s left, want %s (the real pod's)", left[0].Name, claims[0].Name)
		}
		return true, nil
	})
}

// Bad buffers get ReadyForProvisioning=False naming what is wrong, plan
// nothing, and recover when fixed; a scalableRef with a percentage follows
// its Deployment's replicas through an owned PodTemplate.
func TestBufferResolution(t *testing.T) {
	f := setup(t)
	missing := f.buffer("missing-template", autoscalingv1beta1.CapacityBufferSpec{PodTemplateRef: &autoscalingv1beta1.LocalObjectRef{Name: "later"}, Replicas: ptr.To[int32](1)})
	noDeploy := f.buffer("missing-deployment", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "apps", Kind: "Deployment", Name: "nope"}, Replicas: ptr.To[int32](1)})
	badKind := f.buffer("bad-kind", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{APIGroup: "batch", Kind: "Job", Name: "j"}, Replicas: ptr.To[int32](1)})

	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](4), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "buf"}}, Template: chunk()}}
	// Its pods stay pending (no scheduler): keep them off the plan.
	d.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "test.dovetail.sh/hold"}}
	f.env.Create(d)
	over := f.buffer("over-100", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](150)})
	pct := f.buffer("half", autoscalingv1beta1.CapacityBufferSpec{ScalableRef: &autoscalingv1beta1.ScalableRef{Kind: "Deployment", Name: "web"}, Percentage: ptr.To[int32](50)})

	for _, c := range []struct {
		cb      *autoscalingv1beta1.CapacityBuffer
		reason  string
		message string
	}{
		{missing, capacitybuffer.ReasonPodTemplateNotFound, "spec.podTemplateRef"},
		{noDeploy, capacitybuffer.ReasonScalableRefNotFound, "spec.scalableRef"},
		{badKind, capacitybuffer.ReasonResolutionFailed, "spec.scalableRef.apiGroup"},
		{over, capacitybuffer.ReasonResolutionFailed, "spec.percentage"},
	} {
		got := f.condition(c.cb, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionFalse, c.reason)
		cond := apimeta.FindStatusCondition(got.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
		if !strings.Contains(cond.Message, c.message) {
			t.Errorf("%s: message %q does not name %s", c.cb.Name, cond.Message, c.message)
		}
		if got.Status.Replicas != nil {
			t.Errorf("%s: status.replicas %d on a buffer that did not resolve", c.cb.Name, *got.Status.Replicas)
		}
		f.condition(c.cb, autoscalingv1beta1.ConditionProvisioning, metav1.ConditionFalse, capacitybuffer.ReasonNotReadyForProvisioning)
	}

	// 50% of 4 replicas: 2 chunks, shaped by an owned copy of the template.
	pct = f.condition(pct, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue, capacitybuffer.ReasonResolved)
	if pct.Status.Replicas == nil || *pct.Status.Replicas != 2 || pct.Status.PodTemplateRef == nil || pct.Status.PodTemplateRef.Name != "half"+capacitybuffer.TemplateSuffix {
		t.Fatalf("status %+v, want 2 chunks from PodTemplate half%s", pct.Status, capacitybuffer.TemplateSuffix)
	}
	own := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: pct.Status.PodTemplateRef.Name}}
	if err := f.env.Get(own); err != nil || !metav1.IsControlledBy(own, pct) {
		t.Fatalf("owned PodTemplate: %v, owners %+v", err, own.OwnerReferences)
	}
	// Only the good buffer is planned: 2 chunks, 2 NodeClaims.
	f.synced(pct)
	f.synced(over)
	if n := f.provision(); n != 2 {
		t.Errorf("%d NodeClaims created, want 2 (the bad buffers plan nothing)", n)
	}

	// The Deployment scales to 6: 3 chunks.
	if err := f.env.Get(d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To[int32](6)
	if err := f.env.Client.Update(f.env.Context(), d); err != nil {
		t.Fatal(err)
	}
	f.env.Eventually("3 chunks after the scale-up", func() (bool, error) {
		err := f.env.Get(pct)
		return err == nil && pct.Status.Replicas != nil && *pct.Status.Replicas == 3, err
	})

	// The missing template appears: the buffer resolves.
	f.template("later")
	f.condition(missing, autoscalingv1beta1.ConditionReadyForProvisioning, metav1.ConditionTrue, capacitybuffer.ReasonResolved)
}
