package metrics

import (
	"fmt"
	"net/http"
	"regexp"
	"runtime"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/dovetail-sh/dovetail/internal/version"
)

// Metric name prefixes: the peer's for metrics that mean the same thing,
// ours for the rest.
const (
	PeerNamespace = "karpenter"
	Namespace     = "dovetail"
)

// Label names, shared so that dashboards can join across metrics.
const (
	LabelNodePool         = "nodepool"
	LabelZone             = "zone"
	LabelCapacityType     = "capacity_type"
	LabelInstanceType     = "instance_type"
	LabelReason           = "reason"
	LabelMinValuesRelaxed = "min_values_relaxed"
	LabelResourceType     = "resource_type"
	LabelController       = "controller"
	LabelMethod           = "method"
	LabelProvider         = "provider"
	LabelError            = "error"
	LabelOutcome          = "outcome"
	LabelPhase            = "phase"
	LabelKind             = "kind"
	LabelCode             = "code"
	LabelVersion          = "version"
	LabelGoVersion        = "goversion"
	LabelGoArch           = "goarch"
	LabelCommit           = "commit"
	// LabelDecision and LabelConsolidationType label disruption decisions.
	LabelDecision          = "decision"
	LabelConsolidationType = "consolidation_type"
	// LabelTerminateFirstReason says why a terminate-first command could
	// not launch its replacement first.
	LabelTerminateFirstReason = "terminate_first_reason"
	// LabelNodeName and LabelTeam label node and NodePool-owner series.
	LabelNodeName = "node_name"
	LabelTeam     = "team"
	// The pod labels of karpenter_pods_state (PodStateLabels).
	LabelName      = "name"
	LabelNamespace = "namespace"
	LabelOwner     = "owner"
	LabelNode      = "node"
	LabelScheduled = "scheduled"
	LabelArch      = "arch"
	LabelReady     = "ready"
	LabelManaged   = "managed"
)

// PodStateLabels are the labels of karpenter_pods_state, in the order a
// source of Registry.PodsState emits their values (the peer's order).
var PodStateLabels = []string{
	LabelName, LabelNamespace, LabelOwner, LabelNode, LabelScheduled, LabelNodePool, LabelZone,
	LabelArch, LabelCapacityType, LabelInstanceType, LabelPhase, LabelReady, LabelManaged,
}

// offeringLabels label the per-offering gauges.
var offeringLabels = []string{LabelInstanceType, LabelCapacityType, LabelZone}

