package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/cli/snapshot"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

// secrets are values the cluster holds that a snapshot must never carry.
var secrets = []string{
	"ENV_VALUE_abc123", "ARG_VALUE_789", "/bin/secret-server", "regcred-pull-xyz", "db-creds-secret",
	"app-config-map", "hunter2", "CONFIGMAP_VALUE", "SECRET_USERDATA_TOKEN", "ANNOTATION_VALUE_q",
	"SECRET_TAG", "ENV_DS_VALUE", "INIT_ARG_VALUE", "svc-account-x",
}

func readExample[T any](t *testing.T, name string) *T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	obj := new(T)
	if err := yaml.Unmarshal(data, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func secretPodSpec(nodeName string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeName:           nodeName,
		ServiceAccountName: "svc-account-x",
		ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "regcred-pull-xyz"}},
		Tolerations:        []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}},
		InitContainers: []corev1.Container{{
			Name: "init", Image: "registry.example/init:SECRET_TAG", Args: []string{"--seed=INIT_ARG_VALUE"},
		}},
		Containers: []corev1.Container{{
			Name:    "app",
			Image:   "registry.example/private/app:SECRET_TAG",
			Command: []string{"/bin/secret-server"},
			Args:    []string{"--token=ARG_VALUE_789"},
			Env: []corev1.EnvVar{
				{Name: "PLAIN", Value: "ENV_VALUE_abc123"},
				{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds-secret"}, Key: "password"}}},
			},
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config-map"}}}},
			Ports:   []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 18080}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
		}},
		Volumes: []corev1.Volume{
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db-creds-secret"}}},
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config-map"}}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
}

// seed creates a small cluster: a pool and its class (with user data), a
// node, secrets, a bound pod carrying every kind of secret reference, a
// pending pod, a Deployment, a DaemonSet and a PDB.
func seed(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	create := func(o client.Object) {
		t.Helper()
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": "web"}}})
	class := readExample[awsv1.EC2NodeClass](t, "ec2nodeclass.yaml")
	class.Spec.UserData = ptr.To("#!/bin/bash\necho SECRET_USERDATA_TOKEN\n")
	create(class)
	create(readExample[karpv1.NodePool](t, "nodepool-multi-default.yaml"))
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds-secret", Namespace: ns}, StringData: map[string]string{"password": "hunter2"}})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred-pull-xyz", Namespace: ns}, StringData: map[string]string{"auth": "hunter2-pull"}})
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config-map", Namespace: ns}, Data: map[string]string{"K": "CONFIGMAP_VALUE"}})

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "snap-node-1", Labels: map[string]string{
		corev1.LabelInstanceTypeStable: "m5.large", corev1.LabelTopologyZone: "us-east-1a", corev1.LabelArchStable: "amd64",
		corev1.LabelOSStable: "linux", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelHostname: "snap-node-1",
	}, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", karpv1.DoNotDisruptAnnotationKey: "true"}},
		Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/i-0123456789abcdef0",
			Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}}}
	create(node)
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	// The API server taints a new Node not-ready until a kubelet reports;
	// this one stands for a Ready node.
	node.Spec.Taints = node.Spec.Taints[:1]
	if err := c.Update(ctx, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("29")}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"), corev1.ResourceMemory: resource.MustParse("7Gi"), corev1.ResourcePods: resource.MustParse("29")}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.9.8.7"}}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatal(err)
	}

	labels := map[string]string{"app": "web"}
	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: labels,
		Annotations:     map[string]string{karpv1.DoNotDisruptAnnotationKey: "true", "example.com/note": "ANNOTATION_VALUE_q"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d5f", UID: "0b0e5c1e-0000-4000-8000-000000000001", Controller: ptr.To(true)}},
	}, Spec: secretPodSpec("snap-node-1")}
	create(bound)
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch-1", Namespace: ns, Labels: map[string]string{"app": "batch"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/batch:SECRET_TAG",
			Env:       []corev1.EnvVar{{Name: "X", Value: "ENV_VALUE_abc123"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	create(pending)
	// Two pending pods that tolerate the node's taint: 1 CPU fits beside
	// web-1 (500m) and the agent (100m) on 1930m; 1.5 CPU only fits if web-1
	// were not counted.
	for name, cpu := range map[string]string{"fits-1": "1", "nofit-1": "1500m"} {
		create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{Tolerations: bound.Spec.Tolerations, Containers: []corev1.Container{{Name: "main", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}})
	}

	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: secretPodSpec("")}
	create(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](5), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}})
	dsLabels := map[string]string{"app": "agent"}
	dsSpec := secretPodSpec("")
	dsSpec.Containers[0].Env = []corev1.EnvVar{{Name: "DS", Value: "ENV_DS_VALUE"}}
	dsSpec.Containers[0].Ports = nil
	dsSpec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	create(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: dsLabels}, Spec: dsSpec}}})
	create(&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}}})
}

// withoutKinds drops the documents of the given kinds from a YAML stream.
func withoutKinds(data []byte, kinds ...string) []byte {
	var out bytes.Buffer
	for doc := range strings.SplitSeq(string(data), "\n---\n") {
		var tm metav1.TypeMeta
		_ = yaml.Unmarshal([]byte(doc), &tm)
		if slices.Contains(kinds, tm.Kind) {
			continue
		}
		out.WriteString(doc)
		out.WriteString("\n---\n")
	}
	return out.Bytes()
}

// TestSnapshotWritesSimulateInputWithoutSecrets seeds the real control
// plane, runs the command with its kubeconfig and small pages, and checks
// the file: no secret, env, arg or pull-secret value in it, no Deployment,
// the scheduling fields kept, and simulate reads and plans it.
func TestSnapshotWritesSimulateInputWithoutSecrets(t *testing.T) {
	c, err := client.New(cp.RESTConfig(), client.Options{Scheme: controllerstest.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	seed(t, c, "snap")
	out := filepath.Join(t.TempDir(), "cluster.yaml")
	var stdout, stderr bytes.Buffer
	cmd := snapshot.NewCmd(nil)
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "-o", out, "--page-size", "2"})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("snapshot: %v\n%s", err, stderr.String())
	}
	t.Logf("stderr:\n%s", stderr.String())
	if stdout.Len() != 0 {
		t.Errorf("with -o FILE nothing goes to stdout, got %q", stdout.String())
	}
	if !strings.Contains(stderr.String(), "snapshot: Namespaces: 2 read...") {
		t.Errorf("stderr lacks the per-page progress of a paged list:\n%s", stderr.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if d := os.Getenv("SNAPSHOT_TEST_KEEP"); d != "" {
		_ = os.WriteFile(d, data, 0o644)
	}
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("the snapshot contains %q", s)
		}
	}
	for _, s := range []string{"10.9.8.7", "node.alpha.kubernetes.io/ttl", "example.com/note"} {
		if strings.Contains(text, s) {
			t.Errorf("the snapshot contains %q, which scheduling does not need", s)
		}
	}

	kinds := simulate.Kinds()
	input := data
	if !slices.Contains(kinds, "PodDisruptionBudget") {
		// simulate's reader does not know PDBs yet: check they are
		// written, and read the rest.
		if !strings.Contains(text, "kind: PodDisruptionBudget") || !strings.Contains(text, "maxUnavailable: 1") {
			t.Errorf("the PDB is missing from the snapshot")
		}
		input = withoutKinds(data, "PodDisruptionBudget")
		t.Log("pkg/simulate does not read PodDisruptionBudget yet: read without it")
	}
	m := &simulate.Manifests{}
	if err := m.Read(out, input); err != nil {
		t.Fatalf("simulate cannot read the snapshot: %v", err)
	}
	if len(m.Deployments) != 0 || len(m.ReplicaSets) != 0 {
		t.Errorf("the snapshot holds %d Deployments and %d ReplicaSets; want none", len(m.Deployments), len(m.ReplicaSets))
	}
	if len(m.NodePools) != 1 || len(m.NodeClasses) != 1 || len(m.Nodes) != 1 || len(m.DaemonSets) != 1 {
		t.Fatalf("read %d NodePools, %d EC2NodeClasses, %d Nodes, %d DaemonSets; want 1 each", len(m.NodePools), len(m.NodeClasses), len(m.Nodes), len(m.DaemonSets))
	}
	if m.NodeClasses[0].Spec.UserData != nil {
		t.Error("the EC2NodeClass kept its userData")
	}
	var web *corev1.Pod
	for _, p := range m.Pods {
		if p.Namespace == "snap" && p.Name == "web-1" {
			web = p
		}
	}
	if web == nil {
		t.Fatalf("pod snap/web-1 is not in the snapshot")
	}
	ctr := web.Spec.Containers[0]
	switch {
	case web.Spec.NodeName != "snap-node-1":
		t.Errorf("web-1 nodeName = %q", web.Spec.NodeName)
	case len(web.OwnerReferences) != 1 || web.OwnerReferences[0].Kind != "ReplicaSet":
		t.Errorf("web-1 owner references = %v; want its ReplicaSet", web.OwnerReferences)
	case web.Annotations[karpv1.DoNotDisruptAnnotationKey] != "true":
		t.Errorf("web-1 lost its do-not-disrupt annotation: %v", web.Annotations)
	case ctr.Resources.Requests.Cpu().MilliValue() != 500 || len(ctr.Ports) != 1 || ctr.Ports[0].HostPort != 18080:
		t.Errorf("web-1 container = %+v; want its requests and host port", ctr)
	case !slices.ContainsFunc(web.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == "dedicated" }) || len(web.Spec.Volumes) != 1 || web.Spec.Volumes[0].Name != "scratch":
		t.Errorf("web-1 tolerations %v, volumes %v; want the toleration and only the emptyDir", web.Spec.Tolerations, web.Spec.Volumes)
	case web.Status.Phase != corev1.PodPending:
		t.Errorf("web-1 phase = %q", web.Status.Phase)
	}

	res, err := simulate.Run(m, simulate.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatalf("simulate on the snapshot: %v", err)
	}
	onNode := map[string][]string{}
	for _, n := range res.ExistingNodes {
		onNode[n.Name] = n.Pods
	}
	if got := onNode["snap-node-1"]; !slices.Equal(got, []string{"snap/fits-1"}) {
		t.Errorf("simulate puts %v on snap-node-1; want only snap/fits-1 (web-1 and the agent's pod counted, the taint kept)", got)
	}
	onNew := map[string]bool{}
	for _, nc := range res.NodeClaims {
		for _, p := range nc.Pods {
			onNew[p] = true
		}
	}
	if !onNew["snap/batch-1"] || !onNew["snap/nofit-1"] {
		t.Errorf("simulate does not put snap/batch-1 and snap/nofit-1 on new nodes: %+v, unschedulable %+v", res.NodeClaims, res.Unschedulable)
	}
}

// TestSnapshotMissingKubeconfig: a --kubeconfig that does not exist is bad
// input (exit 2) naming the path.
func TestSnapshotMissingKubeconfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope", "kubeconfig")
	cmd := snapshot.NewCmd(nil)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--kubeconfig", missing})
	err := cmd.ExecuteContext(context.Background())
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(fmtErr(err), missing) {
		t.Fatalf("err = %v (exit %d); want exit 2 naming %s", err, cmdutil.ExitCode(err), missing)
	}
}

// TestSnapshotInterrupted: a cancelled context (Ctrl-C, SIGTERM) stops the
// read with an error and writes no file.
func TestSnapshotInterrupted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "cluster.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stderr bytes.Buffer
	err := snapshot.Run(ctx, &snapshot.Options{Kubeconfig: cp.KubeconfigPath(), Output: out, PageSize: 1,
		Stdout: &bytes.Buffer{}, Stderr: &stderr, Now: timeNow})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || cmdutil.ExitCode(err) != cmdutil.ExitError {
		t.Fatalf("err = %v; want an interrupted error with exit 1", err)
	}
	if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
		t.Errorf("an interrupted snapshot wrote %s", out)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 0 {
		t.Errorf("an interrupted snapshot left files: %v", entries)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
