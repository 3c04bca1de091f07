package charts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/cli/controller"
	"github.com/dovetail-sh/dovetail/internal/peermodule"
	"github.com/dovetail-sh/dovetail/internal/testutil/helmbin"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// controllerAccepts runs `dovetail controller`'s option parsing (not the
// controller) with exactly env and returns the options or the error.
func controllerAccepts(t *testing.T, env map[string]string) (*controller.Options, error) {
	t.Helper()
	var got *controller.Options
	cmd := controller.NewCmdController(func(_ context.Context, o *controller.Options) error {
		got = o
		return nil
	})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(nil)
	for k, v := range env {
		t.Setenv(k, v)
	}
	err := cmd.ExecuteContext(t.Context())
	return got, err
}

// renderEnv renders charts/dovetail with args and returns the controller's
// environment (helmbin.DeploymentEnv), or the render's error output.
func renderEnv(t *testing.T, args ...string) (map[string]string, string, error) {
	t.Helper()
	out, stderr, err := runHelmSplit(t, append([]string{"template", release, "./dovetail", "--namespace", namespace}, args...)...)
	if err != nil {
		return nil, stderr + out, err
	}
	env, err := helmbin.DeploymentEnv([]byte(out), namespace)
	if err != nil {
		t.Fatal(err)
	}
	return env, "", nil
}

// TestTemplatePeerValuesFile renders charts/dovetail with the peer's own
// v1.15 values.yaml (fetched through the Go module proxy), unchanged, plus
// a cluster name; renders the peer's chart with the same values; and holds
// dovetail's controller environment to the peer's: every variable the
// peer's chart sets is set, to the same value (the gates compared gate by
// gate, KARPENTER_SERVICE naming this chart's Service), and `dovetail
// controller` accepts the whole environment.
func TestTemplatePeerValuesFile(t *testing.T) {
	dir := t.TempDir()
	chart, err := peermodule.UnpackChart(dir)
	if err != nil {
		t.Fatal(err)
	}
	values := filepath.Join(chart, "values.yaml")
	ours, msg, err := renderEnv(t, "-f", values, "--set", "settings.clusterName=prod")
	if err != nil {
		t.Fatalf("helm template ./dovetail -f <the peer's values.yaml>: %v\n%s", err, msg)
	}
	peerOut, stderr, err := runHelmSplit(t, "template", "karpenter", chart, "--namespace", namespace, "-f", values, "--set", "settings.clusterName=prod")
	if err != nil {
		t.Fatalf("helm template of the peer's chart: %v\n%s", err, stderr)
	}
	peer, err := helmbin.DeploymentEnv([]byte(peerOut), namespace)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range peer {
		got, ok := ours[name]
		switch {
		case !ok:
			t.Errorf("the peer's chart sets %s=%q; dovetail's does not set it", name, want)
		case name == "FEATURE_GATES":
			g, err := operator.ParseFeatureGates(got)
			pg, perr := operator.ParseFeatureGates(want)
			if err != nil || perr != nil {
				t.Errorf("FEATURE_GATES: ours %q (%v), the peer's %q (%v)", got, err, want, perr)
				continue
			}
			for gate, v := range pg {
				if _, peerHas := operator.Gates[gate]; peerHas && gate != operator.SchedulerHandoffGate && g[gate] != v {
					t.Errorf("FEATURE_GATES: %s=%t, the peer's chart %t", gate, g[gate], v)
				}
			}
		case name == "KARPENTER_SERVICE":
			if got != release+"-dovetail" && got != release {
				t.Errorf("KARPENTER_SERVICE=%q, want this chart's Service", got)
			}
		case got != want:
			t.Errorf("%s=%q, the peer's chart renders %q", name, got, want)
		}
	}
	o, err := controllerAccepts(t, ours)
	if err != nil {
		t.Fatalf("dovetail controller refuses the chart's environment: %v\n%v", err, ours)
	}
	if o.Operator.ClusterName != "prod" || o.Operator.Peer.VMMemoryOverheadPercent != 0.075 || strings.Join(o.Operator.Peer.LogOutputPaths, ",") != "stdout" {
		t.Errorf("options %+v", o.Operator)
	}
	r := template(t, "-f", values, "--set", "settings.clusterName=prod")
	if c := r.deployment.Spec.Template.Spec.Containers[0]; c.Image != "ghcr.io/dovetail-sh/dovetail:0.1.0" {
		t.Errorf("image %s: the peer's image must be replaced by dovetail's", c.Image)
	}
}

