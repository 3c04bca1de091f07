package provisioning

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// ControllerLabel is the value of the controller label on the scheduler
// metrics, as the peer reports it.
const ControllerLabel = "provisioner"

// Metrics are the provisioning metrics. The karpenter_scheduler_* ones keep
// the peer's names and labels so its dashboards work unchanged; the
// NodeClaims this controller creates are counted by the NodeClaim lifecycle
// controller in karpenter_nodeclaims_created_total{reason="provisioning"}
// (from the creation-reason annotation written here).
type Metrics struct {
	// SchedulingDuration times each solve (snapshot to plan).
	SchedulingDuration *prometheus.HistogramVec
	// QueueDepth is the number of pods being scheduled by the solve that
	// is running, labelled with its scheduling_id; the series is removed
	// when the solve ends, so the label stays bounded.
	QueueDepth *prometheus.GaugeVec
	// UnschedulablePods is the number of pods the last solve could not
	// place.
	UnschedulablePods *prometheus.GaugeVec
	// PendingPods is the number of pods waiting for capacity at the last
	// pass: unschedulable pods, nominated ones included.
	PendingPods prometheus.Gauge
	// NominatedPods is the number of pods nominated to NodeClaims that are
	// still launching.
	NominatedPods prometheus.Gauge
	// Batches counts provisioning passes by outcome (solved, empty, error).
	Batches *prometheus.CounterVec
	// IgnoredPods is the number of pods waiting for capacity that the last
	// pass left to other nodes because they refuse every NodePool's nodes
	// (IgnoredPod), under the name the peer's v1.15 binary exports
	// (karpenter_scheduler_ignored_pods_count) and the name its metrics
	// reference page lists (karpenter_ignored_pod_count, IgnoredPodsAlias),
	// so dashboards built on either find it.
	IgnoredPods, IgnoredPodsAlias prometheus.Gauge
	// BufferPods is each CapacityBuffer's wanted room (placement
	// "wanted") and where the last pass placed it: on existing nodes,
	// on NodeClaims being launched, on the plan's new NodeClaims, or
	// nowhere (limits, constraints). Set for every buffer at every pass;
	// a deleted buffer's series go.
	BufferPods *prometheus.GaugeVec
}

// NewMetrics builds the metrics and registers them in reg.
func NewMetrics(reg *metrics.Registry) (*Metrics, error) {
	m := &Metrics{
		SchedulingDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "scheduler", Name: "scheduling_duration_seconds",
			Help:    "Duration of the scheduling simulation of a provisioning pass.",
			Buckets: prometheus.ExponentialBucketsRange(0.005, 600, 20),
		}, []string{metrics.LabelController}),
		QueueDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "scheduler", Name: "queue_depth",
			Help: "Number of pods the running scheduling simulation is placing.",
		}, []string{metrics.LabelController, "scheduling_id"}),
		UnschedulablePods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "scheduler", Name: "unschedulable_pods_count",
			Help: "Number of pods the last scheduling simulation could not place.",
		}, []string{metrics.LabelController}),
		PendingPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "provisioning", Name: "pending_pods",
			Help: "Pods the kube-scheduler marked unschedulable and not yet bound, at the last provisioning pass.",
		}),
		NominatedPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "provisioning", Name: "nominated_pods",
			Help: "Pending pods nominated to NodeClaims that are still launching.",
		}),
		IgnoredPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "scheduler", Name: "ignored_pods_count",
			Help: "Pods waiting for capacity that the last provisioning pass ignored: they refuse the nodes of every NodePool.",
		}),
		IgnoredPodsAlias: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metrics.PeerNamespace, Name: "ignored_pod_count",
			Help: "The same as karpenter_scheduler_ignored_pods_count (the name the peer's metrics reference lists).",
		}),
		BufferPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: metrics.Namespace, Subsystem: "capacitybuffer", Name: "pods",
			Help: "A CapacityBuffer's room in pods: wanted, and where the last provisioning pass placed it (existing, inflight, new, nowhere).",
		}, []string{metrics.LabelNamespace, "name", "placement"}),
		Batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "provisioning", Name: "batches_total",
			Help: "Provisioning passes, by outcome (solved, empty, error).",
		}, []string{metrics.LabelOutcome}),
	}
	if reg != nil {
		if err := reg.Register(m.SchedulingDuration, m.QueueDepth, m.UnschedulablePods, m.PendingPods, m.NominatedPods, m.Batches, m.IgnoredPods, m.IgnoredPodsAlias, m.BufferPods); err != nil {
			return nil, err
		}
	}
	return m, nil
}
