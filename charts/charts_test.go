package charts_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/internal/testutil/helmbin"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// TestRBACIsConfigRBAC: the chart's RBAC files are config/rbac itself (a
// symbolic link, which helm follows and `helm package` resolves), not a
// copy.
func TestRBACIsConfigRBAC(t *testing.T) {
	target, err := os.Readlink("dovetail/files/rbac")
	if err != nil {
		t.Fatalf("charts/dovetail/files/rbac is not a link to config/rbac: %v", err)
	}
	got, err1 := filepath.Abs(filepath.Join("dovetail/files", target))
	want, err2 := filepath.Abs("../config/rbac")
	if err1 != nil || err2 != nil || got != want {
		t.Errorf("charts/dovetail/files/rbac links to %s, want config/rbac", target)
	}
}

// TestCopiesMatchTheirSource: both charts' CRDs are api/crds', byte for
// byte.
func TestCopiesMatchTheirSource(t *testing.T) {
	pairs := []struct{ src, dst string }{
		{"../api/crds", "dovetail/crds"},
		{"../api/crds", "dovetail-crd/templates"},
	}
	for _, p := range pairs {
		src, _ := filepath.Glob(filepath.Join(p.src, "*.yaml"))
		dst, _ := filepath.Glob(filepath.Join(p.dst, "*.yaml"))
		if len(src) == 0 || len(src) != len(dst) {
			t.Errorf("%s has %d YAML files, %s %d: run `make charts`", p.src, len(src), p.dst, len(dst))
			continue
		}
		for _, f := range src {
			a, _ := os.ReadFile(f)
			b, err := os.ReadFile(filepath.Join(p.dst, filepath.Base(f)))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("%s differs from %s: run `make charts`", filepath.Join(p.dst, filepath.Base(f)), f)
			}
		}
	}
}

// TestHelmUsesToolsKubernetes: tools/helm builds helm with the Kubernetes
// client libraries tools/ pins.
func TestHelmUsesToolsKubernetes(t *testing.T) {
	version := func(gomod, module string) string {
		data, err := os.ReadFile(gomod)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) >= 2 && f[0] == module && !strings.Contains(l, "=>") {
				return f[1]
			}
		}
		t.Fatalf("%s does not require %s", gomod, module)
		return ""
	}
	for _, m := range []string{"k8s.io/client-go", "k8s.io/api", "k8s.io/apimachinery"} {
		if a, b := version("../tools/go.mod", m), version("../tools/helm/go.mod", m); a != b {
			t.Errorf("%s: tools/ pins %s, tools/helm %s", m, a, b)
		}
	}
}

// helm returns the pinned Helm CLI (helmbin.Path).
func helm(t *testing.T) string {
	t.Helper()
	p, err := helmbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runHelm runs helm with args, returning its combined output.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	stdout, stderr, err := runHelmSplit(t, args...)
	return stderr + stdout, err
}

