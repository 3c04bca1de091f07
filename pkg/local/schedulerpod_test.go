package local_test

import (
	"github.com/go-logr/logr"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/local"
)

func TestSchedulerPodIsWhatThePeersSuiteLooksFor(t *testing.T) {
	p := local.SchedulerPod(local.SystemNodeName)
	if p.Namespace != "kube-system" || p.Name != "kube-scheduler-"+local.SystemNodeName || p.Labels["component"] != "kube-scheduler" {
		t.Errorf("pod %s/%s labels %v", p.Namespace, p.Name, p.Labels)
	}
	c := p.Spec.Containers[0]
	if !slices.Contains(c.Command, "--config=/etc/kubernetes/karpenter-scheduler-config/kube-scheduler-config.yaml") {
		t.Errorf("command %v does not name the peer's mount path", c.Command)
	}
	if p.Spec.NodeName != local.SystemNodeName {
		t.Errorf("bound to %q", p.Spec.NodeName)
	}
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].HostPath == nil || p.Spec.Volumes[0].HostPath.Path != "/etc/kubernetes/karpenter-scheduler-config" ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != p.Spec.Volumes[0].HostPath.Path {
		t.Errorf("volumes %+v mounts %+v", p.Spec.Volumes, c.VolumeMounts)
	}
	n := local.SystemNode()
	for _, taint := range n.Spec.Taints {
		tolerated := slices.ContainsFunc(p.Spec.Tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(logr.Discard(), &taint, false) })
		if !tolerated {
			t.Errorf("the pod does not tolerate the system node's taint %v", taint)
		}
	}
	if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == "CriticalAddonsOnly" && t.Value == "true" && t.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("system node taints %v", n.Spec.Taints)
	}
}

// TestUpWithSchedulerConfig: `local up --scheduler-config` shows the
// scheduler's Pod, running (kwok) on the tainted system Node, and refuses
// a file that is not a KubeSchedulerConfiguration.
func TestUpWithSchedulerConfig(t *testing.T) {
	if errs := (local.Options{SchedulerConfig: "testdata/manifests"}).Validate(); len(errs) != 1 || !strings.Contains(errs[0].Field, "schedulerConfig") {
		t.Errorf("Validate with a directory as the scheduler config: %v", errs)
	}
	s, err := local.Up(t.Context(), local.Options{Dir: t.TempDir(), SchedulerConfig: "testdata/scheduler/kube-scheduler-config.yaml", Progress: tlog{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs := kubernetes.NewForConfigOrDie(s.ControlPlane().RESTConfig())
	node, err := cs.CoreV1().Nodes().Get(t.Context(), local.SystemNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the system Node: %v", err)
	}
	if len(node.Spec.Taints) == 0 || node.Spec.Taints[0].Key != "CriticalAddonsOnly" {
		t.Errorf("system Node taints %v", node.Spec.Taints)
	}
	poll.Until(t, time.Minute, 200*time.Millisecond, "the kube-scheduler Pod running", func() (bool, error) {
		pods, err := cs.CoreV1().Pods("kube-system").List(t.Context(), metav1.ListOptions{LabelSelector: "component=kube-scheduler"})
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		p := pods.Items[0]
		return p.Spec.NodeName == local.SystemNodeName && p.Status.Phase == corev1.PodRunning &&
			strings.Contains(strings.Join(p.Spec.Containers[0].Command, " "), local.SchedulerConfigPath), nil
	})
}
