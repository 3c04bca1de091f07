package podmetrics_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controllers/podmetrics"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/metrics/metricstest"
)

// TestPodStateAndStartup follows a pod from creation to ready on a
// managed node, with the test playing the kubelet: karpenter_pods_state
// carries the pod's and the node's labels at each step, and the startup
// (creation to Ready's transition, 7 s) is observed once, not again on
// later updates.
func TestPodStateAndStartup(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ctrl := podmetrics.NewController(env.Metrics)
	env.Start(ctrl)
	ns := env.Namespace()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: env.Prefix + "-node", Labels: map[string]string{
		karpv1.NodePoolLabelKey: "team-a", corev1.LabelTopologyZone: "us-west-2a", corev1.LabelArchStable: "arm64",
		karpv1.CapacityTypeLabelKey: "spot", corev1.LabelInstanceTypeStable: "m7g.large",
	}}}
	env.Create(node)
	pod := controllerstest.Pod(ns, "web", "")
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9", UID: "u1"}}
	env.Create(pod)

	state := func(want prometheus.Labels) func() (bool, error) {
		return func() (bool, error) {
			if n := metricstest.Count(metricstest.With(env.Metrics.PodsState, want)); n != 1 {
				return false, fmt.Errorf("%d series with %v", n, want)
			}
			return true, nil
		}
	}
	env.Eventually("the pending pod's state", state(prometheus.Labels{
		metrics.LabelName: "web", metrics.LabelNamespace: ns, metrics.LabelOwner: "/apis/apps/v1/namespaces/" + ns + "/replicasets/web-7d9",
		metrics.LabelNode: "", metrics.LabelScheduled: "false", metrics.LabelNodePool: "", metrics.LabelPhase: "Pending",
		metrics.LabelReady: "false", metrics.LabelManaged: "false",
	}))
	env.Eventually("the pod seen pending", func() (bool, error) { return ctrl.Waiting(ns, "web"), nil })

	// The scheduler binds it; the kubelet runs it and reports it ready
	// 7 s after its creation.
	if err := env.Client.SubResource("binding").Create(env.Context(), pod, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
	}); err != nil {
		t.Fatal(err)
	}
	if err := env.Get(pod); err != nil {
		t.Fatal(err)
	}
	readyAt := metav1.NewTime(pod.CreationTimestamp.Add(7 * time.Second))
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: readyAt})
	if err := env.Client.Status().Update(env.Context(), pod); err != nil {
		t.Fatal(err)
	}
	env.Eventually("the running pod's state", state(prometheus.Labels{
		metrics.LabelName: "web", metrics.LabelNode: node.Name, metrics.LabelScheduled: "true", metrics.LabelNodePool: "team-a",
		metrics.LabelZone: "us-west-2a", metrics.LabelArch: "arm64", metrics.LabelCapacityType: "spot",
		metrics.LabelInstanceType: "m7g.large", metrics.LabelPhase: "Running", metrics.LabelReady: "true", metrics.LabelManaged: "true",
	}))
	env.Eventually("the startup observed", func() (bool, error) {
		return metricstest.Value(t, env.Metrics.PodsStartupDuration) == 1, nil
	})
	if sum := summarySum(t, env.Metrics); sum != 7 {
		t.Errorf("startup observed %v s, want 7", sum)
	}

	// A later update (a label) is not a second startup.
	pod.Labels["version"] = "2"
	if err := env.Client.Update(env.Context(), pod); err != nil {
		t.Fatal(err)
	}
	env.Eventually("the updated pod's state", state(prometheus.Labels{metrics.LabelName: "web", metrics.LabelReady: "true"}))
	if n := metricstest.Value(t, env.Metrics.PodsStartupDuration); n != 1 {
		t.Errorf("%v startups observed, want 1", n)
	}

	// A deleted pod's series goes with it.
	if err := env.Client.Delete(env.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	env.Eventually("the deleted pod's series to go", func() (bool, error) {
		return metricstest.Count(metricstest.With(env.Metrics.PodsState, prometheus.Labels{metrics.LabelNamespace: ns})) == 0, nil
	})
}

// TestAPodThatEndsUnreadyIsNoStartup: a pod that fails without ever being
// ready is forgotten, not observed.
func TestAPodThatEndsUnreadyIsNoStartup(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ctrl := podmetrics.NewController(env.Metrics)
	env.Start(ctrl)
	pod := controllerstest.Pod(env.Namespace(), "job", "")
	env.Create(pod)
	env.Eventually("the pod seen pending", func() (bool, error) { return ctrl.Waiting(pod.Namespace, pod.Name), nil })
	pod.Status.Phase = corev1.PodFailed
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	if err := env.Client.Status().Update(env.Context(), pod); err != nil {
		t.Fatal(err)
	}
	env.Eventually("the failed pod forgotten", func() (bool, error) { return !ctrl.Waiting(pod.Namespace, pod.Name), nil })
	if n := metricstest.Value(t, env.Metrics.PodsStartupDuration); n != 0 {
		t.Errorf("%v startups observed, want 0", n)
	}
}

func summarySum(t *testing.T, reg *metrics.Registry) float64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "karpenter_pods_startup_duration_seconds" {
			return f.GetMetric()[0].GetSummary().GetSampleSum()
		}
	}
	t.Fatal("no karpenter_pods_startup_duration_seconds in the scrape")
	return 0
}
