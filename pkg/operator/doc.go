// Package operator builds dovetail's controller manager from an Options
// struct and injected dependencies, with every controller of
// controllers.NewControllers registered. No globals and no options in the
// context: what the controllers get is what New passes them.
//
// # Using it
//
//	op, err := operator.New(ctx, restConfig, opts, operator.Deps{
//		Cloud: func(ctx context.Context, mgr manager.Manager, recorder events.EventRecorder) (operator.Cloud, error) {
//			p, err := aws.New(ctx, awsConfig, aws.Options{ClusterName: opts.ClusterName, Reader: mgr.GetClient()})
//			if err != nil {
//				return operator.Cloud{}, err
//			}
//			return operator.Cloud{Provider: p, NodeClassResolver: p.Resolver()}, nil
//		},
//	})
//	if err != nil { ... }
//	err = op.Start(ctx) // until ctx ends or leadership is lost
//
// # What New sets up
//
//   - the Kubernetes client with Options.KubeClientQPS/Burst;
//   - leader election on a Lease (Options.LeaderElection; released on a
//     clean shutdown, so a successor takes over within RetryPeriod); New
//     first asks the API server (SelfSubjectAccessReview) whether this
//     identity may create Leases and change the named one, and fails
//     naming --leader-election-name/-namespace when the Role does not
//     follow them (config/rbac's rbac.Render, the chart's leaderElection);
//   - the cache indexes of package nodeclaimutil, and a cache that drops
//     managed fields and trims Pods and Nodes to what the controllers read
//     (package cachetrim), with a client that refuses whole-object writes
//     of them;
//   - a pprof server on Options.ProfilingBindAddress when set;
//   - a metrics server (/metrics: dovetail's registry plus
//     controller-runtime's) on MetricsPort and a probe server (/healthz,
//     /readyz = caches synced) on HealthProbePort, both on every replica;
//     port 0 picks a free port (MetricsAddr, HealthAddr tell which);
//   - the cloud provider, built by Deps.Cloud once the manager exists;
//   - the controllers, with the liveness timeouts scaled by
//     Options.LivenessTimeScale (ControllerConfig).
//
// # Invariants
//
// Options.Validate reports every bad option at once as a field.ErrorList;
// New refuses invalid options. Only the leader reconciles; servers and the
// karpenter_cluster_state_synced gauge run on every replica.
package operator
