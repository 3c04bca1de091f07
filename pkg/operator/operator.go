package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	autoscalingv1beta1 "github.com/dovetail-sh/dovetail/api/autoscaling/v1beta1"
	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	karpv1alpha1 "github.com/dovetail-sh/dovetail/api/karpenter/v1alpha1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaimutil"
	ncstatus "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	planner "github.com/dovetail-sh/dovetail/pkg/disruption"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/operator/cachetrim"
	"github.com/dovetail-sh/dovetail/pkg/operator/eventsink"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Cloud is what the operator needs from a cloud.
type Cloud struct {
	Provider cloudprovider.CloudProvider
	// NodeClassResolver resolves EC2NodeClass status; nil leaves the node
	// class controller out.
	NodeClassResolver ncstatus.Resolver
	// InterruptionQueue is the interruption queue (Options.InterruptionQueue
	// resolved by the cloud); nil turns interruption polling off.
	InterruptionQueue interruption.Queue
	// ScheduledEvents are the cloud's scheduled changes of instances (on
	// AWS, DescribeInstanceStatus events); nil turns their polling off.
	ScheduledEvents cloudprovider.ScheduledEvents
	// Collectors are the cloud's own metrics, served with the operator's.
	Collectors []prometheus.Collector
}

// Deps are the operator's injected dependencies.
type Deps struct {
	// Cloud builds the cloud once the manager exists, so that it can read
	// through the manager's cache (the AWS provider reads EC2NodeClasses),
	// with the operator's bounded Event recorder (pkg/operator/eventsink).
	// Required.
	Cloud func(ctx context.Context, mgr manager.Manager, recorder events.EventRecorder) (Cloud, error)
	// Clock is the time source of every controller (the real clock when
	// nil).
	Clock clock.Clock
	// Logger; when unset one is built from Options.LogLevel, writing JSON
	// lines to LogOutput (stderr when nil).
	Logger    logr.Logger
	LogOutput io.Writer
}

// Operator is a configured controller manager with dovetail's controllers
// registered; Start runs it.
type Operator struct {
	Manager     manager.Manager
	Metrics     *metrics.Registry
	Unavailable *unavailable.Cache
	Controllers []controllers.Controller
	Cloud       Cloud
	Logger      logr.Logger

	metricsLn, healthLn net.Listener
}