// runHelmSplit runs helm with args, returning stdout and stderr apart
// (helm logs to stderr, e.g. that it followed files/rbac's link).
func runHelmSplit(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := exec.Command(helm(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// rendered are the objects of a `helm template`, by kind.
type rendered struct {
	raw                string
	deployment         *appsv1.Deployment
	serviceAccount     *corev1.ServiceAccount
	service            *corev1.Service
	pdb                *policyv1.PodDisruptionBudget
	clusterRole        *rbacv1.ClusterRole
	clusterRoleBinding *rbacv1.ClusterRoleBinding
	role               *rbacv1.Role
	roleBinding        *rbacv1.RoleBinding
	kinds              []string
}

func template(t *testing.T, args ...string) *rendered {
	t.Helper()
	out, stderr, err := runHelmSplit(t, append([]string{"template", "dovetail", "./dovetail", "--namespace", "kube-system"}, args...)...)
	if err != nil {
		t.Fatalf("helm template %v: %v\n%s%s", args, err, stderr, out)
	}
	return parse(t, out)
}

func parse(t *testing.T, out string) *rendered {
	t.Helper()
	r := &rendered{raw: out}
	for _, doc := range strings.Split(out, "\n---") {
		var head struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("helm template printed invalid YAML: %v\n%s", err, doc)
		}
		if head.Kind == "" {
			continue
		}
		r.kinds = append(r.kinds, head.Kind)
		var target any
		switch head.Kind {
		case "Deployment":
			r.deployment = &appsv1.Deployment{}
			target = r.deployment
		case "ServiceAccount":
			r.serviceAccount = &corev1.ServiceAccount{}
			target = r.serviceAccount
		case "Service":
			r.service = &corev1.Service{}
			target = r.service
		case "PodDisruptionBudget":
			r.pdb = &policyv1.PodDisruptionBudget{}
			target = r.pdb
		case "ClusterRole":
			r.clusterRole = &rbacv1.ClusterRole{}
			target = r.clusterRole
		case "ClusterRoleBinding":
			r.clusterRoleBinding = &rbacv1.ClusterRoleBinding{}
			target = r.clusterRoleBinding
		case "Role":
			r.role = &rbacv1.Role{}
			target = r.role
		case "RoleBinding":
			r.roleBinding = &rbacv1.RoleBinding{}
			target = r.roleBinding
		default:
			continue
		}
		if err := yaml.UnmarshalStrict([]byte(doc), target); err != nil {
			t.Fatalf("%s: %v\n%s", head.Kind, err, doc)
		}
	}
	return r
}

func (r *rendered) env() map[string]string {
	out := map[string]string{}
	for _, e := range r.deployment.Spec.Template.Spec.Containers[0].Env {
		out[e.Name] = e.Value
	}
	return out
}

func (r *rendered) args() []string { return r.deployment.Spec.Template.Spec.Containers[0].Args }

func TestLint(t *testing.T) {
	for _, c := range []string{"./dovetail", "./dovetail-crd"} {
		if out, err := runHelm(t, "lint", "--strict", c, "--set", "settings.clusterName=prod"); err != nil {
			t.Errorf("helm lint %s: %v\n%s", c, err, out)
		}
	}
}

// TestTemplateDefaults renders the chart with only a cluster name and
// checks what the issue asks of it, and that its RBAC is config/rbac's.
func TestTemplateDefaults(t *testing.T) {
	r := template(t, "--set", "settings.clusterName=prod")
	d := r.deployment
	if d == nil || r.serviceAccount == nil || r.service == nil || r.pdb == nil || r.clusterRole == nil ||
		r.clusterRoleBinding == nil || r.role == nil || r.roleBinding == nil {
		t.Fatalf("missing objects; rendered %v", r.kinds)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d, want 2", *d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	env := r.env()
	// The chart's gates are the controller's defaults, every one of them.
	if g, err := operator.ParseFeatureGates(env["FEATURE_GATES"]); err != nil || g.String() != operator.DefaultFeatureGates().String() {
		t.Errorf("FEATURE_GATES=%q (%v), want the controller's defaults %s", env["FEATURE_GATES"], err, operator.DefaultFeatureGates())
	}
	for k, want := range map[string]string{"CLUSTER_NAME": "prod", "BATCH_MAX_DURATION": "10s", "BATCH_IDLE_DURATION": "1s", "LOG_LEVEL": "info"} {
		if env[k] != want {
			t.Errorf("env %s=%q, want %q", k, env[k], want)
		}
	}
	if _, ok := env["INTERRUPTION_QUEUE"]; ok {
		t.Error("INTERRUPTION_QUEUE set without settings.interruptionQueue")
	}
	if _, ok := env["GOMEMLIMIT"]; ok {
		t.Error("GOMEMLIMIT set without controller.goMemLimit")
	}
	if got := template(t, "--set", "settings.clusterName=prod", "--set", "controller.goMemLimit=900MiB").env()["GOMEMLIMIT"]; got != "900MiB" {
		t.Errorf("controller.goMemLimit=900MiB: GOMEMLIMIT=%q", got)
	}
	if c.Image != "ghcr.io/dovetail-sh/dovetail:0.1.0" {
		t.Errorf("image %s, want the repository at the chart's appVersion", c.Image)
	}
	if pod.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "CriticalAddonsOnly" || pod.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v", pod.Tolerations)
	}
	terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || terms[0].MatchExpressions[0].Key != "karpenter.sh/nodepool" || terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpDoesNotExist {
		t.Errorf("node affinity %+v, want karpenter.sh/nodepool DoesNotExist", terms)
	}
	anti := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(anti) != 1 || anti[0].TopologyKey != "kubernetes.io/hostname" || anti[0].LabelSelector == nil ||
		!reflect.DeepEqual(anti[0].LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("pod anti-affinity %+v, want per host over this release's pods", anti)
	}
	tsc := pod.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].TopologyKey != "topology.kubernetes.io/zone" || tsc[0].MaxSkew != 1 ||
		tsc[0].WhenUnsatisfiable != corev1.DoNotSchedule || !reflect.DeepEqual(tsc[0].LabelSelector.MatchLabels, d.Spec.Selector.MatchLabels) {
		t.Errorf("topology spread %+v", tsc)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.ReadOnlyRootFilesystem || !*sc.RunAsNonRoot || *pod.SecurityContext.RunAsUser != 65532 {
		t.Errorf("security context %+v / %+v, want non-root with a read-only root", sc, pod.SecurityContext)
	}
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes %s, %s", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
	}
	if p := r.service.Spec.Ports; len(p) != 1 || p[0].Name != "http-metrics" || p[0].Port != 8080 {
		t.Errorf("service ports %+v", p)
	}
	if r.pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB maxUnavailable %v", r.pdb.Spec.MaxUnavailable)
	}
	if strings.Contains(r.raw, "kind: ServiceMonitor") {
		t.Error("a ServiceMonitor rendered by default")
	}
	checkRBAC(t, r, "kube-system", "dovetail", "dovetail-leader-election")
}

