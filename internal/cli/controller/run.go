package controller

import (
	"context"
	"fmt"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

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
	logger := operator.NewLogger(opts.Stderr, opts.Operator.LogLevel)
	// client-go and controller-runtime internals log through these.
	ctrllog.SetLogger(logger)
	klog.SetLogger(logger)
	cloud := opts.Cloud
	if cloud == nil {
		cloud = awsCloud(opts)
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
func awsCloud(opts *Options) func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
	return func(ctx context.Context, mgr manager.Manager, recorder events.EventRecorder) (operator.Cloud, error) {
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return operator.Cloud{}, fmt.Errorf("loading the AWS configuration: %w", err)
		}
		p, err := aws.New(ctx, awsCfg, aws.Options{
			ClusterName:     opts.Operator.ClusterName,
			ClusterEndpoint: opts.Operator.ClusterEndpoint,
			Reader:          mgr.GetClient(),
			APIReader:       mgr.GetAPIReader(),
			Log:             mgr.GetLogger().WithName("aws"),
			Recorder:        recorder,
		})
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
