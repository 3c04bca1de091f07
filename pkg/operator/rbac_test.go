package operator_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider/fake"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// serviceAccount is the identity config/rbac binds.
const serviceAccount = "system:serviceaccount:kube-system:dovetail"

// TestRBACIsEnoughAndNoMore applies config/rbac, runs the operator as the
// ServiceAccount it binds, and checks that a whole NodeClaim life works
// (launch, registration, drain through a PDB, termination, node class
// status and finalizer, events, leader election) while anything outside
// the role is forbidden.
func TestRBACIsEnoughAndNoMore(t *testing.T) {
	ctx := context.Background()
	dir, err := filepath.Abs(filepath.Join("..", "..", "config", "rbac"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := cp.Kubectl(ctx, "apply", "-f", dir).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply -f config/rbac: %v\n%s", err, out)
	}
	saConfig, err := cp.RESTConfigFor(serviceAccount, "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}

	env := controllerstest.New(t, cp.RESTConfig())
	env.StartKubelet(controllerstest.KubeletOptions{})
	ns := env.Namespace()
	class := controllerstest.EC2NodeClass("default")
	env.Create(class)
	env.Create(controllerstest.NodePool("team-a"))
	opts := testOptions(operator.DefaultLeaseName) // the Role allows only this lease
	// With SCHEDULER_CONFIG the planners also read Services and the pods'
	// controllers.
	opts.Peer.SchedulerConfig = "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]}"
	r := start(t, env, saConfig, opts)
	env.Eventually("leadership", func() (bool, error) { return elected(r.op), nil })

	env.Eventually("the node class to be resolved and held by a finalizer", func() (bool, error) {
		err := env.Get(class)
		return class.IsTrue(awsv1.ConditionTypeReady) && len(class.Finalizers) == 1, err
	})
	nc := readyNodeClaim(t, env, controllerstest.NodeClaim("rbac", "team-a"))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}
	pod := controllerstest.Pod(ns, "web", node.Name)
	env.Create(pod)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MinAvailable: ptr.To(intstr.FromInt32(0)),
		},
	}
	env.Create(pdb)
	env.Eventually("the pod to run", func() (bool, error) {
		err := env.Get(pod)
		return pod.Status.Phase == corev1.PodRunning, err
	})

	env.Delete(node)
	env.Eventually("pod, node and NodeClaim to be gone", func() (bool, error) {
		for _, o := range []client.Object{pod, node, nc} {
			if gone, err := env.NotFound(o); !gone || err != nil {
				return false, err
			}
		}
		return true, nil
	})
	env.EventuallyEventAbout(pod, "Evicted")
	if n := len(env.Cloud.Instances()); n != 0 {
		t.Fatalf("%d instances left", n)
	}
	env.Delete(class)
	env.Eventually("the node class to be released", func() (bool, error) { return env.NotFound(class) })

	// NodeOverlays are read and marked (nodeoverlay.status; the gate is off here).
	overlay := &karpv1alpha1.NodeOverlay{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac"},
		Spec: karpv1alpha1.NodeOverlaySpec{
			Requirements: []karpv1alpha1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: "In", Values: []string{"arm64"}}},
			Price:        ptr.To("0.01"),
		},
	}
	env.Create(overlay)
	env.Eventually("the overlay marked Ready=False", func() (bool, error) {
		err := env.Get(overlay)
		c := overlay.GetCondition(karpv1alpha1.ConditionTypeReady)
		return c != nil && c.Status == metav1.ConditionFalse, err
	})

	if logs := r.logs.String(); strings.Contains(strings.ToLower(logs), "forbidden") {
		t.Errorf("the operator hit a forbidden request:\n%s", grep(logs, "forbidden"))
	}

	// And no more than that.
	sa, err := client.New(saConfig, client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	saWatch, err := client.NewWithWatch(saConfig, client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// What the default spreads' selectors are deduced from is readable
	// (list, and watch through the cache).
	for _, l := range []client.ObjectList{&corev1.ServiceList{}, &corev1.ReplicationControllerList{}, &appsv1.ReplicaSetList{}, &appsv1.StatefulSetList{}} {
		if err := sa.List(ctx, l); err != nil {
			t.Errorf("list %T as %s: %v", l, serviceAccount, err)
		}
		w, err := saWatch.Watch(ctx, l)
		if err != nil {
			t.Errorf("watch %T as %s: %v", l, serviceAccount, err)
			continue
		}
		w.Stop()
	}
	forbidden := []struct {
		name string
		call func() error
	}{
		{"list secrets", func() error { return sa.List(ctx, &corev1.SecretList{}) }},
		{"create a NodePool", func() error { return sa.Create(ctx, controllerstest.NodePool("sneaky")) }},
		{"delete a namespace", func() error {
			return sa.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}},
		{"create a pod", func() error { return sa.Create(ctx, controllerstest.Pod(ns, "sneaky", "")) }},
		{"delete a NodePool", func() error {
			return sa.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, client.DryRunAll)
		}},
	}
	for _, f := range forbidden {
		if err := f.call(); !apierrors.IsForbidden(err) {
			t.Errorf("%s as %s: %v, want Forbidden", f.name, serviceAccount, err)
		}
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestLeaseOutsideTheRoleIsRefused: a lease the Role does not name fails
// start-up with a message naming the flags, and the Role rendered for that
// lease lets the same identity through.
func TestLeaseOutsideTheRoleIsRefused(t *testing.T) {
	ctx := context.Background()
	apply := func(manifests []byte) {
		t.Helper()
		cmd := cp.Kubectl(ctx, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(string(manifests))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	apply(rbac.Manifests())
	saConfig, err := cp.RESTConfigFor(serviceAccount, "system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated")
	if err != nil {
		t.Fatal(err)
	}
	deps := operator.Deps{Cloud: func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
		return operator.Cloud{Provider: fake.New()}, nil
	}, LogOutput: io.Discard}
	opts := testOptions("elsewhere-lease")
	_, err = operator.New(ctx, saConfig, opts, deps)
	if err == nil || !strings.Contains(err.Error(), "--leader-election-name=elsewhere-lease") || !strings.Contains(err.Error(), "update leases/elsewhere-lease") {
		t.Fatalf("operator.New with a lease outside the Role: %v, want an error naming the flag and the denied verb", err)
	}
	// The Role rendered for that lease (in its own namespace) allows it.
	if out, err := cp.Kubectl(ctx, "create", "namespace", "leases").CombinedOutput(); err != nil && !strings.Contains(string(out), "AlreadyExists") {
		t.Fatalf("%v\n%s", err, out)
	}
	rendered, err := rbac.Render(rbac.Params{LeaseName: "elsewhere-lease", LeaseNamespace: "leases"})
	if err != nil {
		t.Fatal(err)
	}
	apply(rendered)
	opts.LeaderElection.Namespace = "leases"
	if _, err := operator.New(ctx, saConfig, opts, deps); err != nil {
		t.Fatalf("operator.New with the Role rendered for its lease: %v", err)
	}
}
