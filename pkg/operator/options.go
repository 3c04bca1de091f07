package operator

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/config/rbac"
)

// Options configure the operator. Field paths in Validate's errors use the
// JSON-ish names in the comments; the CLI maps them to its flags and
// environment variables.
type Options struct {
	// ClusterName (clusterName) names the cluster in cloud tags. Required.
	ClusterName string
	// ClusterEndpoint (clusterEndpoint) is the API server URL nodes join
	// (https); empty means discovered with eks:DescribeCluster.
	ClusterEndpoint string
	// InterruptionQueue (interruptionQueue) is the SQS queue name; empty
	// turns interruption handling off.
	InterruptionQueue string
	// BatchIdleDuration (batchIdleDuration) and BatchMaxDuration
	// (batchMaxDuration) bound a provisioning batch: it closes after
	// BatchIdleDuration without a new pending pod, or BatchMaxDuration in
	// all. Defaults 1 s and 10 s.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// KubeClientQPS (kubeClientQPS) and KubeClientBurst (kubeClientBurst)
	// rate-limit the Kubernetes client. Defaults 200 and 300.
	KubeClientQPS   float32
	KubeClientBurst int
	// MetricsPort (metricsPort) and HealthProbePort (healthProbePort): 0
	// picks a free port; -1 turns the server off. Defaults 8080 and 8081.
	MetricsPort, HealthProbePort int
	// BindAddress is the host the servers listen on ("" means every
	// interface).
	BindAddress string
	// ProfilingBindAddress (profilingBindAddress) is the host:port of a
	// pprof server (/debug/pprof/: heap, goroutine, profile, ...), served
	// by controller-runtime's manager (PprofBindAddress). Empty (the
	// default) serves none. It runs on every replica, leader or not.
	ProfilingBindAddress string
	// LogLevel (logLevel): debug, info, warn or error. Default info.
	LogLevel string
	// FeatureGates (featureGates) switch optional behaviour.
	FeatureGates FeatureGates
	// LeaderElection (leaderElection) makes replicas take turns.
	LeaderElection LeaderElection
	// LivenessTimeScale (livenessTimeScale) multiplies the NodeClaim
	// liveness timeouts (5 min to launch, 15 min to register): 1 in a real
	// cluster; local mode, where nodes boot in milliseconds, uses less.
	// Must be in (0, 1].
	LivenessTimeScale float64
	// ConsolidationMinSavings (consolidationMinSavings) is the least $/h
	// one consolidation command must save, and
	// ConsolidationMinSavingsPerPod (consolidationMinSavingsPerPod) the
	// least $/h per pod it evicts; a NodePool's
	// dovetail.sh/consolidation-min-savings[-per-pod] annotations override
	// them. Emptiness, drift and repair are never held. Default 0: off.
	ConsolidationMinSavings, ConsolidationMinSavingsPerPod float64
	// Peer holds the rest of the peer's settings (peersettings.go).
	Peer PeerSettings
}

