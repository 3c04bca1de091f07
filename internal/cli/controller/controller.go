package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

// Options holds the inputs of `dovetail controller`.
type Options struct {
	Operator   operator.Options
	Kubeconfig string

	// Source names where each option was set, by field path
	// ("batchIdleDuration" -> "--batch-idle-duration" or
	// "BATCH_IDLE_DURATION"), for error messages.
	Source map[string]string

	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Cloud builds the cloud for the operator; nil means the AWS provider
	// from the default AWS configuration chain (see awsCloud).
	Cloud func(ctx context.Context, mgr manager.Manager, recorder events.EventRecorder) (operator.Cloud, error)
}

// binding ties an option to its flag and environment variable.
type binding struct {
	field string // path in operator.Options, as Validate names it
	flag  string
	env   string
	// fromEnv applies an environment value; nil means the flag's own
	// parser (pflag.Value.Set).
	fromEnv func(o *Options, v string) error
}

var bindings = []binding{
	{field: "clusterName", flag: "cluster-name", env: "CLUSTER_NAME"},
	{field: "clusterEndpoint", flag: "cluster-endpoint", env: "CLUSTER_ENDPOINT"},
	{field: "interruptionQueue", flag: "interruption-queue", env: "INTERRUPTION_QUEUE"},
	{field: "batchIdleDuration", flag: "batch-idle-duration", env: "BATCH_IDLE_DURATION"},
	{field: "batchMaxDuration", flag: "batch-max-duration", env: "BATCH_MAX_DURATION"},
	{field: "kubeClientQPS", flag: "kube-client-qps", env: "KUBE_CLIENT_QPS"},
	{field: "kubeClientBurst", flag: "kube-client-burst", env: "KUBE_CLIENT_BURST"},
	{field: "metricsPort", flag: "metrics-port", env: "METRICS_PORT"},
	{field: "healthProbePort", flag: "health-probe-port", env: "HEALTH_PROBE_PORT"},
	{field: "logLevel", flag: "log-level", env: "LOG_LEVEL"},
	{field: "featureGates", flag: "feature-gates", env: "FEATURE_GATES"},
	{field: "leaderElection.enabled", flag: "leader-elect", env: "DISABLE_LEADER_ELECTION", fromEnv: func(o *Options, v string) error {
		disable, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		o.Operator.LeaderElection.Enabled = !disable
		return nil
	}},
	{field: "leaderElection.name", flag: "leader-election-name"},
	{field: "leaderElection.namespace", flag: "leader-election-namespace", env: "SYSTEM_NAMESPACE"},
	{field: "leaderElection.leaseDuration", flag: "leader-election-lease-duration"},
	{field: "leaderElection.renewDeadline", flag: "leader-election-renew-deadline"},
	{field: "leaderElection.retryPeriod", flag: "leader-election-retry-period"},
	{field: "livenessTimeScale", flag: "liveness-time-scale"},
	{field: "bindAddress", flag: "bind-address"},
	{field: "profilingBindAddress", flag: "profiling-bind-address"},
	{field: "consolidationMinSavings", flag: "consolidation-min-savings", env: "CONSOLIDATION_MIN_SAVINGS"},
	{field: "consolidationMinSavingsPerPod", flag: "consolidation-min-savings-per-pod", env: "CONSOLIDATION_MIN_SAVINGS_PER_POD"},
	// The rest of the peer's settings (operator.PeerSettings), under its
	// variable names.
	{field: "awsFeatureGates", flag: "aws-feature-gates", env: "AWS_FEATURE_GATES"},
	{field: "preferencePolicy", flag: "preference-policy", env: "PREFERENCE_POLICY"},
	{field: "minValuesPolicy", flag: "min-values-policy", env: "MIN_VALUES_POLICY"},
	{field: "clusterCABundle", flag: "cluster-ca-bundle", env: "CLUSTER_CA_BUNDLE"},
	{field: "isolatedVPC", flag: "isolated-vpc", env: "ISOLATED_VPC"},
	{field: "eksControlPlane", flag: "eks-control-plane", env: "EKS_CONTROL_PLANE"},
	{field: "vmMemoryOverheadPercent", flag: "vm-memory-overhead-percent", env: "VM_MEMORY_OVERHEAD_PERCENT"},
	{field: "reservedENIs", flag: "reserved-enis", env: "RESERVED_ENIS"},
	{field: "enableZonalShift", flag: "enable-zonal-shift", env: "ENABLE_ZONAL_SHIFT"},
	{field: "ignoreDRARequests", flag: "ignore-dra-requests", env: "IGNORE_DRA_REQUESTS"},
	{field: "legacyNodeRepair", flag: "legacy-node-repair", env: "LEGACY_NODE_REPAIR"},
	{field: "disableClusterStateObservability", flag: "disable-cluster-state-observability", env: "DISABLE_CLUSTER_STATE_OBSERVABILITY"},
	{field: "disableDryRun", flag: "disable-dry-run", env: "DISABLE_DRY_RUN"},
	{field: "amiRefreshInterval", flag: "ami-refresh-interval", env: "AMI_REFRESH_INTERVAL"},
	{field: "subnetRefreshInterval", flag: "subnet-refresh-interval", env: "SUBNET_REFRESH_INTERVAL"},
	{field: "securityGroupRefreshInterval", flag: "security-group-refresh-interval", env: "SECURITY_GROUP_REFRESH_INTERVAL"},
	{field: "kubernetesMinVersion", flag: "kubernetes-min-version", env: "KUBERNETES_MIN_VERSION"},
	{field: "karpenterService", flag: "karpenter-service", env: "KARPENTER_SERVICE"},
	{field: "logOutputPaths", flag: "log-output-paths", env: "LOG_OUTPUT_PATHS"},
	{field: "logErrorOutputPaths", flag: "log-error-output-paths", env: "LOG_ERROR_OUTPUT_PATHS"},
	{field: "cpuRequests", flag: "cpu-requests", env: "CPU_REQUESTS"},
	{field: "memoryLimit", flag: "memory-limit", env: "MEMORY_LIMIT"},
	{field: "schedulerConfig", flag: "scheduler-config", env: "SCHEDULER_CONFIG"},
}

