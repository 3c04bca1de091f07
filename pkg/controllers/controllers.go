package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
	"github.com/dovetail-sh/dovetail/pkg/controllers/capacitybuffer"
	"github.com/dovetail-sh/dovetail/pkg/controllers/cost"
	"github.com/dovetail-sh/dovetail/pkg/controllers/disruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/interruption"
	"github.com/dovetail-sh/dovetail/pkg/controllers/node/termination"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/drift"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/expiration"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/garbagecollection"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/lifecycle"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/podevents"
	nctermination "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclaim/termination"
	ncstatus "github.com/dovetail-sh/dovetail/pkg/controllers/nodeclass/status"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodeoverlay"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/counter"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/hash"
	"github.com/dovetail-sh/dovetail/pkg/controllers/nodepool/readiness"
	"github.com/dovetail-sh/dovetail/pkg/controllers/offeringmetrics"
	"github.com/dovetail-sh/dovetail/pkg/controllers/offerings"
	"github.com/dovetail-sh/dovetail/pkg/controllers/poddeletioncost"
	"github.com/dovetail-sh/dovetail/pkg/controllers/podmetrics"
	"github.com/dovetail-sh/dovetail/pkg/controllers/provisioning"
	"github.com/dovetail-sh/dovetail/pkg/controllers/static"
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/metrics"
	"github.com/dovetail-sh/dovetail/pkg/state/unavailable"
)

// Controller is what every dovetail controller offers the manager.
type Controller interface {
	// Name names the controller in logs and metrics (the controller label
	// of karpenter_cloudprovider_* among them).
	Name() string
	// Register adds the controller (its watches and reconciler, or a
	// runnable) to the manager. It is called once, before the manager
	// starts.
	Register(ctx context.Context, mgr manager.Manager) error
}

// Every controller satisfies Controller; those built on a reconciler are
// also reconcile.Reconcilers that tests may drive by hand.
var (
	_ Controller = (*hash.Controller)(nil)
	_ Controller = (*readiness.Controller)(nil)
	_ Controller = (*counter.Controller)(nil)
	_ Controller = (*provisioning.Provisioner)(nil)
	_ Controller = (*lifecycle.Controller)(nil)
	_ Controller = (*drift.Controller)(nil)
	_ Controller = (*podevents.Controller)(nil)
	_ Controller = (*expiration.Controller)(nil)
	_ Controller = (*disruption.Controller)(nil)
	_ Controller = (*nctermination.Controller)(nil)
	_ Controller = (*termination.Controller)(nil)
	_ Controller = (*garbagecollection.Controller)(nil)
	_ Controller = (*ncstatus.Controller)(nil)
	_ Controller = (*cost.Controller)(nil)
	_ Controller = (*offerings.Controller)(nil)
	_ Controller = (*nodeoverlay.Controller)(nil)
	_ Controller = (*static.Controller)(nil)
	_ Controller = (*capacitybuffer.Controller)(nil)
	_ Controller = (*offeringmetrics.Controller)(nil)
	_ Controller = (*podmetrics.Controller)(nil)
	_ Controller = (*poddeletioncost.Controller)(nil)

	_ reconcile.Reconciler = (*hash.Controller)(nil)
	_ reconcile.Reconciler = (*readiness.Controller)(nil)
	_ reconcile.Reconciler = (*counter.Controller)(nil)
	_ reconcile.Reconciler = (*lifecycle.Controller)(nil)
	_ reconcile.Reconciler = (*drift.Controller)(nil)
	_ reconcile.Reconciler = (*podevents.Controller)(nil)
	_ reconcile.Reconciler = (*expiration.Controller)(nil)
	_ reconcile.Reconciler = (*nctermination.Controller)(nil)
	_ reconcile.Reconciler = (*termination.Controller)(nil)
	_ reconcile.Reconciler = (*garbagecollection.Controller)(nil)
	_ reconcile.Reconciler = (*ncstatus.Controller)(nil)
	_ reconcile.Reconciler = (*cost.Controller)(nil)
	_ reconcile.Reconciler = (*offerings.Controller)(nil)
	_ reconcile.Reconciler = (*nodeoverlay.Controller)(nil)
	_ reconcile.Reconciler = (*static.Controller)(nil)
	_ reconcile.Reconciler = (*capacitybuffer.Controller)(nil)
	_ reconcile.Reconciler = (*offeringmetrics.Controller)(nil)
	_ reconcile.Reconciler = (*poddeletioncost.Controller)(nil)
)

