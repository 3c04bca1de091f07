package controller_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"maps"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/cli/controller"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// parse runs `controller` with args and env through runF and returns the
// parsed options.
func parse(t *testing.T, args []string, env map[string]string) (*controller.Options, error) {
	t.Helper()
	var got *controller.Options
	cmd := controller.NewCmdController(func(_ context.Context, o *controller.Options) error {
		got = o
		return nil
	})
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(t.Context())
	return got, err
}

func TestFlagsAndEnvironment(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, o operator.Options)
	}{
		{"defaults", []string{"--cluster-name", "prod"}, nil, func(t *testing.T, o operator.Options) {
			want := operator.DefaultOptions()
			want.ClusterName = "prod"
			if o.BatchIdleDuration != want.BatchIdleDuration || o.BatchMaxDuration != want.BatchMaxDuration ||
				o.MetricsPort != 8080 || o.HealthProbePort != 8081 || o.LogLevel != "info" || !o.LeaderElection.Enabled ||
				o.KubeClientQPS != want.KubeClientQPS || o.FeatureGates.String() != want.FeatureGates.String() {
				t.Errorf("parsed %+v, want the defaults", o)
			}
		}},
		{"the peer's environment", nil, map[string]string{
			"CLUSTER_NAME": "prod", "INTERRUPTION_QUEUE": "prod-q", "BATCH_IDLE_DURATION": "2s", "BATCH_MAX_DURATION": "20s",
			"KUBE_CLIENT_QPS": "50", "KUBE_CLIENT_BURST": "75", "METRICS_PORT": "9000", "HEALTH_PROBE_PORT": "9001",
			"LOG_LEVEL": "debug", "FEATURE_GATES": "SpotToSpotConsolidation=true", "DISABLE_LEADER_ELECTION": "true",
			"SYSTEM_NAMESPACE": "karpenter", "CLUSTER_ENDPOINT": "https://api.prod.example",
		}, func(t *testing.T, o operator.Options) {
			if o.ClusterName != "prod" || o.ClusterEndpoint != "https://api.prod.example" || o.InterruptionQueue != "prod-q" || o.BatchIdleDuration != 2*time.Second ||
				o.BatchMaxDuration != 20*time.Second || o.KubeClientQPS != 50 || o.KubeClientBurst != 75 ||
				o.MetricsPort != 9000 || o.HealthProbePort != 9001 || o.LogLevel != "debug" ||
				!o.FeatureGates["SpotToSpotConsolidation"] || o.LeaderElection.Enabled || o.LeaderElection.Namespace != "karpenter" {
				t.Errorf("parsed %+v", o)
			}
		}},
		{"the peer's standard feature gates", nil, map[string]string{"CLUSTER_NAME": "prod",
			"FEATURE_GATES": "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false"},
			func(t *testing.T, o operator.Options) {
				if !o.FeatureGates["ReservedCapacity"] || o.FeatureGates["SpotToSpotConsolidation"] || o.FeatureGates["NodeRepair"] {
					t.Errorf("gates %s", o.FeatureGates)
				}
			}},
		{"flags win over the environment", []string{"--cluster-name", "flag", "--batch-idle-duration", "3s", "--leader-elect=true"},
			map[string]string{"CLUSTER_NAME": "env", "BATCH_IDLE_DURATION": "5s", "DISABLE_LEADER_ELECTION": "true"},
			func(t *testing.T, o operator.Options) {
				if o.ClusterName != "flag" || o.BatchIdleDuration != 3*time.Second || !o.LeaderElection.Enabled {
					t.Errorf("parsed %+v, want the flags' values", o)
				}
			}},
		{"consolidation savings threshold", []string{"--consolidation-min-savings", "0.05"},
			map[string]string{"CLUSTER_NAME": "prod", "CONSOLIDATION_MIN_SAVINGS": "9", "CONSOLIDATION_MIN_SAVINGS_PER_POD": "0.01"},
			func(t *testing.T, o operator.Options) {
				ms := operator.ControllerConfig(o).Disruption.MinSavings
				if o.ConsolidationMinSavings != 0.05 || o.ConsolidationMinSavingsPerPod != 0.01 || ms.PerCommand != 0.05 || ms.PerPod != 0.01 {
					t.Errorf("parsed %g and %g, controllers get %+v; want 0.05 (the flag) and 0.01", o.ConsolidationMinSavings, o.ConsolidationMinSavingsPerPod, ms)
				}
			}},
		{"pod deletion cost management", nil, map[string]string{"CLUSTER_NAME": "prod", "FEATURE_GATES": "PodDeletionCostManagement=true"},
			func(t *testing.T, o operator.Options) {
				if !o.FeatureGates["PodDeletionCostManagement"] || !operator.ControllerConfig(o).PodDeletionCostManagement {
					t.Errorf("gates %s: PodDeletionCostManagement=true did not reach controllers.Config", o.FeatureGates)
				}
			}},
		{"local mode", []string{"--cluster-name", "local", "--liveness-time-scale", "0.1", "--metrics-port", "0", "--leader-elect=false"}, nil,
			func(t *testing.T, o operator.Options) {
				if o.LivenessTimeScale != 0.1 || o.MetricsPort != 0 || o.LeaderElection.Enabled {
					t.Errorf("parsed %+v", o)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parse(t, tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got.Operator)
		})
	}
}