// checkRBAC: the rendered RBAC is config/rbac's, placed for the release,
// and the Role names the lease the controller is told to use.
func checkRBAC(t *testing.T, r *rendered, ns, sa, lease string) {
	t.Helper()
	src, err := rbac.Parse()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.clusterRole.Rules, src.ClusterRole.Rules) {
		t.Errorf("the chart's ClusterRole rules differ from config/rbac/clusterrole.yaml:\nchart %+v\nconfig/rbac %+v", r.clusterRole.Rules, src.ClusterRole.Rules)
	}
	want, err := rbac.Render(rbac.Params{Namespace: ns, Name: sa, LeaseName: lease, LeaseNamespace: argValue(r.args(), "--leader-election-namespace")})
	if err != nil {
		t.Fatal(err)
	}
	wantRole := parse(t, string(want)).role
	if !reflect.DeepEqual(r.role.Rules, wantRole.Rules) || r.role.Namespace != wantRole.Namespace {
		t.Errorf("the chart's Role %s/%+v differs from config/rbac's rendered for the lease: %s/%+v", r.role.Namespace, r.role.Rules, wantRole.Namespace, wantRole.Rules)
	}
	if got := argValue(r.args(), "--leader-election-name"); got != lease {
		t.Errorf("the controller runs with lease %q, the Role names %q", got, lease)
	}
	if r.serviceAccount.Name != sa || r.deployment.Spec.Template.Spec.ServiceAccountName != sa {
		t.Errorf("ServiceAccount %s, pod runs as %s, want %s", r.serviceAccount.Name, r.deployment.Spec.Template.Spec.ServiceAccountName, sa)
	}
	for _, s := range append(r.clusterRoleBinding.Subjects, r.roleBinding.Subjects...) {
		if s.Name != sa || s.Namespace != ns {
			t.Errorf("binding subject %s/%s, want %s/%s", s.Namespace, s.Name, ns, sa)
		}
	}
	if r.clusterRoleBinding.RoleRef.Name != r.clusterRole.Name || r.roleBinding.RoleRef.Name != r.role.Name || r.roleBinding.Namespace != r.role.Namespace {
		t.Error("a binding does not refer to its role")
	}
}