// Registry holds every metric dovetail exports, registered in a Prometheus
// registry of its own (no package globals, so two operators in one process
// do not collide). Controllers receive the *Registry and update its fields.
//
// Adding a metric: add a field, build it in NewRegistry, and list it in
// collectors(); nothing else needs to change. Metrics defined elsewhere can
// be added with Register.
type Registry struct {
	// NodeClaimsCreated counts NodeClaims dovetail has taken charge of
	// (karpenter_nodeclaims_created_total{reason,nodepool,min_values_relaxed}).
	NodeClaimsCreated *prometheus.CounterVec
	// NodeClaimsTerminated counts NodeClaims whose finalizer was released
	// (karpenter_nodeclaims_terminated_total{nodepool,capacity_type,zone}).
	NodeClaimsTerminated *prometheus.CounterVec
	// NodesCreated counts nodes registered for a NodeClaim
	// (karpenter_nodes_created_total{nodepool,zone}).
	NodesCreated *prometheus.CounterVec
	// NodesTerminated counts nodes whose termination finished
	// (karpenter_nodes_terminated_total{nodepool,zone}).
	NodesTerminated *prometheus.CounterVec
	// NodesTerminationDuration observes the time from a node's deletion
	// request to the release of its finalizer
	// (karpenter_nodes_termination_duration_seconds{nodepool}, a summary).
	NodesTerminationDuration *prometheus.SummaryVec
	// PodsEvictionRequests counts eviction API calls by HTTP status code
	// (karpenter_pods_eviction_requests_total{code}, the peer's v1.15 name).
	PodsEvictionRequests *prometheus.CounterVec
	// NodePoolUsage is the capacity in use by a pool's nodes
	// (karpenter_nodepools_usage{resource_type,nodepool}).
	NodePoolUsage *prometheus.GaugeVec
	// NodePoolLimit is a pool's spec.limits
	// (karpenter_nodepools_limit{resource_type,nodepool}).
	NodePoolLimit *prometheus.GaugeVec
	// CloudProviderDuration times cloud calls
	// (karpenter_cloudprovider_duration_seconds{controller,method,provider}).
	CloudProviderDuration *prometheus.HistogramVec
	// CloudProviderErrors counts failed cloud calls by error type and the
	// NodePool the call was about ("" for Get and List)
	// (karpenter_cloudprovider_errors_total{controller,method,provider,error,nodepool}).
	CloudProviderErrors *prometheus.CounterVec
	// ClusterStateSynced is 1 once the controller's caches have synced
	// (karpenter_cluster_state_synced).
	ClusterStateSynced prometheus.Gauge
	// BuildInfo is 1, labelled with the build: version, Go version, target
	// architecture and VCS commit ("" when unknown) (karpenter_build_info).
	BuildInfo *prometheus.GaugeVec
	// NodeClaimsDisrupted counts NodeClaims deleted by a disruption
	// (voluntary or expiration), by reason ("expired", "empty", "drifted",
	// "underutilized") (karpenter_nodeclaims_disrupted_total{reason,nodepool,capacity_type}).
	NodeClaimsDisrupted *prometheus.CounterVec
	// DisruptionDecisions counts the commands the disruption controller
	// acted on, by decision ("delete", "replace", or "terminate-first"), reason and
	// consolidation type ("empty", "single", "multi", or "" for drift)
	// (karpenter_voluntary_disruption_decisions_total{decision,reason,consolidation_type}).
	DisruptionDecisions *prometheus.CounterVec
	// DisruptionEligibleNodes is the number of nodes the last planner pass
	// could have disrupted, by reason
	// (karpenter_voluntary_disruption_eligible_nodes{reason}).
	DisruptionEligibleNodes *prometheus.GaugeVec
	// DisruptionEvaluationDuration times one planner pass (all methods at
	// once) (karpenter_voluntary_disruption_decision_evaluation_duration_seconds).
	DisruptionEvaluationDuration prometheus.Histogram
	// NodePoolAllowedDisruptions is how many more nodes a pool's budgets
	// allow to be disrupting now, by reason
	// (karpenter_nodepools_allowed_disruptions{nodepool,reason}).
	NodePoolAllowedDisruptions *prometheus.GaugeVec
	// ClusterStateNodeCount is the number of nodes the controller's
	// cluster view holds: every Node (managed or not) and every launched
	// NodeClaim whose Node has not registered, one per provider id
	// (karpenter_cluster_state_node_count). Made when scraped, from the
	// NodePool counter's Node and NodeClaim stores.
	ClusterStateNodeCount *ScrapeGauge
	// NodeClaimsInstanceTerminationDuration observes, per NodeClaim whose
	// instance was launched, the seconds from the first instance
	// termination call (the InstanceTerminating condition's transition) to
	// the cloud reporting the instance gone
	// (karpenter_nodeclaims_instance_termination_duration_seconds{nodepool}).
	NodeClaimsInstanceTerminationDuration *prometheus.HistogramVec
	// OfferingAvailable is 1 when an offering of an instance type (a
	// capacity type in a zone) can be launched, 0 when not, for the
	// instance types of every NodePool
	// (karpenter_cloudprovider_instance_type_offering_available{instance_type,capacity_type,zone}).
	OfferingAvailable *prometheus.GaugeVec
	// OfferingPriceEstimate is the hourly price in USD the controller uses
	// for an offering
	// (karpenter_cloudprovider_instance_type_offering_price_estimate{instance_type,capacity_type,zone}).
	OfferingPriceEstimate *prometheus.GaugeVec
	// PodsState is 1 per pod, labelled with where and how it runs
	// (karpenter_pods_state{PodStateLabels...}). Made when scraped, from
	// the pod metrics controller's Pod and Node stores.
	PodsState *ScrapeGauge
	// PodsStartupDuration observes, for each pod seen Pending, the seconds
	// from its creation to its Ready condition turning True
	// (karpenter_pods_startup_duration_seconds, a summary).
	PodsStartupDuration prometheus.Summary

	// NodeClaimsRegistered counts NodeClaims whose node registered
	// (dovetail_nodeclaims_registered_total{nodepool}).
	NodeClaimsRegistered *prometheus.CounterVec
	// NodeClaimsLivenessTimeouts counts NodeClaims deleted because they
	// did not launch or register in time
	// (dovetail_nodeclaims_liveness_timeouts_total{nodepool,phase}, phase
	// "launch" or "registration").
	NodeClaimsLivenessTimeouts *prometheus.CounterVec
	// NodeClaimsInsufficientCapacity counts launches refused for lack of
	// capacity (dovetail_nodeclaims_insufficient_capacity_total{nodepool}).
	NodeClaimsInsufficientCapacity *prometheus.CounterVec
	// NodePoolNodes counts a pool's launched NodeClaims by capacity type
	// and instance type (dovetail_nodepool_nodes{nodepool,capacity_type,instance_type}).
	NodePoolNodes *prometheus.GaugeVec
	// NodePoolCostPerHour is the summed hourly price of a pool's launched
	// offerings in USD (dovetail_nodepool_cost_per_hour{nodepool}).
	NodePoolCostPerHour *prometheus.GaugeVec
	// NodePoolCost is NodePoolCostPerHour under the peer's name, whose
	// unit is the cloud's (USD per hour on AWS)
	// (karpenter_nodepools_cost_total{nodepool}).
	NodePoolCost *prometheus.GaugeVec
	// CloudProviderCalls counts cloud calls by outcome, "success" or
	// "error" (dovetail_cloudprovider_calls_total{controller,method,provider,outcome}).
	CloudProviderCalls *prometheus.CounterVec
	// DisruptionSavings sums the hourly savings in USD of the commands the
	// disruption controller completed, by reason
	// (dovetail_disruption_savings_dollars_per_hour_total{reason}).
	DisruptionSavings *prometheus.CounterVec
	// FleetPricePerHour is the hourly price in USD of every managed node,
	// as the last planner pass priced it (dovetail_fleet_price_per_hour).
	FleetPricePerHour prometheus.Gauge
	// FleetLowerBoundPricePerHour is the LP lower bound on the hourly price
	// of a fleet for the pods now running or pending
	// (dovetail_fleet_lower_bound_price_per_hour).
	FleetLowerBoundPricePerHour prometheus.Gauge
	// GarbageCollected counts what garbage collection removed
	// (dovetail_garbage_collected_total{kind}, kind "instance", "nodeclaim"
	// or "node").
	GarbageCollected *prometheus.CounterVec
	// EventsDropped counts Kubernetes Events dropped because too many were
	// waiting for the API server or their reason was over its rate
	// (dovetail_events_dropped_total).
	EventsDropped prometheus.Counter

	// DisruptionDecisionsByNodePool is DisruptionDecisions per NodePool
	// (karpenter_voluntary_disruption_decisions_by_nodepool_total{decision,reason,consolidation_type,nodepool}).
	DisruptionDecisionsByNodePool *prometheus.CounterVec
	// DisruptionTerminateFirstDecisions counts terminate-first commands
	// (decision "terminate-first": TerminateFirstDrift, TerminateFirstRepair)
	// per NodePool, by reason and why the replacement could not launch
	// first ("static-at-limit", "nodepool-at-limit")
	// (karpenter_voluntary_disruption_terminate_first_decisions_total{nodepool,reason,terminate_first_reason}).
	DisruptionTerminateFirstDecisions *prometheus.CounterVec

	// Capacity of nodes and what pods ask of it, and the NodePools'
	// owners, for the dashboards (deploy/dashboards); registered here, set
	// by the node and NodePool counters.
	//
	// Nodes holds a node's allocatable resources
	// (karpenter_nodes_allocatable{node_name,nodepool,resource_type,capacity_type,instance_type,zone})
	// and the sum of the requests of the pods bound to it
	// (karpenter_nodes_total_pod_requests{...the same labels}).
	Nodes *NodeGauges
	// NodePoolInfo is 1 per NodePool, labelled with the `team` label of
	// its node template ("" when none), so cost and node metrics can be
	// summed per team (dovetail_nodepool_info{nodepool,team}).
	NodePoolInfo *prometheus.GaugeVec

	reg *prometheus.Registry
	// infos describe every metric registered, by fully qualified name.
	infos map[string]Info
}

// NewRegistry builds every metric and registers it, together with the Go
// runtime and process collectors, in a new Prometheus registry.
func NewRegistry() *Registry {
	r := &Registry{
		NodeClaimsCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "nodeclaims", Name: "created_total",
			Help: "NodeClaims taken in charge by the controller, by creation reason, NodePool and whether minValues were relaxed.",
		}, []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed}),
		NodeClaimsTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "nodeclaims", Name: "terminated_total",
			Help: "NodeClaims whose termination finished, by NodePool, capacity type and zone.",
		}, []string{LabelNodePool, LabelCapacityType, LabelZone}),
		NodesCreated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "nodes", Name: "created_total",
			Help: "Nodes registered for a NodeClaim, by NodePool and zone.",
		}, []string{LabelNodePool, LabelZone}),
		NodesTerminated: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "nodes", Name: "terminated_total",
			Help: "Nodes whose termination finished, by NodePool and zone.",
		}, []string{LabelNodePool, LabelZone}),
		NodesTerminationDuration: prometheus.NewSummaryVec(prometheus.SummaryOpts{
			Namespace: PeerNamespace, Subsystem: "nodes", Name: "termination_duration_seconds",
			Help:       "Seconds from a node's deletion request until its finalizer is released.",
			Objectives: map[float64]float64{0.5: 0.05, 0.9: 0.01, 0.99: 0.001},
		}, []string{LabelNodePool}),
		PodsEvictionRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "pods", Name: "eviction_requests_total",
			Help: "Eviction API requests made while draining nodes, by HTTP status code.",
		}, []string{LabelCode}),
		NodePoolUsage: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "nodepools", Name: "usage",
			Help: "Capacity of a NodePool's launched nodes, by resource type.",
		}, []string{LabelResourceType, LabelNodePool}),
		NodePoolLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "nodepools", Name: "limit",
			Help: "The limits of a NodePool (spec.limits), by resource type.",
		}, []string{LabelResourceType, LabelNodePool}),
		CloudProviderDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: PeerNamespace, Subsystem: "cloudprovider", Name: "duration_seconds",
			Help:    "Duration of cloud provider calls, by calling controller, method and provider.",
			Buckets: prometheus.ExponentialBucketsRange(0.001, 60, 16),
		}, []string{LabelController, LabelMethod, LabelProvider}),
		CloudProviderErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "cloudprovider", Name: "errors_total",
			Help: "Failed cloud provider calls, by calling controller, method, provider, error type and NodePool.",
		}, []string{LabelController, LabelMethod, LabelProvider, LabelError, LabelNodePool}),
		ClusterStateSynced: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "cluster_state", Name: "synced",
			Help: "1 once the controller's view of nodes, NodeClaims and pods has synced with the API server, else 0.",
		}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Name: "build_info",
			Help: "Always 1; the labels name the running build.",
		}, []string{LabelVersion, LabelGoVersion, LabelGoArch, LabelCommit}),
		NodeClaimsDisrupted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "nodeclaims", Name: "disrupted_total",
			Help: "NodeClaims deleted by disruption or expiration, by reason, NodePool and capacity type.",
		}, []string{LabelReason, LabelNodePool, LabelCapacityType}),
		DisruptionDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "voluntary_disruption", Name: "decisions_total",
			Help: "Disruption commands acted on, by decision (delete, replace), reason and consolidation type.",
		}, []string{LabelDecision, LabelReason, LabelConsolidationType}),
		DisruptionEligibleNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "voluntary_disruption", Name: "eligible_nodes",
			Help: "Nodes the last disruption pass could have disrupted, by reason.",
		}, []string{LabelReason}),
		DisruptionEvaluationDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: PeerNamespace, Subsystem: "voluntary_disruption", Name: "decision_evaluation_duration_seconds",
			Help:    "Duration of one disruption planner pass (every method at once).",
			Buckets: prometheus.ExponentialBucketsRange(0.001, 60, 16),
		}),
		NodePoolAllowedDisruptions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "nodepools", Name: "allowed_disruptions",
			Help: "How many more of a NodePool's nodes its budgets allow to be disrupting now, by reason.",
		}, []string{LabelNodePool, LabelReason}),

		ClusterStateNodeCount: newScrapeGauge(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "cluster_state", Name: "node_count",
			Help: "Nodes in the controller's cluster view: every Node and every launched NodeClaim without a Node yet, one per provider id.",
		}),
		NodeClaimsInstanceTerminationDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: PeerNamespace, Subsystem: "nodeclaims", Name: "instance_termination_duration_seconds",
			Help:    "Seconds from the first call terminating a NodeClaim's instance until the cloud reports it gone, by NodePool.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}, []string{LabelNodePool}),
		OfferingAvailable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "cloudprovider", Name: "instance_type_offering_available",
			Help: "1 if an instance type can be launched with a capacity type in a zone, else 0, for the instance types of every NodePool.",
		}, offeringLabels),
		OfferingPriceEstimate: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "cloudprovider", Name: "instance_type_offering_price_estimate",
			Help: "Hourly price in USD the controller uses for an instance type with a capacity type in a zone.",
		}, offeringLabels),
		PodsState: newScrapeGauge(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "pods", Name: "state",
			Help: "1 per pod, labelled with its name, namespace, owner, node, whether it is scheduled, the node's NodePool, zone, architecture, capacity type and instance type, its phase, whether it is ready and whether its node is managed.",
		}, PodStateLabels...),
		PodsStartupDuration: prometheus.NewSummary(prometheus.SummaryOpts{
			Namespace: PeerNamespace, Subsystem: "pods", Name: "startup_duration_seconds",
			Help:       "Seconds from a pod's creation until it is ready, for pods seen pending.",
			Objectives: map[float64]float64{0: 0.01, 0.5: 0.01, 0.9: 0.01, 0.99: 0.01, 1: 0.01},
		}),

		NodeClaimsRegistered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "nodeclaims", Name: "registered_total",
			Help: "NodeClaims whose node registered, by NodePool.",
		}, []string{LabelNodePool}),
		NodeClaimsLivenessTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "nodeclaims", Name: "liveness_timeouts_total",
			Help: "NodeClaims deleted because they did not launch (phase=launch) or register (phase=registration) in time.",
		}, []string{LabelNodePool, LabelPhase}),
		NodeClaimsInsufficientCapacity: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "nodeclaims", Name: "insufficient_capacity_total",
			Help: "Launches the cloud refused for lack of capacity, by NodePool.",
		}, []string{LabelNodePool}),
		NodePoolNodes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "nodepool", Name: "nodes",
			Help: "Launched NodeClaims of a NodePool, by capacity type and instance type.",
		}, []string{LabelNodePool, LabelCapacityType, LabelInstanceType}),
		NodePoolCost: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "nodepools", Name: "cost_total",
			Help: "Summed hourly price in USD of a NodePool's launched offerings (the same as dovetail_nodepool_cost_per_hour; an estimate, not a bill).",
		}, []string{LabelNodePool}),
		NodePoolCostPerHour: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "nodepool", Name: "cost_per_hour",
			Help: "Summed hourly price in USD of a NodePool's launched offerings, at the prices seen at launch (an estimate, not a bill).",
		}, []string{LabelNodePool}),
		CloudProviderCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "cloudprovider", Name: "calls_total",
			Help: "Cloud provider calls, by calling controller, method, provider and outcome (success or error).",
		}, []string{LabelController, LabelMethod, LabelProvider, LabelOutcome}),
		DisruptionSavings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "disruption", Name: "savings_dollars_per_hour_total",
			Help: "Summed hourly savings in USD of the disruption commands completed, by reason (an estimate at launch prices).",
		}, []string{LabelReason}),
		FleetPricePerHour: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "fleet", Name: "price_per_hour",
			Help: "Hourly price in USD of every managed node, as the last disruption pass priced it.",
		}),
		FleetLowerBoundPricePerHour: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "fleet", Name: "lower_bound_price_per_hour",
			Help: "LP lower bound in USD on the hourly price of a fleet for the pods now running or pending.",
		}),
		GarbageCollected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "garbage", Name: "collected_total",
			Help: "Leaked objects removed by garbage collection, by kind (instance, nodeclaim, node).",
		}, []string{LabelKind}),
		EventsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "events", Name: "dropped_total",
			Help: "Kubernetes Events dropped because too many were waiting for the API server or their reason was over its rate.",
		}),

		DisruptionDecisionsByNodePool: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "voluntary_disruption", Name: "decisions_by_nodepool_total",
			Help: "Voluntary disruption decisions per NodePool, by decision, reason and consolidation type.",
		}, []string{LabelDecision, LabelReason, LabelConsolidationType, LabelNodePool}),
		DisruptionTerminateFirstDecisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: PeerNamespace, Subsystem: "voluntary_disruption", Name: "terminate_first_decisions_total",
			Help: "Terminate-first disruption commands per NodePool, by reason and why the replacement could not launch first.",
		}, []string{LabelNodePool, LabelReason, LabelTerminateFirstReason}),

		Nodes: newNodeGauges(prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "nodes", Name: "allocatable",
			Help: "Allocatable resources of a node, by node, NodePool, resource type, capacity type, instance type and zone.",
		}, prometheus.GaugeOpts{
			Namespace: PeerNamespace, Subsystem: "nodes", Name: "total_pod_requests",
			Help: "Summed resource requests of the pods bound to a node, by node, NodePool, resource type, capacity type, instance type and zone.",
		}, nodeLabels),
		NodePoolInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Subsystem: "nodepool", Name: "info",
			Help: "1 per NodePool, labelled with its node template's team label (empty when none): join on nodepool to sum cost or nodes per team.",
		}, []string{LabelNodePool, LabelTeam}),
		reg:   prometheus.NewRegistry(),
		infos: map[string]Info{},
	}
	r.BuildInfo.WithLabelValues(version.Version, runtime.Version(), runtime.GOARCH, version.Commit()).Set(1)
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.reg.MustRegister(r.collectors()...)
	r.record(r.collectors()...)
	return r
}