// NewCmd returns `dovetail controller`.
func NewCmd() *cobra.Command { return NewCmdController(nil) }

// NewCmdController builds the command. runF replaces the run function in
// tests (it receives the parsed, validated options); nil runs the
// controller.
func NewCmdController(runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Operator: operator.DefaultOptions(), Getenv: os.Getenv}
	gates := &gatesValue{g: &opts.Operator.FeatureGates, parse: operator.ParseFeatureGates}
	awsGates := &gatesValue{g: &opts.Operator.Peer.AWSFeatureGates, parse: operator.ParseAWSFeatureGates}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the dovetail controller (provisioning, NodeClaim lifecycle, termination, ...)",
		Long: `Run the dovetail controller against the cluster of the kubeconfig (or, in a
pod, the in-cluster configuration), managing nodes for NodePools through the
cloud provider (AWS, configured from the default AWS configuration chain).

Every option can also be set through the environment variable the peer's
Helm chart uses (listed with each flag); a flag wins over its variable.

Exit codes: 0 stopped by a signal, 1 failure (including lost leadership),
2 bad flags, environment or options.`,
		Example: `  dovetail controller --cluster-name prod --interruption-queue prod-interruptions
  CLUSTER_NAME=prod FEATURE_GATES=SpotToSpotConsolidation=true dovetail controller`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cmdutil.BadInputf("%s takes no arguments, got %q\nSee '%s --help'", cmd.CommandPath(), args, cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			if err := opts.complete(cmd.Flags()); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	// Flag errors are bad input (exit 2), with or without the root command.
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdutil.BadInput(fmt.Errorf("%w\nSee '%s --help'", err, c.CommandPath()))
	})
	o := &opts.Operator
	f := cmd.Flags()
	f.StringVar(&o.ClusterName, "cluster-name", o.ClusterName, "name of the cluster, used in cloud tags (required)")
	f.StringVar(&o.ClusterEndpoint, "cluster-endpoint", o.ClusterEndpoint, "https URL of the API server nodes join (empty: discovered with eks:DescribeCluster)")
	f.StringVar(&o.InterruptionQueue, "interruption-queue", o.InterruptionQueue, "SQS queue name for interruption events; empty turns interruption handling off")
	f.DurationVar(&o.BatchIdleDuration, "batch-idle-duration", o.BatchIdleDuration, "close a provisioning batch after this long without a new pending pod")
	f.DurationVar(&o.BatchMaxDuration, "batch-max-duration", o.BatchMaxDuration, "close a provisioning batch after this long in all")
	f.Float32Var(&o.KubeClientQPS, "kube-client-qps", o.KubeClientQPS, "Kubernetes client requests per second")
	f.IntVar(&o.KubeClientBurst, "kube-client-burst", o.KubeClientBurst, "Kubernetes client burst")
	f.IntVar(&o.MetricsPort, "metrics-port", o.MetricsPort, "port of /metrics (0: any free port, -1: off)")
	f.IntVar(&o.HealthProbePort, "health-probe-port", o.HealthProbePort, "port of /healthz and /readyz (0: any free port, -1: off)")
	f.StringVar(&o.BindAddress, "bind-address", o.BindAddress, "address the metrics and probe servers listen on (empty: all)")
	f.StringVar(&o.ProfilingBindAddress, "profiling-bind-address", o.ProfilingBindAddress, "host:port of a pprof server (/debug/pprof/), e.g. 127.0.0.1:6060 (empty: none)")
	f.StringVar(&o.LogLevel, "log-level", o.LogLevel, "log level: "+strings.Join(operator.LogLevels, ", "))
	f.Var(gates, "feature-gates", "feature gates, e.g. SpotToSpotConsolidation=true,NodeRepair=false")
	f.BoolVar(&o.LeaderElection.Enabled, "leader-elect", o.LeaderElection.Enabled, "elect a leader among replicas (off: this replica always reconciles)")
	f.StringVar(&o.LeaderElection.Name, "leader-election-name", o.LeaderElection.Name, "name of the leader election Lease")
	f.StringVar(&o.LeaderElection.Namespace, "leader-election-namespace", o.LeaderElection.Namespace, "namespace of the leader election Lease")
	f.DurationVar(&o.LeaderElection.LeaseDuration, "leader-election-lease-duration", o.LeaderElection.LeaseDuration, "how long a lease lasts without renewal")
	f.DurationVar(&o.LeaderElection.RenewDeadline, "leader-election-renew-deadline", o.LeaderElection.RenewDeadline, "how long the leader tries to renew before giving up")
	f.DurationVar(&o.LeaderElection.RetryPeriod, "leader-election-retry-period", o.LeaderElection.RetryPeriod, "how often candidates try to acquire the lease")
	f.Float64Var(&o.LivenessTimeScale, "liveness-time-scale", o.LivenessTimeScale, "scale of the NodeClaim launch (5m) and registration (15m) timeouts, in (0, 1]")
	f.Float64Var(&o.ConsolidationMinSavings, "consolidation-min-savings", o.ConsolidationMinSavings, "least $/h one consolidation command must save (0: off); a NodePool's dovetail.sh/consolidation-min-savings annotation overrides it; emptiness is never held")
	f.Float64Var(&o.ConsolidationMinSavingsPerPod, "consolidation-min-savings-per-pod", o.ConsolidationMinSavingsPerPod, "least $/h a consolidation must save per pod it evicts (0: off); overridden by a NodePool's dovetail.sh/consolidation-min-savings-per-pod")
	p := &o.Peer
	f.Var(awsGates, "aws-feature-gates", "the peer's AWS feature gates (NodeClassCEL, DRANVIDIAGPU, DRAEFA, RebootForRepair); only RebootForRepair=true is implemented")
	f.StringVar(&p.PreferencePolicy, "preference-policy", p.PreferencePolicy, "how preferences are treated: Respect (Ignore is not implemented)")
	f.StringVar(&p.MinValuesPolicy, "min-values-policy", p.MinValuesPolicy, "how minValues are treated: Strict (BestEffort is not implemented)")
	f.StringVar(&p.ClusterCABundle, "cluster-ca-bundle", p.ClusterCABundle, "base64 PEM CA bundle of the API server for new nodes (empty: from eks:DescribeCluster)")
	f.BoolVar(&p.IsolatedVPC, "isolated-vpc", p.IsolatedVPC, "call no AWS service without a VPC endpoint: on-demand prices come from the built-in table, not the Pricing API")
	f.BoolVar(&p.EKSControlPlane, "eks-control-plane", p.EKSControlPlane, "read the Kubernetes version nodes are told with eks:DescribeCluster instead of from the API server (the endpoint, CA and service CIDR not given are read with eks:DescribeCluster either way)")
	f.Float64Var(&p.VMMemoryOverheadPercent, "vm-memory-overhead-percent", p.VMMemoryOverheadPercent, "fraction of instance memory lost to virtualisation, in (0, 1)")
	f.IntVar(&p.ReservedENIs, "reserved-enis", p.ReservedENIs, "ENIs not counted for pods when computing max-pods")
	f.BoolVar(&p.EnableZonalShift, "enable-zonal-shift", p.EnableZonalShift, "respect ARC zonal shifts (not implemented: only false)")
	f.BoolVar(&p.IgnoreDRARequests, "ignore-dra-requests", p.IgnoreDRARequests, "ignore pods' DRA claims when sizing nodes (only true: DRA sizing is not implemented)")
	f.BoolVar(&p.LegacyNodeRepair, "legacy-node-repair", p.LegacyNodeRepair, "the peer's legacy node repair controller (not implemented: only false)")
	f.BoolVar(&p.DisableClusterStateObservability, "disable-cluster-state-observability", p.DisableClusterStateObservability, "turn off cluster state metrics and events (not implemented: only false)")
	f.BoolVar(&p.DisableDryRun, "disable-dry-run", p.DisableDryRun, "skip the DryRun launch calls that validate each EC2NodeClass (ValidationSucceeded)")
	f.DurationVar(&p.AMIRefreshInterval, "ami-refresh-interval", p.AMIRefreshInterval, "re-resolve EC2NodeClass AMIs this often (at least 1m; classes are resolved at the shortest of the three refresh intervals)")
	f.DurationVar(&p.SubnetRefreshInterval, "subnet-refresh-interval", p.SubnetRefreshInterval, "re-resolve EC2NodeClass subnets this often (at least 1m)")
	f.DurationVar(&p.SecurityGroupRefreshInterval, "security-group-refresh-interval", p.SecurityGroupRefreshInterval, "re-resolve EC2NodeClass security groups this often (at least 1m)")
	f.StringVar(&p.KubernetesMinVersion, "kubernetes-min-version", p.KubernetesMinVersion, "refuse to start against an older API server")
	f.StringVar(&p.KarpenterService, "karpenter-service", p.KarpenterService, "name of the controller's Service (checked; dovetail has no webhooks to serve on it)")
	f.StringSliceVar(&p.LogOutputPaths, "log-output-paths", p.LogOutputPaths, "where logs go: stdout and/or stderr (default stderr)")
	f.StringSliceVar(&p.LogErrorOutputPaths, "log-error-output-paths", p.LogErrorOutputPaths, "the logger's own errors: stderr only")
	f.Int64Var(&p.CPURequests, "cpu-requests", p.CPURequests, "the container's CPU request in millicores (from the downward API); scales how many NodeClaims are reconciled at once")
	f.Int64Var(&p.MemoryLimit, "memory-limit", p.MemoryLimit, "the container's memory limit in bytes (from the downward API): Go's soft memory limit becomes 90% of it unless GOMEMLIMIT is set")
	f.StringVar(&p.SchedulerConfig, "scheduler-config", p.SchedulerConfig, "YAML or JSON document {podTopologySpread: {defaultConstraints: [...]}} mirroring the cluster's kube-scheduler: the constraints are given to every pod without its own when planning (empty: none)")
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	for _, b := range bindings {
		switch {
		case b.env == "DISABLE_LEADER_ELECTION":
			f.Lookup(b.flag).Usage += " [$DISABLE_LEADER_ELECTION=true turns it off]"
		case b.env != "":
			f.Lookup(b.flag).Usage += " [$" + b.env + "]"
		}
	}
	return cmd
}