// TestBadInputExitsTwoNamingTheSource runs the command as the binary does
// and checks the exit code and message.
func TestBadInputExitsTwoNamingTheSource(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want []string // substrings of the error
	}{
		{"bad duration flag", []string{"controller", "--cluster-name", "x", "--batch-idle-duration", "soon"}, nil, []string{"--batch-idle-duration", "soon"}},
		{"bad duration variable", []string{"controller", "--cluster-name", "x"}, map[string]string{"BATCH_MAX_DURATION": "later"}, []string{"BATCH_MAX_DURATION", "later"}},
		{"bad gates variable", []string{"controller"}, map[string]string{"CLUSTER_NAME": "x", "FEATURE_GATES": "Drift=true"}, []string{"FEATURE_GATES", `unknown gate "Drift"`}},
		{"unimplemented gate", []string{"controller"}, map[string]string{"CLUSTER_NAME": "x", "AWS_FEATURE_GATES": "NodeClassCEL=true"},
			[]string{"AWS_FEATURE_GATES", "NodeClassCEL=true", "not implemented", "NodeClassCEL=false"}},
		{"bad endpoint variable", []string{"controller", "--cluster-name", "x"}, map[string]string{"CLUSTER_ENDPOINT": "api.example:443"}, []string{"CLUSTER_ENDPOINT", "https URL"}},
		{"bad port variable", []string{"controller", "--cluster-name", "x"}, map[string]string{"METRICS_PORT": "http"}, []string{"METRICS_PORT"}},
		{"missing cluster name", []string{"controller"}, nil, []string{"--cluster-name (or $CLUSTER_NAME)", "required"}},
		{"invalid values name their source", []string{"controller", "--cluster-name", "x", "--log-level", "loud"},
			map[string]string{"BATCH_IDLE_DURATION": "1m"}, []string{"--log-level", "loud", "BATCH_IDLE_DURATION", "batchMaxDuration"}},
		{"bad bool variable", []string{"controller", "--cluster-name", "x"}, map[string]string{"DISABLE_LEADER_ELECTION": "perhaps"}, []string{"DISABLE_LEADER_ELECTION"}},
		{"arguments", []string{"controller", "--cluster-name", "x", "extra"}, nil, []string{"takes no arguments"}},
		{"missing --kubeconfig file", []string{"controller", "--cluster-name", "x", "--kubeconfig", "/nonexistent/kubeconfig"}, nil, []string{"--kubeconfig /nonexistent/kubeconfig"}},
		{"missing $KUBECONFIG file", []string{"controller", "--cluster-name", "x"}, map[string]string{"KUBECONFIG": "/nonexistent/kc"}, []string{"$KUBECONFIG=/nonexistent/kc"}},
		{"unreadable kubeconfig", []string{"controller", "--cluster-name", "x", "--kubeconfig", "doc.go"}, nil, []string{"kubeconfig doc.go"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var out bytes.Buffer
			cmd := controller.NewCmd()
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetArgs(tt.args[1:])
			err := cmd.ExecuteContext(t.Context())
			if code := cmdutil.ExitCode(err); code != cmdutil.ExitBadInput {
				t.Fatalf("exit code %d (%v), want %d", code, err, cmdutil.ExitBadInput)
			}
			var bad *cmdutil.BadInputError
			if !errors.As(err, &bad) {
				t.Fatalf("%v is not a BadInputError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// helpText is `dovetail controller --help`.
func helpText(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	cmd := controller.NewCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestHelpListsTheEnvironmentVariables(t *testing.T) {
	help := helpText(t)
	for _, env := range []string{"$CLUSTER_NAME", "$CLUSTER_ENDPOINT", "$INTERRUPTION_QUEUE", "$BATCH_IDLE_DURATION", "$BATCH_MAX_DURATION",
		"$KUBE_CLIENT_QPS", "$KUBE_CLIENT_BURST", "$METRICS_PORT", "$HEALTH_PROBE_PORT", "$LOG_LEVEL", "$FEATURE_GATES"} {
		if !strings.Contains(help, env) {
			t.Errorf("help does not mention %s", env)
		}
	}
}

// peerVariables are every environment variable the peer's v1.15 chart can
// render for its controller, with the value it renders by default (or, for
// a variable it renders only when set, the peer binary's default) and a bad
// value. A value the peer accepts but dovetail does not implement counts
// as bad: it must be refused at start, naming the variable.
var peerVariables = []struct {
	env, def string
	bad      []string
}{
	{"KUBERNETES_MIN_VERSION", "1.19.0-0", []string{"one.nineteen"}},
	{"KARPENTER_SERVICE", "karpenter", []string{"Not_A_Service"}},
	{"LOG_LEVEL", "info", []string{"loud"}},
	{"LOG_OUTPUT_PATHS", "stdout", []string{"/var/log/karpenter.log", "stdout,stdout"}},
	{"LOG_ERROR_OUTPUT_PATHS", "stderr", []string{"stdout"}},
	{"METRICS_PORT", "8080", []string{"http", "70000"}},
	{"HEALTH_PROBE_PORT", "8081", []string{"-5"}},
	{"SYSTEM_NAMESPACE", "kube-system", []string{"Kube_System"}},
	{"CPU_REQUESTS", "1000", []string{"one", "-1"}},
	{"MEMORY_LIMIT", "1073741824", []string{"1Gi", "-1"}},
	{"FEATURE_GATES", "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,TerminateFirstDrift=false,TerminateFirstRepair=false,PodDeletionCostManagement=false",
		[]string{"Drift=true", "NodeRepair=false,NodeRepair=false", "TerminateFirstDrift=maybe", "TerminateFirstRepair=yes", "PodDeletionCostManagement=maybe", "NodeOverlay=maybe"}},
	{"AWS_FEATURE_GATES", "NodeClassCEL=false,DRANVIDIAGPU=false,DRAEFA=false,RebootForRepair=false",
		[]string{"NodeClassCEL=true", "DRANVIDIAGPU=true", "DRAEFA=true", "RebootForRepair=true", "Unknown=false", "DRAEFA=false,DRAEFA=false"}},
	{"BATCH_MAX_DURATION", "10s", []string{"later", "-1s"}},
	{"BATCH_IDLE_DURATION", "1s", []string{"soon", "0s"}},
	{"PREFERENCE_POLICY", "Respect", []string{"Ignore"}},
	{"MIN_VALUES_POLICY", "Strict", []string{"BestEffort"}},
	{"CLUSTER_CA_BUNDLE", testCABundle, []string{"not-base64!", "aGVsbG8="}},
	{"CLUSTER_NAME", "prod", []string{"-bad name"}},
	{"CLUSTER_ENDPOINT", "https://ABC.gr7.us-east-1.eks.amazonaws.com", []string{"api.example:443", "https://999.1.1.1"}},
	{"ISOLATED_VPC", "false", []string{"perhaps"}},
	{"EKS_CONTROL_PLANE", "false", []string{"perhaps"}},
	{"VM_MEMORY_OVERHEAD_PERCENT", "0.075", []string{"7.5%", "1.5", "0"}},
	{"INTERRUPTION_QUEUE", "prod-interruptions", nil}, // any name: a missing queue is an error of the running controller
	{"ENABLE_ZONAL_SHIFT", "false", []string{"true"}},
	{"RESERVED_ENIS", "0", []string{"-1", "two"}},
	{"IGNORE_DRA_REQUESTS", "true", []string{"false"}},
	{"LEGACY_NODE_REPAIR", "false", []string{"true"}},
	{"DISABLE_CLUSTER_STATE_OBSERVABILITY", "false", []string{"true"}},
	{"DISABLE_DRY_RUN", "false", []string{"perhaps"}},
	{"AMI_REFRESH_INTERVAL", "1m", []string{"30s", "hourly"}},
	{"SUBNET_REFRESH_INTERVAL", "1m", []string{"59s"}},
	{"SECURITY_GROUP_REFRESH_INTERVAL", "1m", []string{"0"}},
	// dovetail's own, and the peer binary's beyond its chart.
	{"KUBE_CLIENT_QPS", "200", []string{"-1", "fast"}},
	{"KUBE_CLIENT_BURST", "300", []string{"0"}},
	{"DISABLE_LEADER_ELECTION", "false", []string{"perhaps"}},
	{"CONSOLIDATION_MIN_SAVINGS", "0", []string{"-0.05", "cheap", "NaN", "+Inf"}},
	{"CONSOLIDATION_MIN_SAVINGS_PER_POD", "0", []string{"-1", "0.01$"}},
	// The peer's chart sets it empty; TestSchedulerConfig has the rules.
	{"SCHEDULER_CONFIG", "", []string{"podTopologySpread: {defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]}", "profiles: []"}},
}

// testCABundle is base64 of a PEM certificate (a self-signed one made for
// this test; it signs nothing).
var testCABundle = func() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}()

// execute runs `controller` as the binary does, with env set and runF in
// place of Run.
func execute(t *testing.T, args []string, env map[string]string) error {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	var out bytes.Buffer
	cmd := controller.NewCmdController(func(context.Context, *controller.Options) error { return nil })
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args)
	return cmd.ExecuteContext(t.Context())
}

// TestEveryPeerVariable: each variable's default is accepted, and each bad
// value exits 2 with a message naming the variable.
func TestEveryPeerVariable(t *testing.T) {
	base := map[string]string{"CLUSTER_NAME": "prod"}
	all := map[string]string{}
	for _, v := range peerVariables {
		all[v.env] = v.def
		t.Run(v.env+"="+v.def, func(t *testing.T) {
			env := maps.Clone(base)
			env[v.env] = v.def
			if err := execute(t, nil, env); err != nil {
				t.Fatalf("the default %s=%s is refused: %v", v.env, v.def, err)
			}
		})
		for _, bad := range v.bad {
			t.Run(v.env+"="+bad, func(t *testing.T) {
				env := maps.Clone(base)
				env[v.env] = bad
				err := execute(t, nil, env)
				if code := cmdutil.ExitCode(err); code != cmdutil.ExitBadInput {
					t.Fatalf("%s=%s: exit code %d (%v), want %d", v.env, bad, code, err, cmdutil.ExitBadInput)
				}
				if !strings.Contains(err.Error(), v.env) {
					t.Errorf("%s=%s: error %q does not name the variable", v.env, bad, err)
				}
			})
		}
	}
	t.Run("all defaults together", func(t *testing.T) {
		if err := execute(t, nil, all); err != nil {
			t.Fatal(err)
		}
	})
	// Every variable the command reads is in the table above.
	for _, m := range regexp.MustCompile(`\[\$([A-Z_]+)`).FindAllStringSubmatch(helpText(t), -1) {
		if _, ok := all[m[1]]; !ok {
			t.Errorf("$%s is read by the command but not in peerVariables", m[1])
		}
	}
}

// TestPeerSettingsReachTheOptions: the values dovetail implements land in
// the options the operator runs with.
func TestPeerSettingsReachTheOptions(t *testing.T) {
	got, err := parse(t, nil, map[string]string{"CLUSTER_NAME": "prod", "VM_MEMORY_OVERHEAD_PERCENT": "0.1", "RESERVED_ENIS": "2",
		"ISOLATED_VPC": "true", "CLUSTER_CA_BUNDLE": testCABundle, "AMI_REFRESH_INTERVAL": "5m", "SUBNET_REFRESH_INTERVAL": "3m",
		"SECURITY_GROUP_REFRESH_INTERVAL": "10m", "LOG_OUTPUT_PATHS": "stdout,stderr", "MEMORY_LIMIT": "1000", "DISABLE_DRY_RUN": "true",
		"AWS_FEATURE_GATES": "NodeClassCEL=false"})
	if err != nil {
		t.Fatal(err)
	}
	p := got.Operator.Peer
	if p.VMMemoryOverheadPercent != 0.1 || p.ReservedENIs != 2 || !p.IsolatedVPC || p.ClusterCABundle != testCABundle ||
		p.NodeClassRefreshInterval() != 3*time.Minute || strings.Join(p.LogOutputPaths, ",") != "stdout,stderr" ||
		p.SoftMemoryLimit() != 900 || !p.DisableDryRun || p.AWSFeatureGates["NodeClassCEL"] {
		t.Errorf("parsed %+v", p)
	}
	if operator.ControllerConfig(got.Operator).NodeClassRefreshInterval != 3*time.Minute {
		t.Error("the shortest refresh interval did not reach controllers.Config")
	}
}

// TestAddressesAndRepeatedGates (issue 34 item 10): a bad address and a
// gate given twice are refused, naming the flag.
func TestAddressesAndRepeatedGates(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"--cluster-name", "x", "--bind-address", "999.1.1.1"}, []string{"--bind-address", "999.1.1.1"}},
		{[]string{"--cluster-name", "x", "--bind-address", "not an address"}, []string{"--bind-address"}},
		{[]string{"--cluster-name", "x", "--profiling-bind-address", "999.1.1.1:6060"}, []string{"--profiling-bind-address"}},
		{[]string{"--cluster-name", "x", "--feature-gates", "NodeRepair=false,NodeRepair=false"}, []string{"--feature-gates", "NodeRepair repeated"}},
		{[]string{"--cluster-name", "x", "--feature-gates", "NodeRepair=false", "--feature-gates", "NodeOverlay=false"}, []string{"--feature-gates", "more than once"}},
		{[]string{"--cluster-name", "x", "--aws-feature-gates", "DRAEFA=false,DRAEFA=true"}, []string{"--aws-feature-gates", "DRAEFA repeated"}},
	} {
		err := execute(t, tt.args, nil)
		if code := cmdutil.ExitCode(err); code != cmdutil.ExitBadInput {
			t.Errorf("%v: exit code %d (%v), want %d", tt.args, code, err, cmdutil.ExitBadInput)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not mention %q", tt.args, err, w)
			}
		}
	}
	for _, ok := range []string{"127.0.0.1", "::1", "localhost", "0.0.0.0"} {
		if err := execute(t, []string{"--cluster-name", "x", "--bind-address", ok}, nil); err != nil {
			t.Errorf("--bind-address %s: %v", ok, err)
		}
	}
}