// collectors lists the fields of r to register.
func (r *Registry) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		r.NodeClaimsCreated, r.NodeClaimsTerminated, r.NodesCreated, r.NodesTerminated,
		r.NodesTerminationDuration, r.PodsEvictionRequests, r.NodePoolUsage, r.NodePoolLimit,
		r.CloudProviderDuration, r.CloudProviderErrors, r.ClusterStateSynced, r.BuildInfo,
		r.NodeClaimsRegistered, r.NodeClaimsLivenessTimeouts, r.NodeClaimsInsufficientCapacity,
		r.NodePoolNodes, r.NodePoolCostPerHour, r.NodePoolCost, r.CloudProviderCalls, r.GarbageCollected, r.EventsDropped,
		r.NodeClaimsDisrupted, r.DisruptionDecisions, r.DisruptionEligibleNodes, r.DisruptionEvaluationDuration,
		r.NodePoolAllowedDisruptions, r.DisruptionSavings, r.FleetPricePerHour, r.FleetLowerBoundPricePerHour,
		r.DisruptionDecisionsByNodePool, r.DisruptionTerminateFirstDecisions, r.Nodes.Allocatable, r.Nodes.Requests, r.NodePoolInfo,
		r.ClusterStateNodeCount, r.NodeClaimsInstanceTerminationDuration, r.OfferingAvailable,
		r.OfferingPriceEstimate, r.PodsState, r.PodsStartupDuration,
	}
}

