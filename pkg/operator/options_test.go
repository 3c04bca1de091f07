package operator_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/operator"
)

func valid() operator.Options {
	o := operator.DefaultOptions()
	o.ClusterName = "prod-1"
	return o
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*operator.Options)
		fields []string // field paths of the expected errors, in order
	}{
		{"defaults plus a cluster name", func(*operator.Options) {}, nil},
		{"no cluster name", func(o *operator.Options) { o.ClusterName = "" }, []string{"clusterName"}},
		{"bad cluster name", func(o *operator.Options) { o.ClusterName = "-bad name" }, []string{"clusterName"}},
		{"cluster endpoint", func(o *operator.Options) { o.ClusterEndpoint = "http://api.example" }, []string{"clusterEndpoint"}},
		{"https cluster endpoint", func(o *operator.Options) { o.ClusterEndpoint = "https://ABC.gr7.us-east-1.eks.amazonaws.com" }, nil},
		{"zero batch idle", func(o *operator.Options) { o.BatchIdleDuration = 0 }, []string{"batchIdleDuration"}},
		{"idle beyond max", func(o *operator.Options) { o.BatchIdleDuration = time.Minute }, []string{"batchIdleDuration"}},
		{"qps and burst", func(o *operator.Options) { o.KubeClientQPS = -1; o.KubeClientBurst = 0 }, []string{"kubeClientQPS", "kubeClientBurst"}},
		{"ports", func(o *operator.Options) { o.MetricsPort = 70000; o.HealthProbePort = -2 }, []string{"metricsPort", "healthProbePort"}},
		{"same port twice", func(o *operator.Options) { o.HealthProbePort = o.MetricsPort }, []string{"healthProbePort"}},
		{"free ports are fine", func(o *operator.Options) { o.MetricsPort, o.HealthProbePort = 0, 0 }, nil},
		{"servers off", func(o *operator.Options) { o.MetricsPort, o.HealthProbePort = -1, -1 }, nil},
		{"log level", func(o *operator.Options) { o.LogLevel = "verbose" }, []string{"logLevel"}},
		{"profiling address", func(o *operator.Options) { o.ProfilingBindAddress = "127.0.0.1:6060" }, nil},
		{"profiling any host", func(o *operator.Options) { o.ProfilingBindAddress = ":0" }, nil},
		{"profiling without a port", func(o *operator.Options) { o.ProfilingBindAddress = "127.0.0.1" }, []string{"profilingBindAddress"}},
		{"profiling bad port", func(o *operator.Options) { o.ProfilingBindAddress = "localhost:99999" }, []string{"profilingBindAddress"}},
		{"time scale", func(o *operator.Options) { o.LivenessTimeScale = 0 }, []string{"livenessTimeScale"}},
		{"bind address", func(o *operator.Options) { o.BindAddress = "999.1.1.1" }, []string{"bindAddress"}},
		{"bind address name", func(o *operator.Options) { o.BindAddress = "localhost" }, nil},
		{"profiling numeric name", func(o *operator.Options) { o.ProfilingBindAddress = "1.2.3.999:6060" }, []string{"profilingBindAddress"}},
		{"endpoint numeric name", func(o *operator.Options) { o.ClusterEndpoint = "https://10.0.0.300" }, []string{"clusterEndpoint"}},
		{"peer defaults of zero are refused", func(o *operator.Options) { o.Peer = operator.PeerSettings{} }, []string{
			"preferencePolicy", "minValuesPolicy", "ignoreDRARequests", "vmMemoryOverheadPercent",
			"amiRefreshInterval", "subnetRefreshInterval", "securityGroupRefreshInterval", "kubernetesMinVersion"}},
		{"lease timings", func(o *operator.Options) {
			o.LeaderElection.RenewDeadline = o.LeaderElection.LeaseDuration
			o.LeaderElection.Name = "Not_A_Name"
		}, []string{"leaderElection.name", "leaderElection.renewDeadline"}},
		{"RebootForRepair without NodeRepair", func(o *operator.Options) {
			o.Peer.AWSFeatureGates = operator.FeatureGates{operator.RebootForRepairGate: true}
		}, []string{"awsFeatureGates"}},
		{"RebootForRepair with NodeRepair", func(o *operator.Options) {
			o.Peer.AWSFeatureGates = operator.FeatureGates{operator.RebootForRepairGate: true}
			o.FeatureGates = operator.FeatureGates{operator.NodeRepairGate: true}
		}, nil},
		{"lease timings ignored without leader election", func(o *operator.Options) {
			o.LeaderElection = operator.LeaderElection{}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid()
			tt.edit(&o)
			errs := o.Validate()
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("errors on %v, want %v (%v)", got, tt.fields, errs)
			}
		})
	}
}

func TestParseFeatureGates(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]bool // gates to check
		errHint string
	}{
		{"", map[string]bool{"ReservedCapacity": true, "SpotToSpotConsolidation": false}, ""},
		{"SpotToSpotConsolidation=true, ReservedCapacity=false", map[string]bool{"ReservedCapacity": false, "SpotToSpotConsolidation": true}, ""},
		{"NodeRepair=True", map[string]bool{"NodeRepair": true}, ""},
		{"NodeRepair", nil, "entry 1"},
		{"NodeRepair=true,SpotToSpot=true", nil, `entry 2: unknown gate "SpotToSpot"`},
		{"NodeRepair=maybe", nil, "not true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := operator.ParseFeatureGates(tt.in)
			if tt.errHint != "" {
				if !errors.Is(err, operator.ErrFeatureGate) || !strings.Contains(err.Error(), tt.errHint) {
					t.Fatalf("error %v, want ErrFeatureGate mentioning %q", err, tt.errHint)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			again, err := operator.ParseFeatureGates(got.String())
			if err != nil || again.String() != got.String() {
				t.Errorf("String does not round-trip: %q -> %q (%v)", got.String(), again.String(), err)
			}
		})
	}
}