// LeaderElection configures the lease replicas compete for.
type LeaderElection struct {
	Enabled bool
	// Name and Namespace of the Lease (defaults dovetail-leader-election in
	// kube-system).
	Name, Namespace string
	// LeaseDuration, RenewDeadline and RetryPeriod: how long a lease lasts
	// without renewal (15 s), how long the leader tries to renew before
	// giving up (10 s), and how often candidates retry (2 s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Defaults.
const (
	DefaultBatchIdleDuration = time.Second
	DefaultBatchMaxDuration  = 10 * time.Second
	DefaultKubeClientQPS     = 200
	DefaultKubeClientBurst   = 300
	DefaultMetricsPort       = 8080
	DefaultHealthProbePort   = 8081
	DefaultLogLevel          = "info"
	// The lease defaults are config/rbac's: its Role names this lease in
	// this namespace.
	DefaultLeaseName      = rbac.DefaultLeaseName
	DefaultLeaseNamespace = rbac.DefaultLeaseNamespace
	DefaultLeaseDuration  = 15 * time.Second
	DefaultRenewDeadline  = 10 * time.Second
	DefaultRetryPeriod    = 2 * time.Second
)

// DefaultOptions returns the defaults (ClusterName is left empty: it has
// none).
func DefaultOptions() Options {
	return Options{
		BatchIdleDuration: DefaultBatchIdleDuration,
		BatchMaxDuration:  DefaultBatchMaxDuration,
		KubeClientQPS:     DefaultKubeClientQPS,
		KubeClientBurst:   DefaultKubeClientBurst,
		MetricsPort:       DefaultMetricsPort,
		HealthProbePort:   DefaultHealthProbePort,
		LogLevel:          DefaultLogLevel,
		FeatureGates:      DefaultFeatureGates(),
		LeaderElection: LeaderElection{
			Enabled: true, Name: DefaultLeaseName, Namespace: DefaultLeaseNamespace,
			LeaseDuration: DefaultLeaseDuration, RenewDeadline: DefaultRenewDeadline, RetryPeriod: DefaultRetryPeriod,
		},
		LivenessTimeScale: 1,
		Peer:              DefaultPeerSettings(),
	}
}

var clusterNamePattern = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9_-]*$`)

// LogLevels are the accepted values of LogLevel.
var LogLevels = []string{"debug", "info", "warn", "error"}

// Validate checks every option and returns all problems at once.
func (o Options) Validate() field.ErrorList {
	var errs field.ErrorList
	if o.ClusterName == "" {
		errs = append(errs, field.Required(field.NewPath("clusterName"), "the name of the cluster dovetail manages"))
	} else if len(o.ClusterName) > 100 || !clusterNamePattern.MatchString(o.ClusterName) {
		errs = append(errs, field.Invalid(field.NewPath("clusterName"), o.ClusterName,
			"must be 1-100 letters, digits, '-' or '_', starting with a letter or digit (EKS cluster name rules)"))
	}
	if o.ClusterEndpoint != "" {
		if u, err := url.Parse(o.ClusterEndpoint); err != nil || u.Scheme != "https" || u.Host == "" || !validHost(u.Hostname()) {
			errs = append(errs, field.Invalid(field.NewPath("clusterEndpoint"), o.ClusterEndpoint,
				"must be an https URL such as https://ABC.gr7.us-east-1.eks.amazonaws.com (or empty: discovered)"))
		}
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, field.Invalid(field.NewPath(name), d.String(), "must be positive"))
		}
	}
	positive("batchIdleDuration", o.BatchIdleDuration)
	positive("batchMaxDuration", o.BatchMaxDuration)
	if o.BatchIdleDuration > 0 && o.BatchMaxDuration > 0 && o.BatchIdleDuration > o.BatchMaxDuration {
		errs = append(errs, field.Invalid(field.NewPath("batchIdleDuration"), o.BatchIdleDuration.String(),
			"must not exceed batchMaxDuration ("+o.BatchMaxDuration.String()+")"))
	}
	if o.KubeClientQPS <= 0 || math.IsInf(float64(o.KubeClientQPS), 0) || math.IsNaN(float64(o.KubeClientQPS)) {
		errs = append(errs, field.Invalid(field.NewPath("kubeClientQPS"), o.KubeClientQPS, "must be a positive number"))
	}
	if o.KubeClientBurst <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("kubeClientBurst"), o.KubeClientBurst, "must be positive"))
	}
	port := func(name string, p int) {
		if p < -1 || p > 65535 {
			errs = append(errs, field.Invalid(field.NewPath(name), p, "must be a port (0-65535; 0 picks a free one, -1 turns the server off)"))
		}
	}
	port("metricsPort", o.MetricsPort)
	port("healthProbePort", o.HealthProbePort)
	if o.MetricsPort > 0 && o.MetricsPort == o.HealthProbePort {
		errs = append(errs, field.Invalid(field.NewPath("healthProbePort"), o.HealthProbePort, "must differ from metricsPort"))
	}
	if o.BindAddress != "" && !validHost(o.BindAddress) {
		errs = append(errs, field.Invalid(field.NewPath("bindAddress"), capEcho(o.BindAddress),
			"must be an IP address (e.g. 127.0.0.1, ::1) or a host name, or empty for every interface"))
	}
	if o.ProfilingBindAddress != "" {
		host, port, err := net.SplitHostPort(o.ProfilingBindAddress)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 || (host != "" && !validHost(host)) {
			errs = append(errs, field.Invalid(field.NewPath("profilingBindAddress"), o.ProfilingBindAddress,
				"must be host:port (e.g. 127.0.0.1:6060 or :6060), or empty to serve no profiles"))
		}
	}
	if !contains(LogLevels, o.LogLevel) {
		errs = append(errs, field.NotSupported(field.NewPath("logLevel"), o.LogLevel, LogLevels))
	}
	if !(o.LivenessTimeScale > 0 && o.LivenessTimeScale <= 1) {
		errs = append(errs, field.Invalid(field.NewPath("livenessTimeScale"), o.LivenessTimeScale, "must be in (0, 1]"))
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"consolidationMinSavings", o.ConsolidationMinSavings}, {"consolidationMinSavingsPerPod", o.ConsolidationMinSavingsPerPod}} {
		if !(v.v >= 0) || math.IsInf(v.v, 0) {
			errs = append(errs, field.Invalid(field.NewPath(v.name), v.v, "must be a non-negative number of $/h (0 turns the threshold off)"))
		}
	}
	errs = append(errs, validateGates("featureGates", Gates, o.FeatureGates)...)
	errs = append(errs, o.Peer.validate()...)
	if o.Peer.AWSFeatureGates[RebootForRepairGate] && !o.FeatureGates[NodeRepairGate] {
		errs = append(errs, field.Invalid(field.NewPath("awsFeatureGates"), RebootForRepairGate+"=true",
			"RebootForRepair reboots nodes for node repair, which is off: set the feature gate NodeRepair=true too (or leave RebootForRepair false)"))
	}
	le := o.LeaderElection
	if le.Enabled {
		p := field.NewPath("leaderElection")
		if msgs := validation.IsDNS1123Subdomain(le.Name); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("name"), le.Name, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsDNS1123Label(le.Namespace); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("namespace"), le.Namespace, strings.Join(msgs, "; ")))
		}
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"leaseDuration", le.LeaseDuration}, {"renewDeadline", le.RenewDeadline}, {"retryPeriod", le.RetryPeriod}} {
			if d.v <= 0 {
				errs = append(errs, field.Invalid(p.Child(d.name), d.v.String(), "must be positive"))
			}
		}
		if le.RenewDeadline > 0 && le.LeaseDuration > 0 && le.RenewDeadline >= le.LeaseDuration {
			errs = append(errs, field.Invalid(p.Child("renewDeadline"), le.RenewDeadline.String(),
				"must be shorter than leaseDuration ("+le.LeaseDuration.String()+")"))
		}
		if le.RetryPeriod > 0 && le.RenewDeadline > 0 && le.RetryPeriod >= le.RenewDeadline {
			errs = append(errs, field.Invalid(p.Child("retryPeriod"), le.RetryPeriod.String(),
				"must be shorter than renewDeadline ("+le.RenewDeadline.String()+")"))
		}
	}
	return errs
}

// validHost reports whether h is an IP address or a host name. A name
// whose last label is all digits ("999.1.1.1") is neither: no top-level
// domain is numeric, so it is a mistyped address.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	h = strings.ToLower(h) // host names are case-insensitive
	if validation.IsDNS1123Subdomain(h) != nil {
		return false
	}
	last := h[strings.LastIndexByte(h, '.')+1:]
	return strings.Trim(last, "0123456789") != ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FeatureGates maps gate names to whether they are on.
type FeatureGates map[string]bool

// Gate describes one feature gate: its default and, for each value, what
// dovetail does; a value dovetail does not implement has Refused set and is
// an error at start (Options.Validate), so no gate is accepted and ignored.
type Gate struct {
	Default bool
	// On and Off say what the gate does here when true and when false.
	On, Off string
	// RefuseOn: true is refused (the behaviour is not implemented);
	// RefuseOff: false is refused.
	RefuseOn, RefuseOff bool
}

// Gates are the feature gates dovetail accepts, under the peer's names so
// that the FEATURE_GATES value the peer's v1.15 Helm chart renders (nine
// gates: ReservedCapacity=true, the others false) carries over unchanged.
var Gates = map[string]Gate{
	"ReservedCapacity": {Default: true,
		On:  "the capacity reservations an EC2NodeClass's capacityReservationSelectorTerms select get reserved offerings, preferred while they have room (docs/aws.md)",
		Off: "reserved capacity is not used: no reserved offerings, nothing launches into a capacity reservation"},
	"SpotToSpotConsolidation": {Default: false,
		On:  "consolidation may replace a spot node with a cheaper spot node (controllers.Config.SpotToSpotConsolidation)",
		Off: "spot nodes are consolidated only by deletion or replacement with on-demand, never spot-to-spot"},
	NodeRepairGate: {Default: false,
		On:  "nodes whose conditions match one of the cloud provider's repair policies past its toleration are replaced (disruption reason Unhealthy; controllers.Config.NodeRepair)",
		Off: "unhealthy nodes are left to other tooling"},
	NodeOverlayGate: {Default: false,
		On:  "NodeOverlays adjust the price and extended resources of the instance types they match, for provisioning and consolidation; each overlay's status says whether it applies (controllers.Config.NodeOverlay; docs/api.md)",
		Off: "NodeOverlays are ignored, as the peer ignores them with the gate off, and marked so on their status"},
	StaticCapacityGate: {Default: false,
		On:  "a NodePool with spec.replicas keeps exactly that many nodes within limits.nodes (controllers.Config.StaticCapacity)",
		Off: "NodePools provision for pending pods only; a NodePool with spec.replicas gets ValidationSucceeded=False and no nodes"},
	CapacityBufferGate: {Default: false,
		On:  "CapacityBuffers are resolved (status, conditions) and their room is provisioned ahead of pending pods and kept from consolidation (controllers.Config.CapacityBuffer)",
		Off: "CapacityBuffers are ignored, as the peer ignores them with the gate off; no headroom is provisioned ahead of pending pods"},
	TerminateFirstDriftGate: {Default: false,
		On:  "a drifted node whose replacement cannot launch first (its NodePool's limits count the node until it is gone) is deleted first, within the Drifted budget, PDBs and do-not-disrupt as drift holds them, and provisioning launches for its pods once its capacity is released (controllers.Config.TerminateFirstDrift)",
		Off: "a drifted node whose replacement the NodePool's limits keep from launching first is kept (DriftReplacementBlocked, naming the limit)"},
	TerminateFirstRepairGate: {Default: false,
		On:  "an unhealthy node whose replacement cannot launch first (its NodePool's limits count the node until it is gone) is deleted first, within the Unhealthy budget and the repair drain bound, and provisioning launches for its pods once its capacity is released (controllers.Config.TerminateFirstRepair)",
		Off: "an unhealthy node whose replacement the NodePool's limits keep from launching first is kept (RepairBlocked, naming the limit)"},
	PodDeletionCostManagementGate: {Default: false,
		On:  "dovetail writes controller.kubernetes.io/pod-deletion-cost on pods owned by ReplicaSets (those without a cost, or marked dovetail.sh/pod-deletion-cost-managed), lowest on the nodes the disruption planner would drain first (controllers.Config.PodDeletionCostManagement)",
		Off: "pod-deletion-cost annotations are left to their owners; none is written or removed"},
	// SchedulerHandoff is dovetail's own: give the kube-scheduler the
	// provisioner's placement (status.nominatedNodeName) as nodes come up.
	SchedulerHandoffGate: {Default: true,
		On:  "pods planned onto a new node get status.nominatedNodeName when it appears",
		Off: "the kube-scheduler places pods on new nodes by itself"},
}

// KnownFeatureGates are the gates dovetail accepts, with their defaults.
var KnownFeatureGates = func() map[string]bool {
	m := map[string]bool{}
	for k, g := range Gates {
		m[k] = g.Default
	}
	return m
}()

// SpotToSpotConsolidationGate names the gate that lets consolidation
// replace spot with spot (controllers.Config.SpotToSpotConsolidation).
const SpotToSpotConsolidationGate = "SpotToSpotConsolidation"

// SchedulerHandoffGate names the gate of the provisioner's hand-off to the
// kube-scheduler (provisioning.Options.DisableHandoff when off).
const SchedulerHandoffGate = "SchedulerHandoff"

// StaticCapacityGate names the gate of static NodePools (spec.replicas;
// controllers.Config.StaticCapacity).
const StaticCapacityGate = "StaticCapacity"

// NodeOverlayGate names the peer's NodeOverlay gate.
const NodeOverlayGate = "NodeOverlay"

// CapacityBufferGate names the gate of CapacityBuffers
// (controllers.Config.CapacityBuffer).
const CapacityBufferGate = "CapacityBuffer"

// TerminateFirstDriftGate and TerminateFirstRepairGate name the peer's
// terminate-first gates (controllers.Config.TerminateFirstDrift,
// TerminateFirstRepair).
const (
	TerminateFirstDriftGate  = "TerminateFirstDrift"
	TerminateFirstRepairGate = "TerminateFirstRepair"
)

// NodeRepairGate names the peer's node repair gate
// (controllers.Config.NodeRepair).
const NodeRepairGate = "NodeRepair"

// PodDeletionCostManagementGate names the peer's gate of pod deletion
// costs (controllers.Config.PodDeletionCostManagement).
const PodDeletionCostManagementGate = "PodDeletionCostManagement"

// ReservedCapacityGate names the peer's reserved-capacity gate.
const ReservedCapacityGate = "ReservedCapacity"

// validateGates refuses every gate set to a value dovetail does not
// implement, naming it.
func validateGates(path string, set map[string]Gate, g FeatureGates) field.ErrorList {
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(g)) {
		gate, ok := set[name]
		if !ok {
			errs = append(errs, field.NotSupported(field.NewPath(path), name, slices.Sorted(maps.Keys(set))))
			continue
		}
		v := g[name]
		if (v && gate.RefuseOn) || (!v && gate.RefuseOff) {
			what := gate.On
			if !v {
				what = gate.Off
			}
			errs = append(errs, field.Invalid(field.NewPath(path), fmt.Sprintf("%s=%t", name, v),
				fmt.Sprintf("%s; set %s=%t or leave it out", what, name, !v)))
		}
	}
	return errs
}

// DefaultFeatureGates returns a copy of the defaults.
func DefaultFeatureGates() FeatureGates {
	out := FeatureGates{}
	for k, v := range KnownFeatureGates {
		out[k] = v
	}
	return out
}

// ErrFeatureGate is wrapped by every ParseFeatureGates error.
var ErrFeatureGate = errors.New("invalid feature gates")

// ParseFeatureGates parses "Name=true,Other=false" on top of the defaults.
// Unknown names, repeated names and values other than true/false are
// errors naming the position of the bad entry.
func ParseFeatureGates(s string) (FeatureGates, error) { return parseGates(Gates, s) }

func parseGates(set map[string]Gate, s string) (FeatureGates, error) {
	gates := FeatureGates{}
	for k, g := range set {
		gates[k] = g.Default
	}
	if strings.TrimSpace(s) == "" {
		return gates, nil
	}
	seen := map[string]int{}
	for i, entry := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(entry), "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%w: entry %d %q: want Name=true or Name=false", ErrFeatureGate, i+1, capEcho(entry))
		}
		if _, known := set[name]; !known {
			return nil, fmt.Errorf("%w: entry %d: unknown gate %q (known: %s)", ErrFeatureGate, i+1, capEcho(name), strings.Join(slices.Sorted(maps.Keys(set)), ", "))
		}
		if first, dup := seen[name]; dup {
			return nil, fmt.Errorf("%w: entry %d: gate %s repeated (first set in entry %d); give each gate once", ErrFeatureGate, i+1, name, first)
		}
		seen[name] = i + 1
		b, err := strconv.ParseBool(strings.TrimSpace(value))
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: gate %s: %q is not true or false", ErrFeatureGate, i+1, name, capEcho(value))
		}
		gates[name] = b
	}
	return gates, nil
}

// capEcho shortens s for an error message: bad input is echoed, but not
// without bound.
func capEcho(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}

// String writes the gates as ParseFeatureGates reads them, sorted.
func (g FeatureGates) String() string {
	names := make([]string, 0, len(g))
	for k := range g {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + strconv.FormatBool(g[n])
	}
	return strings.Join(parts, ",")
}