// TestSchedulerConfig: SCHEDULER_CONFIG (--scheduler-config) is decoded
// strictly and validated as kube-scheduler's PodTopologySpread arguments;
// each rule exits 2 naming the variable and the field in the document; a
// valid document reaches the provisioning and disruption controllers.
func TestSchedulerConfig(t *testing.T) {
	const peerDoc = `podTopologySpread:
  defaultConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: DoNotSchedule
    - maxSkew: 1
      topologyKey: topology.kubernetes.io/zone
      whenUnsatisfiable: DoNotSchedule
`
	one := func(c string) string { return "podTopologySpread: {defaultConstraints: [" + c + "]}" }
	for _, tt := range []struct {
		name, doc string
		want      []string
	}{
		{"maxSkew", one("{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}"),
			[]string{"podTopologySpread.defaultConstraints[0].maxSkew", "greater than 0"}},
		{"topologyKey unset", one("{maxSkew: 1, whenUnsatisfiable: DoNotSchedule}"),
			[]string{"podTopologySpread.defaultConstraints[0].topologyKey", "Required"}},
		{"topologyKey not a name", one("{maxSkew: 1, topologyKey: 'not/a/name', whenUnsatisfiable: DoNotSchedule}"),
			[]string{"podTopologySpread.defaultConstraints[0].topologyKey", "not/a/name"}},
		{"whenUnsatisfiable", one("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: Never}"),
			[]string{"podTopologySpread.defaultConstraints[0].whenUnsatisfiable", "Never", "DoNotSchedule"}},
		{"labelSelector", one("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {}}"),
			[]string{"podTopologySpread.defaultConstraints[0].labelSelector", "deduced"}},
		{"matchLabelKeys", one("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule, matchLabelKeys: [app]}"),
			[]string{"podTopologySpread.defaultConstraints[0].matchLabelKeys"}},
		{"duplicate", one("{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}"),
			[]string{"podTopologySpread.defaultConstraints[1]", "Duplicate"}},
		{"unknown field", "podTopologySpread: {defaultingType: List}", []string{"defaultingType"}},
		{"not a document", "podTopologySpread: [", []string{"decoding"}},
		{"two problems, both named", one("{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}, {maxSkew: 1, topologyKey: host, whenUnsatisfiable: Later}"),
			[]string{"defaultConstraints[0].maxSkew", "defaultConstraints[1].whenUnsatisfiable"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, how := range []struct {
				args []string
				env  map[string]string
				name string
			}{
				{nil, map[string]string{"CLUSTER_NAME": "prod", "SCHEDULER_CONFIG": tt.doc}, "SCHEDULER_CONFIG"},
				{[]string{"--cluster-name", "prod", "--scheduler-config", tt.doc}, nil, "--scheduler-config"},
			} {
				err := execute(t, how.args, how.env)
				if code := cmdutil.ExitCode(err); code != cmdutil.ExitBadInput {
					t.Fatalf("%s: exit code %d (%v), want %d", how.name, code, err, cmdutil.ExitBadInput)
				}
				for _, w := range append([]string{how.name}, tt.want...) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q does not say %q", how.name, err, w)
					}
				}
			}
		})
	}
	got, err := parse(t, nil, map[string]string{"CLUSTER_NAME": "prod", "SCHEDULER_CONFIG": peerDoc})
	if err != nil {
		t.Fatal(err)
	}
	cfg := operator.ControllerConfig(got.Operator)
	d := cfg.Provisioning.SpreadDefaults
	if len(d) != 2 || d[0].TopologyKey != "kubernetes.io/hostname" || d[1].TopologyKey != "topology.kubernetes.io/zone" || d[1].MaxSkew != 1 {
		t.Errorf("provisioning's defaults: %+v", d)
	}
	if none := operator.ControllerConfig(operator.DefaultOptions()).Provisioning.SpreadDefaults; none != nil {
		t.Errorf("no SCHEDULER_CONFIG: defaults %+v", none)
	}
}