// Scheme returns a scheme with the Kubernetes built-in types and dovetail's
// API types.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, karpv1.AddToScheme, awsv1.AddToScheme, karpv1alpha1.AddToScheme, autoscalingv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// New validates the options, builds the manager (client rate limits,
// leader election, cache indexes), binds the metrics and health ports,
// builds the cloud, and registers every controller of
// controllers.NewControllers. Nothing runs until Start.
func New(ctx context.Context, restConfig *rest.Config, opts Options, deps Deps) (op *Operator, err error) {
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("invalid options: %w", errs.ToAggregate())
	}
	if deps.Cloud == nil {
		return nil, errors.New("operator: Deps.Cloud is required")
	}
	clk := deps.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	logger := deps.Logger
	if logger.GetSink() == nil {
		logger = NewLogger(deps.LogOutput, opts.LogLevel)
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(restConfig)
	cfg.QPS, cfg.Burst = opts.KubeClientQPS, opts.KubeClientBurst
	cfg.UserAgent = "dovetail"
	le := opts.LeaderElection
	if le.Enabled {
		if err := checkLeasePermissions(ctx, cfg, le); err != nil {
			return nil, err
		}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme: scheme,
		Logger: logger,
		// The operator serves metrics and probes itself (below), so that
		// its own registry is served and tests can bind port 0.
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		PprofBindAddress:              opts.ProfilingBindAddress,
		LeaderElection:                le.Enabled,
		LeaderElectionID:              le.Name,
		LeaderElectionNamespace:       le.Namespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(le.LeaseDuration),
		RenewDeadline:                 ptr.To(le.RenewDeadline),
		RetryPeriod:                   ptr.To(le.RetryPeriod),
		// Pods and Nodes are trimmed to what the controllers read: at
		// fleet size the cache is most of the process's memory.
		Cache: cachetrim.Options(),
		// ... and a client that refuses to write a whole trimmed object.
		NewClient: cachetrim.NewClient,
		// Controller names are unique within an operator; skipping the
		// process-wide check lets tests run two operators side by side.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, fmt.Errorf("building the controller manager: %w", err)
	}
	if err := nodeclaimutil.RegisterIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
		return nil, err
	}
	op = &Operator{Manager: mgr, Metrics: metrics.NewRegistry(), Unavailable: unavailable.New(clk, 0), Logger: logger}
	defer func() {
		if err != nil {
			op.closeListeners()
		}
	}()
	if op.metricsLn, err = listen(opts.BindAddress, opts.MetricsPort, "metrics"); err != nil {
		return nil, err
	}
	if op.healthLn, err = listen(opts.BindAddress, opts.HealthProbePort, "health probe"); err != nil {
		return nil, err
	}
	// Events go through a bounded recorder of our own: client-go's
	// broadcaster starts goroutines per Event, and they pile up without
	// bound while the API server is slow (see pkg/operator/eventsink).
	recorder, stopEvents, _, err := eventsink.ForConfig(ctx, cfg, scheme, "dovetail", eventsink.Options{
		Dropped: op.Metrics.EventsDropped.Inc,
		Log:     logger.WithName("events"),
	})
	if err != nil {
		return nil, fmt.Errorf("building the event recorder: %w", err)
	}
	defer func() {
		if err != nil {
			stopEvents()
		}
	}()
	if err := mgr.Add(nonLeader(func(ctx context.Context) error {
		<-ctx.Done()
		stopEvents()
		return nil
	})); err != nil {
		return nil, err
	}
	if op.Cloud, err = deps.Cloud(ctx, mgr, recorder); err != nil {
		return nil, fmt.Errorf("building the cloud provider: %w", err)
	}
	if op.Cloud.Provider == nil {
		return nil, errors.New("operator: the cloud factory returned no provider")
	}
	if err := op.Metrics.Register(op.Cloud.Collectors...); err != nil {
		return nil, fmt.Errorf("registering the cloud's metrics: %w", err)
	}
	op.Controllers, err = controllers.NewControllers(controllers.Deps{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Cloud:             op.Cloud.Provider,
		NodeClassResolver: op.Cloud.NodeClassResolver,
		Clock:             clk,
		Recorder:          recorder,
		Metrics:           op.Metrics,
		Unavailable:       op.Unavailable,
		InterruptionQueue: op.Cloud.InterruptionQueue,
		ScheduledEvents:   op.Cloud.ScheduledEvents,
	}, ControllerConfig(opts))
	if err != nil {
		return nil, err
	}
	for _, c := range op.Controllers {
		if err := c.Register(ctx, mgr); err != nil {
			return nil, fmt.Errorf("registering controller %s: %w", c.Name(), err)
		}
	}
	if err := op.addServers(); err != nil {
		return nil, err
	}
	return op, nil
}

// ControllerConfig resolves the controllers' tunables from the options:
// liveness timeouts scaled by LivenessTimeScale, batch windows passed on,
// the NodeClaim lifecycle's workers scaled with CPU_REQUESTS.
func ControllerConfig(opts Options) controllers.Config {
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * opts.LivenessTimeScale) }
	return controllers.Config{
		LaunchTimeout:       scale(lifecycle.DefaultLaunchTimeout),
		RegistrationTimeout: scale(lifecycle.DefaultRegistrationTimeout),
		Provisioning: provisioning.Options{
			BatchIdleDuration: opts.BatchIdleDuration,
			BatchMaxDuration:  opts.BatchMaxDuration,
			DisableHandoff:    !opts.FeatureGates[SchedulerHandoffGate],
			// SCHEDULER_CONFIG; disruption plans with the same.
			SpreadDefaults: opts.Peer.SpreadDefaults(),
		},
		InterruptionQueue: opts.InterruptionQueue,
		CostNamespace:     opts.LeaderElection.Namespace,
		// The validation period scales with the liveness timeouts, so the
		// local stack's time scale shortens it too.
		Disruption: disruption.Options{ValidationPeriod: scale(disruption.DefaultValidationPeriod),
			MinSavings: planner.MinSavings{PerCommand: opts.ConsolidationMinSavings, PerPod: opts.ConsolidationMinSavingsPerPod}},
		SpotToSpotConsolidation:   opts.FeatureGates[SpotToSpotConsolidationGate],
		NodeRepair:                opts.FeatureGates[NodeRepairGate],
		TerminateFirstDrift:       opts.FeatureGates[TerminateFirstDriftGate],
		TerminateFirstRepair:      opts.FeatureGates[TerminateFirstRepairGate],
		NodeClassRefreshInterval:  opts.Peer.NodeClassRefreshInterval(),
		StaticCapacity:            opts.FeatureGates[StaticCapacityGate],
		NodeOverlay:               opts.FeatureGates[NodeOverlayGate],
		CapacityBuffer:            opts.FeatureGates[CapacityBufferGate],
		PodDeletionCostManagement: opts.FeatureGates[PodDeletionCostManagementGate],
		// CPU_REQUESTS (0 when not given: one core).
		LifecycleWorkers: lifecycle.ScaledWorkers(opts.Peer.CPURequests),
	}
}