func FuzzParseFeatureGates(f *testing.F) {
	for _, s := range []string{"", "NodeRepair=true", "a=b=c", ",,", "ReservedCapacity=false,NodeOverlay=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := operator.ParseFeatureGates(s)
		if err != nil {
			if !errors.Is(err, operator.ErrFeatureGate) {
				t.Fatalf("error %v does not wrap ErrFeatureGate", err)
			}
			return
		}
		for k := range g {
			if _, ok := operator.KnownFeatureGates[k]; !ok {
				t.Fatalf("unknown gate %q accepted", k)
			}
		}
	})
}

func TestSchedulerHandoffGate(t *testing.T) {
	o := valid()
	if operator.ControllerConfig(o).Provisioning.DisableHandoff {
		t.Fatal("the hand-off is off by default")
	}
	gates, err := operator.ParseFeatureGates(operator.SchedulerHandoffGate + "=false")
	if err != nil {
		t.Fatal(err)
	}
	o.FeatureGates = gates
	if !operator.ControllerConfig(o).Provisioning.DisableHandoff {
		t.Fatalf("%s=false left the hand-off on", operator.SchedulerHandoffGate)
	}
}

func TestControllerConfigScalesLiveness(t *testing.T) {
	o := valid()
	o.LivenessTimeScale = 0.1
	cfg := operator.ControllerConfig(o)
	if cfg.LaunchTimeout != 30*time.Second || cfg.RegistrationTimeout != 90*time.Second {
		t.Fatalf("launch %s, registration %s; want 30s and 90s (5m and 15m scaled by 0.1)", cfg.LaunchTimeout, cfg.RegistrationTimeout)
	}
	if cfg.Provisioning.BatchIdleDuration != time.Second || cfg.Provisioning.BatchMaxDuration != 10*time.Second {
		t.Fatalf("batch windows %+v", cfg.Provisioning)
	}
}

// Every gate accepts the value that matches what dovetail does; a value it
// does not implement is refused by Validate, naming the gate.
func TestFeatureGateValues(t *testing.T) {
	for name, gate := range operator.Gates {
		for _, v := range []bool{true, false} {
			o := operator.DefaultOptions()
			o.ClusterName = "c"
			o.FeatureGates[name] = v
			errs := o.Validate()
			refused := (v && gate.RefuseOn) || (!v && gate.RefuseOff)
			if refused != (len(errs) > 0) {
				t.Errorf("%s=%v: errors %v, refused %v", name, v, errs, refused)
			}
			if refused && !strings.Contains(errs.ToAggregate().Error(), name) {
				t.Errorf("%s=%v: %v does not name the gate", name, v, errs)
			}
		}
	}
	for _, must := range []string{"ReservedCapacity", "SpotToSpotConsolidation", "NodeRepair", "NodeOverlay", "StaticCapacity", "CapacityBuffer", operator.SchedulerHandoffGate} {
		if _, ok := operator.Gates[must]; !ok {
			t.Errorf("gate %s is not known", must)
		}
	}
	for _, both := range []string{"ReservedCapacity", "SpotToSpotConsolidation", operator.SchedulerHandoffGate, operator.TerminateFirstDriftGate, operator.TerminateFirstRepairGate} {
		if g := operator.Gates[both]; g.RefuseOn || g.RefuseOff {
			t.Errorf("%s must accept both values", both)
		}
	}
	// The operator hands SpotToSpotConsolidation to the controllers as a bool.
	o := operator.DefaultOptions()
	o.FeatureGates[operator.SpotToSpotConsolidationGate] = true
	if !operator.ControllerConfig(o).SpotToSpotConsolidation {
		t.Error("SpotToSpotConsolidation=true did not reach controllers.Config")
	}
	// The terminate-first gates each reach their own field.
	for _, gate := range []string{operator.TerminateFirstDriftGate, operator.TerminateFirstRepairGate} {
		o := operator.DefaultOptions()
		o.FeatureGates[gate] = true
		cfg := operator.ControllerConfig(o)
		if got := [2]bool{cfg.TerminateFirstDrift, cfg.TerminateFirstRepair}; got != [2]bool{gate == operator.TerminateFirstDriftGate, gate == operator.TerminateFirstRepairGate} {
			t.Errorf("%s=true: controllers.Config TerminateFirstDrift, TerminateFirstRepair = %v", gate, got)
		}
	}
}

// TestCPURequestsScaleTheLifecycleWorkers: CPU_REQUESTS works as the
// peer's does: the NodeClaim lifecycle controller's concurrency grows
// linearly with the container's CPU request in whole cores, from 100 at
// one core (or none given) to 5000 at 60 cores and no further.
func TestCPURequestsScaleTheLifecycleWorkers(t *testing.T) {
	for _, tc := range []struct {
		millis int64
		want   int
	}{{0, 100}, {500, 100}, {1000, 100}, {1001, 183}, {2000, 183}, {4000, 349}, {60000, 5000}, {128000, 5000}} {
		o := operator.DefaultOptions()
		o.Peer.CPURequests = tc.millis
		if got := operator.ControllerConfig(o).LifecycleWorkers; got != tc.want {
			t.Errorf("CPU_REQUESTS=%d: %d lifecycle workers, want %d", tc.millis, got, tc.want)
		}
	}
}
