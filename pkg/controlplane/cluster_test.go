package controlplane_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// deadline bounds every wait for asynchronous cluster behaviour.
const deadline = 60 * time.Second

// eventually polls cond every 100ms until it returns nil or the deadline
// passes, then fails the test with cond's last error.
func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond(ctx)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still not true after %s: %v", what, deadline, err)
		case <-tick.C:
		}
	}
}

func clientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// namespace creates a namespace for one test and deletes it afterwards.
func namespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

func TestServerVersion(t *testing.T) {
	want := pinnedVersions(t)["k8s.io/kubernetes"]
	info, err := clientset(t).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if info.GitVersion != want {
		t.Errorf("server version %q, want %q (tools/go.mod)", info.GitVersion, want)
	}
}

func TestKubectlVersion(t *testing.T) {
	want := pinnedVersions(t)["k8s.io/kubernetes"]
	out, err := cp.Kubectl(t.Context(), "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("kubectl version: %v", err)
	}
	var v struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
		ServerVersion struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, out)
	}
	if v.ClientVersion.GitVersion != want || v.ServerVersion.GitVersion != want {
		t.Errorf("kubectl reports client %q and server %q, want %q for both", v.ClientVersion.GitVersion, v.ServerVersion.GitVersion, want)
	}
}

func TestCRDsInstalled(t *testing.T) {
	out, err := cp.Kubectl(t.Context(), "get", "nodepools,nodeclaims,ec2nodeclasses", "-A").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl get on dovetail's kinds: %v\n%s", err, out)
	}
}

// kwokNode is a Node that exists only on paper; kwok plays its kubelet.
func kwokNode(name string, cpu, memory string) *corev1.Node {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(memory),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}},
		Status:     corev1.NodeStatus{Capacity: rl, Allocatable: rl},
	}
}

// TestWorkloadLifecycle walks a Deployment through the components: the
// controller manager makes its ReplicaSet and pods, the scheduler binds
// them to a kwok Node, kwok runs them, the disruption controller computes
// the PDB status, and the garbage collector removes everything once the
// Deployment is gone.
func TestWorkloadLifecycle(t *testing.T) {
	cs := clientset(t)
	ns := namespace(t, cs)
	const replicas, minAvailable = 3, 2

	node, err := cs.CoreV1().Nodes().Create(t.Context(), kwokNode("kwok-"+ns, "4", "8Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })

	t.Run("node becomes ready and schedulable", func(t *testing.T) {
		eventually(t, "node Ready without the not-ready taint", func(ctx context.Context) error {
			n, err := cs.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			ready := false
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready = true
				}
			}
			if !ready {
				return fmt.Errorf("conditions %v", n.Status.Conditions)
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == corev1.TaintNodeNotReady {
					return fmt.Errorf("still tainted %v", n.Spec.Taints)
				}
			}
			return nil
		})
		eventually(t, "kwok renews the node's lease", func(ctx context.Context) error {
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			return leaseHeld(l)
		})
	})

	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  "web",
						Image: "registry.example/web:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU: resource.MustParse("500m"),
						}},
					}},
					// Stay off nodes other tests create.
					NodeSelector: map[string]string{"kubernetes.io/hostname": node.Name},
				},
			},
		},
	}
	dep, err = cs.AppsV1().Deployments(ns).Create(t.Context(), dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("replicaset owned by the deployment", func(t *testing.T) {
		eventually(t, "a ReplicaSet owned by the Deployment", func(ctx context.Context) error {
			rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			for _, rs := range rss.Items {
				if owner := metav1.GetControllerOf(&rs); owner != nil && owner.UID == dep.UID {
					return nil
				}
			}
			return fmt.Errorf("%d ReplicaSets, none owned by %s", len(rss.Items), dep.UID)
		})
	})

	t.Run("pods scheduled onto the kwok node and running", func(t *testing.T) {
		eventually(t, fmt.Sprintf("%d running pods on %s", replicas, node.Name), func(ctx context.Context) error {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return err
			}
			running := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName == node.Name && p.Status.Phase == corev1.PodRunning && podScheduled(&p) {
					running++
				}
			}
			if running != replicas {
				return fmt.Errorf("%d of %d pods running on %s", running, len(pods.Items), node.Name)
			}
			return nil
		})
		// The binding came from kube-scheduler, which records it as an event.
		eventually(t, "Scheduled events from default-scheduler", func(ctx context.Context) error {
			evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
			if err != nil {
				return err
			}
			n := 0
			for _, e := range evs.Items {
				if e.Source.Component == corev1.DefaultSchedulerName || e.ReportingController == corev1.DefaultSchedulerName {
					n++
				}
			}
			if n < replicas {
				return fmt.Errorf("%d Scheduled events by %s", n, corev1.DefaultSchedulerName)
			}
			return nil
		})
	})

	t.Run("pdb status computed by the disruption controller", func(t *testing.T) {
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
				Selector:     &metav1.LabelSelector{MatchLabels: labels},
			},
		}
		if _, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "PDB status", func(ctx context.Context) error {
			got, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pdb.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s := got.Status
			if s.CurrentHealthy != replicas || s.DesiredHealthy != minAvailable || s.DisruptionsAllowed != replicas-minAvailable || s.ExpectedPods != replicas {
				return fmt.Errorf("status %+v", s)
			}
			return nil
		})
	})

	t.Run("garbage collector removes the deployment's objects", func(t *testing.T) {
		err := cs.AppsV1().Deployments(ns).Delete(t.Context(), dep.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "no ReplicaSets or pods left", func(ctx context.Context) error {
			rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(rss.Items)+len(pods.Items) > 0 {
				return fmt.Errorf("%d ReplicaSets and %d pods remain", len(rss.Items), len(pods.Items))
			}
			return nil
		})
	})
}