func listen(host string, port int, what string) (net.Listener, error) {
	if port < 0 {
		return nil, nil
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", what, err)
	}
	return ln, nil
}

func (o *Operator) closeListeners() {
	for _, ln := range []net.Listener{o.metricsLn, o.healthLn} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// MetricsAddr is the metrics server's address ("" when turned off).
func (o *Operator) MetricsAddr() string { return addrOf(o.metricsLn) }

// HealthAddr is the health probe server's address ("" when turned off).
func (o *Operator) HealthAddr() string { return addrOf(o.healthLn) }

func addrOf(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// addServers adds the metrics and probe servers and the cluster-state
// gauge as runnables that run on every replica, leader or not.
func (o *Operator) addServers() error {
	if o.metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", o.Metrics.Handler(crmetrics.Registry))
		if err := o.Manager.Add(server(o.metricsLn, mux)); err != nil {
			return err
		}
	}
	if o.healthLn != nil {
		synced := func(req *http.Request) error {
			ctx, cancel := context.WithTimeout(req.Context(), time.Second)
			defer cancel()
			if !o.Manager.GetCache().WaitForCacheSync(ctx) {
				return errors.New("caches not synced")
			}
			return nil
		}
		mux := http.NewServeMux()
		mux.Handle("/healthz", http.StripPrefix("/healthz", &healthz.Handler{Checks: map[string]healthz.Checker{"ping": healthz.Ping}}))
		mux.Handle("/readyz", http.StripPrefix("/readyz", &healthz.Handler{Checks: map[string]healthz.Checker{"cache": synced}}))
		if err := o.Manager.Add(server(o.healthLn, mux)); err != nil {
			return err
		}
	}
	return o.Manager.Add(nonLeader(func(ctx context.Context) error {
		if o.Manager.GetCache().WaitForCacheSync(ctx) {
			o.Metrics.ClusterStateSynced.Set(1)
		}
		<-ctx.Done()
		return nil
	}))
}

// server serves h on ln until the manager stops.
func server(ln net.Listener, h http.Handler) manager.Runnable {
	return nonLeader(func(ctx context.Context) error {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shutdown)
		}
	})
}

// nonLeader is a runnable that runs whether or not this replica leads.
type nonLeader func(ctx context.Context) error

func (f nonLeader) Start(ctx context.Context) error { return f(ctx) }
func (nonLeader) NeedLeaderElection() bool          { return false }

// Start runs the manager until ctx ends (or leadership is lost, which is an
// error: the process should exit and restart).
func (o *Operator) Start(ctx context.Context) error {
	defer o.closeListeners()
	return o.Manager.Start(ctx)
}

// NewLogger returns a JSON logger at the level (debug, info, warn, error)
// writing to w (stderr when nil).
func NewLogger(w io.Writer, level string) logr.Logger {
	if w == nil {
		w = os.Stderr
	}
	lvl := slog.LevelInfo
	switch level {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	return logr.FromSlogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl}))
}