// Register adds collectors defined outside this package. It fails, naming
// the collector, when one clashes with a metric already registered.
func (r *Registry) Register(cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := r.reg.Register(c); err != nil {
			return fmt.Errorf("registering collector %d (%T): %w", i, c, err)
		}
		r.record(c)
	}
	return nil
}

// descParts pulls the metric name and label names out of a Desc's String
// form, the only place client_golang exposes them.
var descParts = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*variableLabels: \{([^}]*)\}\}$`)

// Info describes a registered metric.
type Info struct {
	// Name is the fully qualified name.
	Name string
	// Type is "counter", "gauge", "histogram" or "summary" ("" when the
	// collector does not say).
	Type string
	// Labels are the label names, sorted.
	Labels []string
}

func (r *Registry) record(cs ...prometheus.Collector) {
	for _, c := range cs {
		typ := kind(c)
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descParts.FindStringSubmatch(d.String())
			if m == nil {
				continue
			}
			var labels []string
			if m[2] != "" {
				labels = strings.Split(m[2], ",")
				sort.Strings(labels)
			}
			r.infos[m[1]] = Info{Name: m[1], Type: typ, Labels: labels}
		}
	}
}

// kind names the type of the metrics c collects.
func kind(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.CounterVec:
		return "counter"
	case *prometheus.GaugeVec, *ScrapeGauge, *nodeGaugeCollector:
		return "gauge"
	case *prometheus.HistogramVec:
		return "histogram"
	case *prometheus.SummaryVec:
		return "summary"
	}
	// A single metric says what it is when written.
	if m, ok := c.(prometheus.Metric); ok {
		var pb dto.Metric
		if m.Write(&pb) == nil {
			switch {
			case pb.Counter != nil:
				return "counter"
			case pb.Gauge != nil:
				return "gauge"
			case pb.Histogram != nil:
				return "histogram"
			case pb.Summary != nil:
				return "summary"
			}
		}
	}
	return ""
}

// Names lists the names of the metrics dovetail registered in r (its own
// and those added with Register; not the Go runtime's, process or
// controller-runtime metrics), sorted. Dashboards are checked against it.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.infos))
	for n := range r.infos {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Infos describes the metrics of Names, in the same order.
func (r *Registry) Infos() []Info {
	out := make([]Info, 0, len(r.infos))
	for _, n := range r.Names() {
		out = append(out, r.infos[n])
	}
	return out
}

// Gatherer returns the registry for scraping.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the metrics of r and of the extra gatherers (for
// example controller-runtime's registry) in the Prometheus text format.
func (r *Registry) Handler(extra ...prometheus.Gatherer) http.Handler {
	gs := append(prometheus.Gatherers{r.reg}, extra...)
	return promhttp.HandlerFor(gs, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// DeleteNodePool drops every series labelled with the NodePool, so a deleted
// pool stops being reported.
func (r *Registry) DeleteNodePool(nodePool string) {
	r.DeleteNodePoolCounts(nodePool)
	r.NodePoolAllowedDisruptions.DeletePartialMatch(prometheus.Labels{LabelNodePool: nodePool})
}

// DeleteNodePoolCounts drops the series the NodePool counter sets (usage,
// limits, nodes, $/h, info, per-node capacity and requests), before it sets
// them again; the disruption controller's series stay.
func (r *Registry) DeleteNodePoolCounts(nodePool string) {
	match := prometheus.Labels{LabelNodePool: nodePool}
	r.NodePoolUsage.DeletePartialMatch(match)
	r.NodePoolLimit.DeletePartialMatch(match)
	r.NodePoolNodes.DeletePartialMatch(match)
	r.NodePoolCostPerHour.DeletePartialMatch(match)
	r.NodePoolCost.DeletePartialMatch(match)
	r.NodePoolInfo.DeletePartialMatch(match)
	r.Nodes.DeleteNodePool(nodePool)
}

// nodeLabels label the per-node capacity gauges.
var nodeLabels = []string{LabelNodeName, LabelNodePool, LabelResourceType, LabelCapacityType, LabelInstanceType, LabelZone}
