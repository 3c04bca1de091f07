package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/engine"
)

// TestInsufficientCapacityOnTheCheapestOfferings: the instance types the
// plan would launch (the cheapest that hold the pods, as `dovetail
// simulate` plans them) run out of spot capacity in every zone; the pods
// still end Running, on the next choice, and none of the refused types is
// launched.
func TestInsufficientCapacityOnTheCheapestOfferings(t *testing.T) {
	s := newScenario(t)
	mutate := func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
	}
	// Plan the same Deployment offline to learn the cheapest choice.
	d := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}
	d.Name = "web"
	d.Spec.Replicas = ptrTo(int32(20))
	d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d.Spec.Template.Labels = map[string]string{"app": "web"}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}
	mutate(d)
	data, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	plan := simulatePlan(t, file)
	refused := map[string]bool{}
	for _, nc := range plan.NodeClaims {
		if nc.CapacityType != karpv1.CapacityTypeSpot {
			t.Fatalf("the plan launches %s %s; this test expects the arm64 spot pool", nc.InstanceType, nc.CapacityType)
		}
		refused[nc.InstanceType] = true
	}
	for it := range refused {
		emu().InjectICE(it, "", karpv1.CapacityTypeSpot)
	}
	t.Logf("refusing spot capacity for %v", keys(refused))

	s.deployment("web", 20, "500m", "1Gi", mutate)
	s.waitRunning(20, 3*time.Minute)
	for _, in := range liveInstances() {
		if refused[in.InstanceType] {
			t.Errorf("instance %s was launched as %s, which has no capacity", in.ID, in.InstanceType)
		}
	}
	if err := consistent(t); err != nil {
		t.Error(err)
	}
}

// TestDeleteNodeClaimAndNode: `kubectl delete nodeclaim X` and `kubectl
// delete node Y` both drain gracefully (pods evicted, then Running
// elsewhere) and end with the instance terminated.
func TestDeleteNodeClaimAndNode(t *testing.T) {
	s := newScenario(t)
	s.pool("deletion", nil)
	s.deployment("web", 3, "500m", "512Mi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"e2e": "deletion"}
		d.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			}},
		}}
	})
	s.waitRunning(3, 2*time.Minute)

	for _, kind := range []string{"nodeclaim", "node"} {
		t.Run("kubectl delete "+kind, func(t *testing.T) {
			node, nc := s.busiestNode("web")
			var victimPods corev1.PodList
			if err := kube.List(s.ctx, &victimPods, client.InNamespace(s.ns), client.MatchingFields{"spec.nodeName": node}); err != nil {
				t.Fatal(err)
			}
			name := nc.Name
			if kind == "node" {
				name = node
			}
			out, err := stk.ControlPlane().Kubectl(s.ctx, "delete", kind, name, "--wait=false").CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl delete %s %s: %v: %s", kind, name, err, out)
			}
			id := instanceID(nc.Status.ProviderID)
			eventually(t, 2*time.Minute, "NodeClaim and node gone, instance terminated", func() (bool, error) {
				claimGone, err := notFound(&karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: nc.Name}})
				if err != nil {
					return false, err
				}
				nodeGone, err := notFound(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
				if err != nil {
					return false, err
				}
				return claimGone && nodeGone && instanceGone(id), nil
			})
			s.waitRunning(3, 2*time.Minute)
			for _, p := range victimPods.Items {
				if evs := awaitEvents(t, 30*time.Second, "Pod", s.ns, p.Name, "Evicted"); len(evs) == 0 {
					t.Errorf("pod %s on the deleted %s was not evicted by the drain", p.Name, kind)
				}
			}
		})
	}
	if err := consistent(t); err != nil {
		t.Error(err)
	}
}

// TestPodThatNeverFitsMakesOneEventAndNoLaunch: a pod no instance type can
// hold gets one clear event from dovetail and no NodeClaim, however long it
// waits.
func TestPodThatNeverFitsMakesOneEventAndNoLaunch(t *testing.T) {
	s := newScenario(t)
	s.deployment("huge", 1, "2000", "1Gi", nil)
	var pods corev1.PodList
	eventually(t, time.Minute, "the pod created", func() (bool, error) {
		err := kube.List(s.ctx, &pods, client.InNamespace(s.ns))
		return len(pods.Items) == 1, err
	})
	pod := pods.Items[0].Name
	eventually(t, time.Minute, "a FailedScheduling event from dovetail", func() (bool, error) {
		return len(controllerEvents(t, "Pod", s.ns, pod, provisioning.ReasonFailedScheduling)) > 0, nil
	})
	// The kube-scheduler retries the pod meanwhile (each retry updates it);
	// dovetail must stay quiet and launch nothing.
	consistently(t, 8*time.Second, "one event, no NodeClaim", func() (bool, error) {
		evs := controllerEvents(t, "Pod", s.ns, pod, provisioning.ReasonFailedScheduling)
		return len(evs) == 1 && len(nodeClaims(t)) == 0, nil
	})
	ev := controllerEvents(t, "Pod", s.ns, pod, provisioning.ReasonFailedScheduling)[0]
	if !strings.Contains(ev.Note, string(engine.ResourcesExceedAllTypes)) || !strings.Contains(ev.Note, "cpu") {
		t.Errorf("the event does not say why: %q", ev.Note)
	}
}

// TestNodePoolLimitStopsScaleUp: a NodePool's cpu limit caps the capacity
// launched for it, and the NodePool gets an event saying so.
func TestNodePoolLimitStopsScaleUp(t *testing.T) {
	s := newScenario(t)
	limit := resource.MustParse("8")
	np := s.pool("limited", func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: limit}
	})
	s.deployment("web", 12, "1", "1Gi", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"e2e": "limited"}
	})
	eventually(t, 2*time.Minute, "an event on the NodePool", func() (bool, error) {
		return len(controllerEvents(t, "NodePool", "", np.Name, provisioning.ReasonLimitReached)) > 0, nil
	})
	eventually(t, 2*time.Minute, "every NodeClaim launched", func() (bool, error) {
		for _, nc := range nodeClaims(t) {
			if !nc.IsTrue(karpv1.ConditionTypeLaunched) {
				return false, nil
			}
		}
		return true, nil
	})
	// Some pods run, the rest wait; the launched capacity stays within the
	// limit, and no more is launched while they wait.
	consistently(t, 5*time.Second, "capacity within the limit", func() (bool, error) {
		var total resource.Quantity
		for _, nc := range nodeClaims(t) {
			total.Add(nc.Status.Capacity[corev1.ResourceCPU])
		}
		return total.Cmp(limit) <= 0, nil
	})
	running, pending, err := s.running()
	if err != nil {
		t.Fatal(err)
	}
	if running == 0 || pending == 0 {
		t.Errorf("%d running and %d pending; want the limit to let some run and stop the rest", running, pending)
	}
	if evs := controllerEvents(t, "NodePool", "", np.Name, provisioning.ReasonLimitReached); len(evs) != 1 {
		t.Errorf("%d limit events, want exactly one", len(evs))
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }
