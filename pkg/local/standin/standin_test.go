package standin_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
	"github.com/dovetail-sh/dovetail/pkg/local/standin"
)

var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dovetail-standin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "dovetail")
	build := exec.Command("go", "build", "-o", binary, "../../../cmd/dovetail")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dovetail: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

func TestSetRefusesBadValues(t *testing.T) {
	for _, bad := range []string{"karpenter", "/karpenter", "kube-system/", "Kube_System/karpenter", "kube-system/" + strings.Repeat("a", 250)} {
		var c standin.Component
		if err := c.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
		if c.Enabled() {
			t.Errorf("Set(%q) enabled the component", bad)
		}
	}
	var c standin.Component
	if err := c.Set("kube-system/karpenter"); err != nil || c.String() != "kube-system/karpenter" || c.LeaseName() != "karpenter-leader-election" {
		t.Fatalf("Set: %v, %q, %q", err, c.String(), c.LeaseName())
	}
}

func TestStartWithoutAControllerIsRefused(t *testing.T) {
	c := &standin.Component{Namespace: "kube-system", Deployment: "karpenter", Controller: &ctrlproc.Component{None: true}}
	err := c.Start(t.Context(), stack.Env{})
	if err == nil || !strings.Contains(err.Error(), "--controller-replicas") {
		t.Fatalf("want a refusal naming --controller-replicas, got %v", err)
	}
}

// processEnv reads a running process's environment.
func processEnv(pid int) map[string]string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// TestDeploymentEnvRestartsTheController is what the peer's suites do to
// the controller's Deployment: read its env, override FEATURE_GATES,
// restart the rollout and wait for a new pod to hold the Lease; then
// remove the variable.
func TestDeploymentEnvRestartsTheController(t *testing.T) {
	aws := localaws.New()
	ctrl := &ctrlproc.Component{Binary: binary, RBAC: rbac.Manifests(), Env: map[string]string{"FEATURE_GATES": "NodeRepair=true"}}
	si := &standin.Component{Namespace: "kube-system", Deployment: "karpenter", Controller: ctrl, Poll: 100 * time.Millisecond}
	s, err := stack.Up(t.Context(), stack.Options{Dir: t.TempDir(), Components: []stack.Component{aws, ctrl, si}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cs := kubernetes.NewForConfigOrDie(s.ControlPlane().RESTConfig())
	ctx := t.Context()

	node, err := cs.CoreV1().Nodes().Get(ctx, stack.SystemNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// kube-controller-manager may add node.kubernetes.io/not-ready to a
	// Node no kubelet reports for; the system taint must be there.
	if !slices.Contains(node.Spec.Taints, stack.SystemTaint) {
		t.Fatalf("system node taints %v, want %v among them", node.Spec.Taints, stack.SystemTaint)
	}
	d, err := cs.AppsV1().Deployments("kube-system").Get(ctx, "karpenter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if env := d.Spec.Template.Spec.Containers[0].Env; len(env) != 1 || env[0].Name != "FEATURE_GATES" || env[0].Value != "NodeRepair=true" {
		t.Fatalf("deployment env %v, want FEATURE_GATES=NodeRepair=true", env)
	}

	holder := func() string {
		l, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "karpenter-leader-election", metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
		return name
	}
	readyPods := func() map[string]bool {
		pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: standin.InstanceLabel + "=karpenter"})
		out := map[string]bool{}
		if err != nil {
			return out
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					out[p.Name] = true
				}
			}
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	var first string
	waitFor("the Lease to name the Deployment's ready pod", func() bool {
		h := holder()
		first = h
		return h != "" && readyPods()[h]
	})
	pid := ctrl.Replica(0).PID()

	// Override FEATURE_GATES and restart the rollout, as the suites do.
	patch := func(p map[string]any) {
		t.Helper()
		b, _ := json.Marshal(p)
		if _, err := cs.AppsV1().Deployments("kube-system").Patch(ctx, "karpenter", types.StrategicMergePatchType, b, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const gates = "NodeRepair=true,TerminateFirstDrift=true,TerminateFirstRepair=true"
	patch(map[string]any{"spec": map[string]any{"template": map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{"kubectl.kubernetes.io/restartedAt": time.Now().Format(time.RFC3339)}},
		"spec":     map[string]any{"containers": []map[string]any{{"name": "controller", "env": []map[string]string{{"name": "FEATURE_GATES", "value": gates}}}}},
	}}})
	waitFor("the controller to run with the new FEATURE_GATES", func() bool {
		r := ctrl.Replica(0)
		return r != nil && r.PID() != pid && processEnv(r.PID())["FEATURE_GATES"] == gates
	})
	waitFor("a new pod to hold the Lease", func() bool {
		h := holder()
		return h != "" && h != first && readyPods()[h]
	})

	// Remove the variable: the controller runs without it.
	pid = ctrl.Replica(0).PID()
	d, err = cs.AppsV1().Deployments("kube-system").Get(ctx, "karpenter", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Spec.Template.Spec.Containers[0].Env = nil
	if _, err := cs.AppsV1().Deployments("kube-system").Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the controller to run without FEATURE_GATES", func() bool {
		r := ctrl.Replica(0)
		if r == nil || r.PID() == pid {
			return false
		}
		env := processEnv(r.PID())
		_, has := env["FEATURE_GATES"]
		return env != nil && !has
	})
}