// Deps are the shared dependencies of the controllers.
type Deps struct {
	// Client reads through the manager's cache and writes to the API
	// server (manager.GetClient()).
	Client client.Client
	// APIReader reads without the cache (manager.GetAPIReader()); nil
	// leaves the cost record controller out.
	APIReader client.Reader
	// Cloud is the cloud provider, undecorated: NewControllers gives each
	// controller its own metrics-recording view of it.
	Cloud cloudprovider.CloudProvider
	// NodeClassResolver resolves EC2NodeClass status; nil leaves the node
	// class controller out.
	NodeClassResolver ncstatus.Resolver
	Clock             clock.Clock
	Recorder          events.EventRecorder
	Metrics           *metrics.Registry
	// Unavailable is the cache of refused offerings, shared by the
	// lifecycle (writer) and provisioning (reader).
	Unavailable *unavailable.Cache
	// InterruptionQueue is the cloud's interruption queue; nil turns queue
	// polling off (the rebalance reconciler still runs).
	InterruptionQueue interruption.Queue
	// ScheduledEvents are the cloud's scheduled changes of instances,
	// polled by the interruption controller; nil turns the polling off.
	ScheduledEvents cloudprovider.ScheduledEvents
}

// Config holds the controllers' tunables, already resolved from the
// operator's options (liveness timeouts scaled, defaults applied).
type Config struct {
	LaunchTimeout, RegistrationTimeout time.Duration
	GCInterval, GCGracePeriod          time.Duration
	VolumeDetachTimeout                time.Duration
	DriftPollInterval                  time.Duration
	NodeClassRefreshInterval           time.Duration
	Provisioning                       provisioning.Options
	// InterruptionQueue is the SQS queue name; "" disables interruption
	// handling.
	InterruptionQueue string
	// CostNamespace holds the ConfigMaps of the cost record, of the
	// published unavailable offerings and of the user's commitments
	// (dovetail-commitments; the controller's namespace).
	CostNamespace string
	// Disruption are the disruption controller's tunables (the validation
	// period already scaled); its snapshot options and the
	// SpotToSpotConsolidation gate are filled in from Provisioning and
	// SpotToSpotConsolidation.
	Disruption disruption.Options
	// SpotToSpotConsolidation (feature gate SpotToSpotConsolidation) lets
	// consolidation replace a spot node with a cheaper spot node; off, a
	// spot node is only deleted or replaced by on-demand capacity. Read by
	// the disruption controller.
	SpotToSpotConsolidation bool
	// StaticCapacity (feature gate StaticCapacity) runs static NodePools
	// (spec.replicas) with the static controller; off, such a pool gets
	// ValidationSucceeded=False from the readiness controller and no nodes.
	StaticCapacity bool
	// NodeOverlay (feature gate NodeOverlay) applies NodeOverlays to the
	// instance types provisioning and disruption plan with, and has
	// nodeoverlay.status report each overlay's validity; off, overlays are
	// ignored and marked so.
	NodeOverlay bool
	// CapacityBuffer (feature gate CapacityBuffer) runs the capacity
	// buffer controller and has provisioning and disruption keep the
	// buffers' room; off, CapacityBuffers are not read.
	CapacityBuffer bool
	// NodeRepair (feature gate NodeRepair) replaces nodes whose conditions
	// match one of the cloud provider's repair policies past its
	// toleration (the disruption controller, reason Unhealthy).
	NodeRepair bool
	// TerminateFirstDrift and TerminateFirstRepair (the feature gates of
	// those names): drift (repair) deletes a node first when its NodePool's
	// limits keep the replacement from launching beside it, and
	// provisioning replaces it once its capacity is released; off, such a
	// node is kept (the disruption controller).
	TerminateFirstDrift, TerminateFirstRepair bool
	// PodDeletionCostManagement (feature gate PodDeletionCostManagement)
	// runs the pod deletion cost controller: ReplicaSet pods get
	// controller.kubernetes.io/pod-deletion-cost from the disruption
	// planner's drain order. Off, it does not run (nothing is written or
	// removed).
	PodDeletionCostManagement bool
	// PodDeletionCost tunes that controller.
	PodDeletionCost poddeletioncost.Options
	// LifecycleWorkers is how many NodeClaims nodeclaim.lifecycle
	// reconciles at once (0: lifecycle.Workers).
	LifecycleWorkers int
}

