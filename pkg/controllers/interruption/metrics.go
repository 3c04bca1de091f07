package interruption

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dovetail-sh/dovetail/pkg/metrics"
)

// Values of the message_type label, as the peer reports them.
const (
	TypeSpotInterrupted         = "spot_interrupted"
	TypeRebalanceRecommendation = "rebalance_recommendation"
	TypeScheduledChange         = "scheduled_change"
	TypeInstanceStopped         = "instance_stopped"
	TypeInstanceTerminated      = "instance_terminated"
	TypeUnknown                 = "unknown"
	TypeMalformed               = "malformed"
)

// Metrics are the interruption metrics, under the peer's names.
type Metrics struct {
	// Received counts messages by type.
	Received *prometheus.CounterVec
	// Deleted counts messages deleted from the queue after handling.
	Deleted prometheus.Counter
	// QueueDuration is the time from the event to its deletion.
	QueueDuration prometheus.Histogram
	// Actions counts what was done, by action (replace, delete, rebalance,
	// record).
	Actions *prometheus.CounterVec
}

// NewMetrics builds the metrics and registers them in reg (nil: not
// registered).
func NewMetrics(reg *metrics.Registry) (*Metrics, error) {
	m := &Metrics{
		Received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "interruption", Name: "received_messages_total",
			Help: "Interruption messages received from the queue, by message type.",
		}, []string{"message_type"}),
		Deleted: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "interruption", Name: "deleted_messages_total",
			Help: "Interruption messages deleted from the queue after handling.",
		}),
		QueueDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: metrics.PeerNamespace, Subsystem: "interruption", Name: "message_queue_duration_seconds",
			Help:    "Time from an interruption event to its deletion from the queue.",
			Buckets: prometheus.ExponentialBucketsRange(0.01, 600, 16),
		}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metrics.Namespace, Subsystem: "interruption", Name: "actions_total",
			Help: "Actions taken on interruption messages, by action.",
		}, []string{"action"}),
	}
	if reg != nil {
		if err := reg.Register(m.Received, m.Deleted, m.QueueDuration, m.Actions); err != nil {
			return nil, err
		}
	}
	return m, nil
}
