package controlplane_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// spreadProfile is a KubeSchedulerConfiguration shaped as kind clusters
// are given one: a kubeconfig path that does not exist here, and a second
// profile with PodTopologySpread defaults.
const spreadProfile = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: /etc/kubernetes/scheduler.conf
profiles:
  - schedulerName: default-scheduler
  - schedulerName: topology-spread-defaults
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultingType: List
          defaultConstraints:
            - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule}
`

func TestSchedulerConfigFor(t *testing.T) {
	out, err := controlplane.SchedulerConfigFor([]byte(spreadProfile), "/run/kc")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ClientConnection struct {
			Kubeconfig string  `json:"kubeconfig"`
			QPS        float64 `json:"qps"`
		} `json:"clientConnection"`
		LeaderElection struct {
			LeaderElect *bool `json:"leaderElect"`
		} `json:"leaderElection"`
		Profiles []struct {
			SchedulerName string `json:"schedulerName"`
			PluginConfig  []struct {
				Name string `json:"name"`
				Args struct {
					DefaultConstraints []corev1.TopologySpreadConstraint `json:"defaultConstraints"`
				} `json:"args"`
			} `json:"pluginConfig"`
		} `json:"profiles"`
	}
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ClientConnection.Kubeconfig != "/run/kc" || doc.ClientConnection.QPS != 500 {
		t.Errorf("clientConnection %+v, want the control plane's kubeconfig and rate", doc.ClientConnection)
	}
	if le := doc.LeaderElection.LeaderElect; le == nil || *le {
		t.Errorf("leaderElect %v, want false", le)
	}
	if len(doc.Profiles) != 2 || doc.Profiles[1].SchedulerName != "topology-spread-defaults" ||
		len(doc.Profiles[1].PluginConfig) != 1 || len(doc.Profiles[1].PluginConfig[0].Args.DefaultConstraints) != 1 {
		t.Errorf("profiles not kept: %s", out)
	}
	for _, bad := range []string{"kind: Pod\napiVersion: v1\n", "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n", "[", "null"} {
		if _, err := controlplane.SchedulerConfigFor([]byte(bad), "/run/kc"); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if def, err := controlplane.SchedulerConfigFor(nil, "/run/kc"); err != nil || !strings.Contains(string(def), `"/run/kc"`) {
		t.Errorf("built-in configuration: %s, %v", def, err)
	}
}

// TestSchedulerRunsTheGivenProfiles: kube-scheduler started with
// Options.SchedulerConfig serves its profiles: a pod asking for the
// topology-spread-defaults scheduler is tried (and, with no node, marked
// unschedulable), which no scheduler does for an unknown name.
func TestSchedulerRunsTheGivenProfiles(t *testing.T) {
	c, err := controlplane.Start(t.Context(), controlplane.Options{SkipCRDs: true, Scheduler: true, SchedulerConfig: []byte(spreadProfile)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "spread"},
		Spec: corev1.PodSpec{SchedulerName: "topology-spread-defaults",
			Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	ctx := t.Context()
	// The default namespace may not exist for a moment after start.
	poll.Until(t, time.Minute, 100*time.Millisecond, "the pod created", func() (bool, error) {
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		return err == nil, nil
	})
	poll.Until(t, time.Minute, 100*time.Millisecond, "the topology-spread-defaults scheduler to try the pod", func() (bool, error) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, "spread", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
				return true, nil
			}
		}
		return false, nil
	})
}