// NewControllers lists every controller dovetail runs, wired with its
// dependencies. This is the one place where the wiring is visible; the
// operator registers the result with the manager in this order.
func NewControllers(d Deps, cfg Config) ([]Controller, error) {
	cloud := func(name string) cloudprovider.CloudProvider {
		return metrics.Decorate(d.Cloud, d.Metrics, name, d.Clock)
	}
	provisioningMetrics, err := provisioning.NewMetrics(d.Metrics)
	if err != nil {
		return nil, fmt.Errorf("provisioning metrics: %w", err)
	}
	// The peer registers its pod deletion cost metrics gate on or off.
	podDeletionCostMetrics, err := poddeletioncost.NewMetrics(d.Metrics)
	if err != nil {
		return nil, fmt.Errorf("pod deletion cost metrics: %w", err)
	}
	interruptionMetrics, err := interruption.NewMetrics(d.Metrics)
	if err != nil {
		return nil, fmt.Errorf("interruption metrics: %w", err)
	}
	// The one shape of a NodeClaim made outside provisioning (disruption's
	// replacements, static pools' nodes).
	newNodeClaim := func(np *karpv1.NodePool, planned *engine.NewNodeClaim, types []*cloudprovider.InstanceType, reason string) *karpv1.NodeClaim {
		return provisioning.NewNodeClaim(np, planned, types, reason, cfg.Provisioning.MaxInstanceTypes)
	}
	provOpts := cfg.Provisioning
	provOpts.NodeOverlays = cfg.NodeOverlay
	provOpts.CapacityBuffers = cfg.CapacityBuffer
	provOpts.CommitmentsNamespace = cfg.CostNamespace
	prov := provisioning.New(d.Client, cloud("provisioning"), d.Clock, d.Recorder, provisioningMetrics, d.Unavailable, provOpts)
	out := []Controller{
		// NodePools: hash first, so NodeClaims made from a pool find it.
		hash.NewController(d.Client),
		readiness.NewController(d.Client, d.Clock, readiness.Options{NodeRepair: cfg.NodeRepair, StaticCapacity: cfg.StaticCapacity}),
		counter.NewController(d.Client, d.Metrics),
		// NodeOverlays: validity, conflicts and negative prices on their
		// status (gate on), or marked not applied (gate off).
		nodeoverlay.NewController(d.Client, d.Clock, nodeoverlay.Options{Enabled: cfg.NodeOverlay, Cloud: cloud("nodeoverlay.status")}),

		// Pods to NodeClaims.
		prov,

		// NodeClaims from launch to deletion.
		lifecycle.NewController(d.Client, cloud("nodeclaim.lifecycle"), d.Clock, d.Recorder, d.Metrics, d.Unavailable,
			lifecycle.Options{LaunchTimeout: cfg.LaunchTimeout, RegistrationTimeout: cfg.RegistrationTimeout, RegistrationHold: lifecycle.DefaultRegistrationHold,
				Workers: cfg.LifecycleWorkers}),
		drift.NewController(d.Client, cloud("nodeclaim.drift"), d.Clock, cfg.DriftPollInterval),
		// Pod events and the Consolidatable condition, read by disruption.
		podevents.NewController(d.Client, d.Clock),
		// Forceful, no budget: NodeClaims older than spec.expireAfter.
		expiration.NewController(d.Client, d.Clock, d.Recorder, d.Metrics),
		nctermination.NewController(d.Client, cloud("nodeclaim.termination"), d.Clock, d.Recorder, d.Metrics),
		termination.NewController(d.Client, cloud("node.termination"), d.Clock, d.Recorder, d.Metrics,
			termination.Options{VolumeDetachTimeout: cfg.VolumeDetachTimeout}),
		garbagecollection.NewController(d.Client, cloud("nodeclaim.garbagecollection"), d.Clock, d.Recorder, d.Metrics,
			garbagecollection.Options{Interval: cfg.GCInterval, GracePeriod: cfg.GCGracePeriod}),

		// Interruption: replaces nodes the cloud is taking back (through
		// provisioning's Replace), then deletes their NodeClaims.
		interruption.New(d.Client, d.InterruptionQueue, prov, d.Clock, d.Recorder, interruptionMetrics, d.Unavailable).
			WithScheduledEvents(interruption.ScheduledEventsOptions{Source: d.ScheduledEvents}),

		// Consolidation and drift replacement: executes the planner's
		// commands, launching replacements as provisioning builds them.
		disruption.New(d.Client, cloud("disruption"), d.Clock, d.Recorder, d.Metrics, d.Unavailable,
			newNodeClaim, disruptionOptions(cfg)),

		// The peer's pod and offering metrics (they write nothing).
		podmetrics.NewController(d.Metrics),
		offeringmetrics.NewController(d.Client, cloud("cloudprovider.metrics"), d.Unavailable, d.Metrics, offeringmetrics.Options{}),
	}
	if cfg.StaticCapacity {
		// Static NodePools kept at spec.replicas, counted from the API
		// server (the APIReader), never from the cache.
		live := d.APIReader
		if live == nil {
			live = d.Client
		}
		out = append(out, static.New(d.Client, live, cloud("nodepool.static"), d.Clock, d.Recorder, d.Unavailable,
			newNodeClaim, static.Options{Snapshot: disruptionOptions(cfg).Snapshot, NodeOverlays: cfg.NodeOverlay}))
	}
	if cfg.PodDeletionCostManagement {
		// Pod deletion costs from the disruption planner's drain order.
		out = append(out, poddeletioncost.New(d.Client, d.Clock, podDeletionCostMetrics, cfg.PodDeletionCost))
	}
	if cfg.CapacityBuffer {
		// CapacityBuffers resolved into status; provisioning keeps their
		// room (provOpts.CapacityBuffers).
		out = append(out, capacitybuffer.New(d.Client, d.Clock, d.Recorder, capacitybuffer.Options{}))
	}
	if d.APIReader != nil && cfg.CostNamespace != "" {
		// What the fleet costs, hour by hour, kept in the cluster.
		out = append(out, cost.NewController(d.Client, d.APIReader, d.Clock, cost.Options{Namespace: cfg.CostNamespace}))
		// The offerings held unavailable, for read-only tools (explain).
		if d.Unavailable != nil {
			out = append(out, offerings.NewController(d.Client, d.APIReader, d.Unavailable, offerings.Options{Namespace: cfg.CostNamespace}))
		}
	}
	if d.NodeClassResolver != nil {
		out = append(out, ncstatus.NewController(d.Client, d.NodeClassResolver, d.Recorder, cfg.NodeClassRefreshInterval))
	}
	return out, nil
}

// disruptionOptions completes cfg.Disruption from the provisioning options
// (the same snapshot settings and default spreads) and the feature gates.
func disruptionOptions(cfg Config) disruption.Options {
	o := cfg.Disruption
	o.SpotToSpotConsolidation = cfg.SpotToSpotConsolidation
	o.NodeRepair = cfg.NodeRepair
	o.TerminateFirstDrift, o.TerminateFirstRepair = cfg.TerminateFirstDrift, cfg.TerminateFirstRepair
	o.NodeOverlays = cfg.NodeOverlay
	o.CapacityBuffers = cfg.CapacityBuffer
	o.SpreadDefaults = cfg.Provisioning.SpreadDefaults
	o.CommitmentsNamespace = cfg.CostNamespace
	o.PlacementGate = true // recreated pods wait for their nomination (docs/disruption.md)
	o.Snapshot.Region = cfg.Provisioning.Region
	o.Snapshot.Engine = engine.Options{PreferencePolicy: cfg.Provisioning.PreferencePolicy, Seed: cfg.Provisioning.Seed, SkipLowerBound: true}
	return o
}