// TestChartValuesReachTheController: each value the chart accepts reaches
// the controller as the variable the peer's chart uses and is accepted
// there; each value it refuses fails rendering naming the key. For the
// feature gates the chart's refusals are checked against the controller's
// own (pkg/operator Gates): a gate made to work there must be allowed here.
func TestChartValuesReachTheController(t *testing.T) {
	set := func(kv ...string) []string {
		args := []string{"--set", "settings.clusterName=prod"}
		for _, s := range kv {
			args = append(args, "--set", s)
		}
		return args
	}
	for _, tt := range []struct {
		value    string // --set
		env, val string // the variable it must reach, and its value; "" = refused at render
		refused  string // what the render error names
	}{
		{value: "settings.vmMemoryOverheadPercent=0.1", env: "VM_MEMORY_OVERHEAD_PERCENT", val: "0.1"},
		{value: "settings.reservedENIs=2", env: "RESERVED_ENIS", val: "2"},
		{value: "settings.isolatedVPC=true", env: "ISOLATED_VPC", val: "true"},
		{value: "settings.eksControlPlane=true", env: "EKS_CONTROL_PLANE", val: "true"},
		{value: "settings.disableDryRun=true", env: "DISABLE_DRY_RUN", val: "true"},
		{value: "settings.amiRefreshInterval=5m", env: "AMI_REFRESH_INTERVAL", val: "5m"},
		{value: "settings.subnetRefreshInterval=2m", env: "SUBNET_REFRESH_INTERVAL", val: "2m"},
		{value: "settings.securityGroupRefreshInterval=1h", env: "SECURITY_GROUP_REFRESH_INTERVAL", val: "1h"},
		{value: "settings.interruptionQueue=q", env: "INTERRUPTION_QUEUE", val: "q"},
		{value: "settings.clusterEndpoint=https://api.example.com", env: "CLUSTER_ENDPOINT", val: "https://api.example.com"},
		{value: "settings.batchIdleDuration=2s", env: "BATCH_IDLE_DURATION", val: "2s"},
		{value: "logOutputPaths={stdout,stderr}", env: "LOG_OUTPUT_PATHS", val: "stdout,stderr"},
		{value: "logLevel=debug", env: "LOG_LEVEL", val: "debug"},
		{value: "settings.featureGates.spotToSpotConsolidation=true", env: "FEATURE_GATES", val: "SpotToSpotConsolidation=true"},
		{value: "settings.preferencePolicy=Ignore", refused: "settings.preferencePolicy"},
		{value: "settings.minValuesPolicy=BestEffort", refused: "settings.minValuesPolicy"},
		{value: "settings.enableZonalShift=true", refused: "settings.enableZonalShift"},
		{value: "settings.enableDRA=true", refused: "settings.enableDRA"},
		{value: "settings.ignoreDRARequests=false", refused: "settings.ignoreDRARequests"},
		{value: "settings.legacyNodeRepair=true", refused: "settings.legacyNodeRepair"},
		{value: "settings.disableClusterStateObservability=true", refused: "settings.disableClusterStateObservability"},
		{value: "settings.amiRefreshInterval=often", refused: "settings.amiRefreshInterval"},
		{value: "logOutputPaths={/var/log/x}", refused: "logOutputPaths"},
		{value: "logErrorOutputPaths={stdout}", refused: "logErrorOutputPaths"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			env, msg, err := renderEnv(t, set(tt.value)...)
			if tt.refused != "" {
				if err == nil || !strings.Contains(msg, tt.refused) {
					t.Fatalf("--set %s: rendered (err %v), want a failure naming %s:\n%s", tt.value, err, tt.refused, msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("--set %s: %v\n%s", tt.value, err, msg)
			}
			if got := env[tt.env]; got != tt.val && !strings.Contains(got, tt.val) {
				t.Errorf("--set %s: %s=%q, want %q", tt.value, tt.env, got, tt.val)
			}
			if _, err := controllerAccepts(t, env); err != nil {
				t.Errorf("--set %s renders, but the controller refuses it: %v", tt.value, err)
			}
		})
	}
	gates := func(values string, known map[string]operator.Gate, env string) {
		for name, g := range known {
			key := strings.ToLower(name[:1]) + name[1:]
			if strings.HasPrefix(name, "DRA") {
				key = "dra" + name[3:]
			}
			for _, v := range []string{"true", "false"} {
				e, msg, err := renderEnv(t, set(values+"."+key+"="+v)...)
				refused := (v == "true" && g.RefuseOn) || (v == "false" && g.RefuseOff)
				if refused {
					if err == nil || !strings.Contains(msg, values+"."+key) {
						t.Errorf("%s.%s=%s: the controller refuses it, the chart renders it (err %v)", values, key, v, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s.%s=%s: the controller accepts it, the chart refuses it: %s", values, key, v, msg)
					continue
				}
				if !strings.Contains(e[env], name+"="+v) {
					t.Errorf("%s.%s=%s: %s=%q", values, key, v, env, e[env])
				}
			}
		}
	}
	gates("settings.featureGates", operator.Gates, "FEATURE_GATES")
	gates("settings.awsFeatureGates", operator.AWSGates, "AWS_FEATURE_GATES")
}

// TestValuesSchema (issue 34 item 9): numbers and required values are
// checked before rendering, naming the value.
func TestValuesSchema(t *testing.T) {
	for _, tt := range []struct{ set, want string }{
		{"replicas=-5", "/replicas"},
		{"replicas=two", "/replicas"},
		{"revisionHistoryLimit=-1", "/revisionHistoryLimit"},
		{"controller.metrics.port=70000", "/controller/metrics/port"},
		{"controller.healthProbe.port=0", "/controller/healthProbe/port"},
		{"settings.vmMemoryOverheadPercent=1.5", "/settings/vmMemoryOverheadPercent"},
		{"settings.kubeClientQPS=0", "/settings/kubeClientQPS"},
		{"settings.kubeClientBurst=-3", "/settings/kubeClientBurst"},
		{"settings.reservedENIs=-1", "/settings/reservedENIs"},
		{"terminationGracePeriodSeconds=-1", "/terminationGracePeriodSeconds"},
		{"serviceMonitor.sampleLimit=-1", "/serviceMonitor/sampleLimit"},
		{"podDisruptionBudget.maxUnavailable=-1", "/podDisruptionBudget/maxUnavailable"},
		{"logLevel=loud", "/logLevel"},
		{"settings.featureGates.nodeRepair=maybe", "/settings/featureGates/nodeRepair"},
	} {
		out, err := runHelm(t, "template", release, "./dovetail", "--set", "settings.clusterName=prod", "--set", tt.set)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("--set %s: err %v, output does not name %s:\n%s", tt.set, err, tt.want, out)
		}
	}
	// Without settings at all (a values file that drops the section).
	empty := filepath.Join(t.TempDir(), "v.yaml")
	if err := os.WriteFile(empty, []byte("settings: null\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := runHelm(t, "template", release, "./dovetail", "-f", empty); err == nil || !strings.Contains(out, "settings") {
		t.Errorf("settings: null rendered (err %v):\n%s", err, out)
	}
}

// TestTemplatePeerPodValues: the peer's pod-level values (volumes, mounts,
// sidecars, init containers, grace period, container name, container
// security context) reach the Deployment; empty security-context entries
// of the peer's values (appArmorProfile: {}) are left out, as the API
// server refuses them.
func TestTemplatePeerPodValues(t *testing.T) {
	values := filepath.Join(t.TempDir(), "v.yaml")
	if err := os.WriteFile(values, []byte(`settings: {clusterName: p}
extraVolumes: [{name: tok, projected: {sources: [{serviceAccountToken: {audience: sts.amazonaws.com, path: token}}]}}]
controller:
  containerName: karpenter-controller
  extraVolumeMounts: [{name: tok, mountPath: /var/run/secrets/eks.amazonaws.com/serviceaccount, readOnly: true}]
  sidecarContainer: [{name: side, image: busybox}]
  sidecarVolumeMounts: [{name: tok, mountPath: /side}]
  securityContext: {seccompProfile: {type: RuntimeDefault}, appArmorProfile: {}, seLinuxOptions: {}}
initContainers: [{name: init, image: busybox}]
terminationGracePeriodSeconds: 60
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := template(t, "-f", values)
	pod := r.deployment.Spec.Template.Spec
	if len(pod.Volumes) != 1 || pod.Volumes[0].Projected == nil || len(pod.InitContainers) != 1 || pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds != 60 {
		t.Errorf("pod %+v", pod)
	}
	if len(pod.Containers) != 2 {
		t.Fatalf("containers %+v, want the controller and the sidecar", pod.Containers)
	}
	c, side := pod.Containers[0], pod.Containers[1]
	if c.Name != "karpenter-controller" || len(c.VolumeMounts) != 1 || c.SecurityContext.SeccompProfile == nil ||
		c.SecurityContext.AppArmorProfile != nil || c.SecurityContext.SELinuxOptions != nil {
		t.Errorf("controller container %+v", c)
	}
	if side.Name != "side" || len(side.VolumeMounts) != 2 {
		t.Errorf("sidecar %+v, want the extra and its own mounts", side)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.ContainerName != c.Name {
			t.Errorf("%s reads the resources of container %q, not the controller's", e.Name, e.ValueFrom.ResourceFieldRef.ContainerName)
		}
	}
}