// complete fills options from the environment where no flag was given,
// then validates everything, naming the flag or variable of each problem.
func (o *Options) complete(fs *pflag.FlagSet) error {
	o.Source = map[string]string{}
	var errs []string
	for _, b := range bindings {
		fl := fs.Lookup(b.flag)
		if fl.Changed {
			o.Source[b.field] = "--" + b.flag
			continue
		}
		if b.env == "" {
			continue
		}
		v := o.Getenv(b.env)
		if v == "" {
			continue
		}
		o.Source[b.field] = b.env
		var err error
		if b.fromEnv != nil {
			err = b.fromEnv(o, v)
		} else {
			err = fl.Value.Set(v)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v", b.env, v, err))
		}
	}
	if len(errs) > 0 {
		return cmdutil.BadInput(errors.New(strings.Join(errs, "\n")))
	}
	if fe := o.Operator.Validate(); len(fe) > 0 {
		return cmdutil.BadInput(o.describe(fe))
	}
	return nil
}

// describe rewrites validation errors in terms of flags and variables.
func (o *Options) describe(errs field.ErrorList) error {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		name := o.Source[e.Field]
		if name == "" {
			for _, b := range bindings {
				if b.field == e.Field {
					name = "--" + b.flag
					if b.env != "" {
						name += " (or $" + b.env + ")"
					}
				}
			}
		}
		if name == "" {
			name = e.Field
		}
		detail := e.Detail
		if e.Type == field.ErrorTypeRequired {
			detail = "required: " + detail
		} else if _, omit := e.BadValue.(field.OmitValueType); omit {
			// The value is long or a document: the detail says where.
		} else if e.Type == field.ErrorTypeNotSupported {
			detail = fmt.Sprintf("%v is not one of %s", e.BadValue, detail)
		} else {
			detail = fmt.Sprintf("%v: %s", e.BadValue, detail)
		}
		msgs = append(msgs, name+": "+detail)
	}
	sort.Strings(msgs)
	return errors.New(strings.Join(msgs, "\n"))
}