func argValue(args []string, flag string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// TestTemplatePeerValues renders the peer's documented values file shape
// unchanged.
func TestTemplatePeerValues(t *testing.T) {
	r := template(t, "-f", "testdata/peer-values.yaml")
	env := r.env()
	if env["CLUSTER_NAME"] != "prod-cluster" || env["INTERRUPTION_QUEUE"] != "prod-cluster" || env["LOG_LEVEL"] != "debug" ||
		!strings.Contains(env["FEATURE_GATES"], "SpotToSpotConsolidation=true") {
		t.Errorf("env %v", env)
	}
	if got := r.serviceAccount.Annotations["eks.amazonaws.com/role-arn"]; !strings.HasPrefix(got, "arn:aws:iam::111122223333:role/") {
		t.Errorf("the IRSA annotation is %q", got)
	}
	res := r.deployment.Spec.Template.Spec.Containers[0].Resources
	if res.Requests.Cpu().String() != "1" || res.Limits.Memory().String() != "1Gi" {
		t.Errorf("resources %+v", res)
	}
	if r.pdb.Name != "karpenter" {
		t.Errorf("PDB %s, want the name given", r.pdb.Name)
	}
	exprs := r.deployment.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions
	if len(exprs) != 2 || exprs[1].Key != "eks.amazonaws.com/nodegroup" {
		t.Errorf("node affinity %+v, want the values' own", exprs)
	}
}

// TestTemplateLeaseFollowsValues: moving the lease moves its Role.
func TestTemplateLeaseFollowsValues(t *testing.T) {
	r := template(t, "--set", "settings.clusterName=prod", "--set", "leaderElection.name=my-lease", "--set", "leaderElection.namespace=leases")
	if r.role.Namespace != "leases" || r.roleBinding.Namespace != "leases" || argValue(r.args(), "--leader-election-namespace") != "leases" {
		t.Errorf("Role in %s, binding in %s, controller told %v", r.role.Namespace, r.roleBinding.Namespace, r.args())
	}
	checkRBAC(t, r, "kube-system", "dovetail", "my-lease")
}

// TestTemplateRefuses: what the controller cannot do fails rendering,
// naming the value.
func TestTemplateRefuses(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no cluster name", nil, "settings.clusterName is required"},
		{"a peer setting off its default", []string{"--set", "settings.clusterName=x", "--set", "settings.enableZonalShift=true"}, "settings.enableZonalShift"},
		{"a peer policy off its default", []string{"--set", "settings.clusterName=x", "--set", "settings.minValuesPolicy=BestEffort"}, "settings.minValuesPolicy"},
		{"an unknown setting", []string{"--set", "settings.clusterName=x", "--set", "settings.drift=true"}, "settings.drift: not a setting"},
		{"an unknown gate", []string{"--set", "settings.clusterName=x", "--set", "settings.featureGates.drift=true"}, "settings.featureGates.drift"},
		{"a queue ARN", []string{"--set", "settings.clusterName=x", "--set", "settings.interruptionQueue=arn:aws:sqs:us-east-1:111122223333:q"}, "settings.interruptionQueue"},
		{"the webhook", []string{"--set", "settings.clusterName=x", "--set", "webhook.enabled=true"}, "webhook.enabled"},
		{"extra cluster role rules", []string{"--set", "settings.clusterName=x", "--set", "additionalClusterRoleRules[0].apiGroups[0]=x"}, "additionalClusterRoleRules"},
		{"an unknown top-level value", []string{"--set", "settings.clusterName=x", "--set", "webhookPort=8443"}, "webhookPort: not a value"},
		{"a ServiceMonitor without its API", []string{"--set", "settings.clusterName=x", "--set", "serviceMonitor.enabled=true"}, "serviceMonitor.enabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runHelm(t, append([]string{"template", "dovetail", "./dovetail"}, tt.args...)...)
			if err == nil || !strings.Contains(out, tt.want) {
				t.Errorf("helm template %v: err %v, output does not name %q:\n%s", tt.args, err, tt.want, out)
			}
		})
	}
	// With its API the ServiceMonitor renders.
	r := template(t, "--set", "settings.clusterName=x", "--set", "serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1/ServiceMonitor")
	if !strings.Contains(r.raw, "kind: ServiceMonitor") {
		t.Error("no ServiceMonitor with serviceMonitor.enabled and its API")
	}
}
