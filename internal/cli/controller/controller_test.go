package controller_test

import (
	"bytes"
	"context"
	"errors"
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
		{"unimplemented gate", []string{"controller"}, map[string]string{"CLUSTER_NAME": "x", "FEATURE_GATES": "ReservedCapacity=true,NodeRepair=true"},
			[]string{"FEATURE_GATES", "NodeRepair=true", "does not repair", "NodeRepair=false"}},
		{"unimplemented gate flag", []string{"controller", "--cluster-name", "x", "--feature-gates", "CapacityBuffer=true"}, nil,
			[]string{"--feature-gates", "CapacityBuffer=true", "not implemented"}},
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

func TestHelpListsTheEnvironmentVariables(t *testing.T) {
	var out bytes.Buffer
	cmd := controller.NewCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"$CLUSTER_NAME", "$CLUSTER_ENDPOINT", "$INTERRUPTION_QUEUE", "$BATCH_IDLE_DURATION", "$BATCH_MAX_DURATION",
		"$KUBE_CLIENT_QPS", "$KUBE_CLIENT_BURST", "$METRICS_PORT", "$HEALTH_PROBE_PORT", "$LOG_LEVEL", "$FEATURE_GATES"} {
		if !strings.Contains(out.String(), env) {
			t.Errorf("help does not mention %s", env)
		}
	}
}