// gatesValue parses --feature-gates (or --aws-feature-gates) on top of the
// defaults; given twice, it is refused rather than the last one winning.
type gatesValue struct {
	g     *operator.FeatureGates
	parse func(string) (operator.FeatureGates, error)
	set   bool
}

func (v *gatesValue) String() string {
	if v.g == nil || *v.g == nil {
		return ""
	}
	return v.g.String()
}

func (v *gatesValue) Set(s string) error {
	if v.set {
		return errors.New("given more than once; put every gate in one comma-separated list")
	}
	v.set = true
	g, err := v.parse(s)
	if err != nil {
		return err
	}
	*v.g = g
	return nil
}

func (v *gatesValue) Type() string { return "gates" }

// restConfig loads the kubeconfig: the flag, else $KUBECONFIG or
// ~/.kube/config, else the in-cluster configuration. A --kubeconfig or
// $KUBECONFIG naming no file, or a kubeconfig that does not parse, is bad
// input naming the path.
func restConfig(path string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	where := ""
	switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
	case path != "":
		if _, err := os.Stat(path); err != nil {
			return nil, cmdutil.BadInputf("--kubeconfig %s: %v", path, unwrapPathError(err))
		}
		rules.ExplicitPath = path
		where = path
	case env != "":
		found := false
		for _, p := range filepath.SplitList(env) {
			if _, err := os.Stat(p); err == nil {
				found = true
			}
		}
		if !found {
			return nil, cmdutil.BadInputf("$KUBECONFIG=%s: no such file (pass --kubeconfig PATH or fix $KUBECONFIG)", env)
		}
		where = "$KUBECONFIG=" + env
	default:
		if _, err := os.Stat(clientcmd.RecommendedHomeFile); err == nil {
			where = clientcmd.RecommendedHomeFile
		}
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		if where != "" {
			return nil, cmdutil.BadInputf("kubeconfig %s: %v", where, err)
		}
		return nil, fmt.Errorf("loading the kubeconfig (none found, and not in a cluster): %w", err)
	}
	return cfg, nil
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