func podScheduled(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func leaseHeld(l *coordinationv1.Lease) error {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil {
		return fmt.Errorf("lease %s not held: %+v", l.Name, l.Spec)
	}
	if age := time.Since(l.Spec.RenewTime.Time); age > 40*time.Second {
		return fmt.Errorf("lease %s last renewed %s ago", l.Name, age)
	}
	return nil
}

func TestJobCompletes(t *testing.T) {
	cs := clientset(t)
	ns := namespace(t, cs)
	node, err := cs.CoreV1().Nodes().Create(t.Context(), kwokNode("kwok-"+ns, "2", "4Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "once", Namespace: ns},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					NodeSelector:  map[string]string{"kubernetes.io/hostname": node.Name},
					Containers:    []corev1.Container{{Name: "work", Image: "registry.example/work:1"}},
				},
			},
		},
	}
	if _, err := cs.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Job succeeds", func(ctx context.Context) error {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if j.Status.Succeeded != 1 {
			return fmt.Errorf("status %+v", j.Status)
		}
		return nil
	})
}

// TestIdentities checks that KubeconfigFor and RESTConfigFor authenticate
// as the requested user and groups, and that RBAC, not the certificate,
// decides what they may do.
func TestIdentities(t *testing.T) {
	cs := clientset(t)
	ns := namespace(t, cs)

	t.Run("kubeconfig carries user and groups", func(t *testing.T) {
		kc, err := cp.KubeconfigFor("alice", "dovetail:testers", "team-b")
		if err != nil {
			t.Fatal(err)
		}
		out, err := cp.Kubectl(t.Context(), "--kubeconfig="+kc, "auth", "whoami", "-o", "json").CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl auth whoami: %v\n%s", err, out)
		}
		var review struct {
			Status struct {
				UserInfo struct {
					Username string
					Groups   []string
				} `json:"userInfo"`
			}
		}
		if err := json.Unmarshal(out, &review); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		ui := review.Status.UserInfo
		if ui.Username != "alice" || !contains(ui.Groups, "dovetail:testers") || !contains(ui.Groups, "team-b") || contains(ui.Groups, "system:masters") {
			t.Errorf("whoami = %+v, want alice in dovetail:testers and team-b only (plus system:authenticated)", ui)
		}
	})

	t.Run("rbac decides", func(t *testing.T) {
		cfg, err := cp.RESTConfigFor("bob", "dovetail:readers")
		if err != nil {
			t.Fatal(err)
		}
		bob, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bob.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("listing pods without a binding: err = %v, want Forbidden", err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "readers", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "dovetail:readers"}},
		}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "bob may list pods through his group", func(ctx context.Context) error {
			_, err := bob.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			return err
		})
		_, err = bob.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "nope"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		}, metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("creating a pod with view rights: err = %v, want Forbidden", err)
		}
	})

	t.Run("empty user rejected", func(t *testing.T) {
		if _, err := cp.KubeconfigFor(""); err == nil {
			t.Error("KubeconfigFor(\"\") succeeded")
		}
		if _, err := cp.RESTConfigFor(""); err == nil {
			t.Error("RESTConfigFor(\"\") succeeded")
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
