package controller

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/operator"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/instancestatus"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/interruption/queue"
)

// Run starts the operator with parsed options and blocks until ctx ends.
func Run(ctx context.Context, opts *Options) error {
	cfg, err := restConfig(opts.Kubeconfig)
	if err != nil {
		return err
	}
	logger := operator.NewLogger(opts.logWriter(), opts.Operator.LogLevel)
	// client-go and controller-runtime internals log through these.
	ctrllog.SetLogger(logger)
	klog.SetLogger(logger)
	peer := opts.Operator.Peer
	serverVersion, err := checkServerVersion(cfg, peer.KubernetesMinVersion)
	if err != nil {
		return err
	}
	if limit := peer.SoftMemoryLimit(); limit > 0 && opts.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
		logger.Info("soft memory limit from MEMORY_LIMIT", "bytes", limit)
	}
	cloud := opts.Cloud
	if cloud == nil {
		cloud = awsCloud(opts, serverVersion)
	}
	op, err := operator.New(ctx, cfg, opts.Operator, operator.Deps{Cloud: cloud, Logger: logger})
	if err != nil {
		return err
	}
	logger.Info("starting", "cluster", opts.Operator.ClusterName, "metrics", op.MetricsAddr(), "probes", op.HealthAddr(),
		"leaderElection", opts.Operator.LeaderElection.Enabled, "featureGates", opts.Operator.FeatureGates.String())
	return op.Start(ctx)
}

// awsCloud builds the AWS provider from the default AWS configuration
// chain (environment, shared config, web identity / Pod Identity, IMDS),
// and the SQS interruption queue when one is named; AWS_ENDPOINT_URL points
// both at the local emulator.
func awsCloud(opts *Options, serverVersion string) func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
	return func(ctx context.Context, mgr manager.Manager, recorder events.EventRecorder) (operator.Cloud, error) {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return operator.Cloud{}, fmt.Errorf("loading the AWS configuration: %w", err)
		}
		po := providerOptions(opts.Operator, serverVersion)
		po.Reader, po.APIReader = mgr.GetClient(), mgr.GetAPIReader()
		po.Log, po.Recorder = mgr.GetLogger().WithName("aws"), recorder
		p, err := aws.New(ctx, awsCfg, po)
		if err != nil {
			return operator.Cloud{}, err
		}
		cloud := operator.Cloud{Provider: p, NodeClassResolver: p.Resolver(), Collectors: p.Collectors(),
			// Scheduled retirements, stops and reboots (DescribeInstanceStatus),
			// polled with or without an interruption queue, as the peer does.
			ScheduledEvents: &instancestatus.Events{EC2: p.Clients().EC2}}
		if name := opts.Operator.InterruptionQueue; name != "" {
			// Messages about another account (the queue URL's) or region
			// (the SDK's) are logged, counted and ignored.
			q := queue.New(p.Clients().SQS, name, queue.Options{Log: mgr.GetLogger().WithName("interruption-queue")})
			cloud.InterruptionQueue = q.Events()
			cloud.Collectors = append(cloud.Collectors, q.Collectors()...)
		}
		return cloud, nil
	}
}

// providerOptions are the AWS provider's settings from the operator's.
// The Kubernetes version nodes are told (and AMI aliases resolve for) comes,
// as the peer's EKS_CONTROL_PLANE says, from the API server (serverVersion,
// major.minor) when it is false, or from eks:DescribeCluster when it is true
// (left empty here, the provider asks EKS).
func providerOptions(o operator.Options, serverVersion string) aws.Options {
	po := aws.Options{
		ClusterName:     o.ClusterName,
		ClusterEndpoint: o.ClusterEndpoint,
		ClusterCA:       o.Peer.ClusterCABundle,
		IsolatedVPC:     o.Peer.IsolatedVPC,
		RebootForRepair: o.Peer.AWSFeatureGates[operator.RebootForRepairGate],
		DisableDryRun:   o.Peer.DisableDryRun,
		ReservedENIs:    o.Peer.ReservedENIs,
		// The gate is on by default, as the peer's.
		NoReservedCapacity: !o.FeatureGates[operator.ReservedCapacityGate],
		// Validate keeps it in (0, 1); the provider's 0 means its default.
		VMMemoryOverheadPercent: o.Peer.VMMemoryOverheadPercent,
	}
	if !o.Peer.EKSControlPlane {
		po.KubernetesVersion = serverVersion
	}
	return po
}

// logWriter is where logs go: the log output paths (stdout and/or stderr),
// stderr when none are given.
func (o *Options) logWriter() io.Writer {
	var ws []io.Writer
	for _, p := range o.Operator.Peer.LogOutputPaths {
		switch p {
		case "stdout":
			ws = append(ws, o.Stdout)
		case "stderr":
			ws = append(ws, o.Stderr)
		}
	}
	switch len(ws) {
	case 0:
		return o.Stderr
	case 1:
		return ws[0]
	}
	return io.MultiWriter(ws...)
}

// checkServerVersion refuses an API server older than min (the peer's
// KUBERNETES_MIN_VERSION) and returns its version as major.minor.
func checkServerVersion(cfg *rest.Config, min string) (string, error) {
	want, err := utilversion.ParseGeneric(min)
	if err != nil {
		return "", cmdutil.BadInputf("kubernetes min version %q: %v", min, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", err
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the API server's version: %w", err)
	}
	got, err := utilversion.ParseGeneric(info.GitVersion)
	if err != nil {
		return "", fmt.Errorf("the API server's version %q: %w", info.GitVersion, err)
	}
	if got.LessThan(want) {
		return "", fmt.Errorf("the API server is %s, older than the minimum %s (KUBERNETES_MIN_VERSION / --kubernetes-min-version)", info.GitVersion, min)
	}
	return fmt.Sprintf("%d.%d", got.Major(), got.Minor()), nil
}
