package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Emit reports one series of a ScrapeGauge: its value and its label values,
// in the order of the gauge's label names.
type Emit func(value float64, labelValues ...string)

// ScrapeGauge is a gauge whose series are made when it is collected, by a
// source function that reads what the owning controller already holds
// (its informer stores), so nothing is kept between scrapes. The owner
// sets the source once it has its stores (SetSource, in Register). Until
// then an unlabelled gauge reports 0 and a labelled one nothing.
type ScrapeGauge struct {
	desc     *prometheus.Desc
	labelled bool

	mu     sync.RWMutex
	source func(Emit)
}

func newScrapeGauge(o prometheus.GaugeOpts, labels ...string) *ScrapeGauge {
	return &ScrapeGauge{
		desc:     prometheus.NewDesc(prometheus.BuildFQName(o.Namespace, o.Subsystem, o.Name), o.Help, labels, nil),
		labelled: len(labels) > 0,
	}
}

// SetSource sets the function that emits the gauge's series when it is
// collected. It must be safe to call from the scraping goroutine and must
// not keep emit.
func (g *ScrapeGauge) SetSource(source func(Emit)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.source = source
}

// Describe sends the gauge's one description.
func (g *ScrapeGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

// Collect runs the source. A series with the wrong number of label values
// is sent as an invalid metric (the scrape reports the error), never a
// panic.
func (g *ScrapeGauge) Collect(ch chan<- prometheus.Metric) {
	g.mu.RLock()
	source := g.source
	g.mu.RUnlock()
	if source == nil {
		if !g.labelled {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, 0)
		}
		return
	}
	source(func(value float64, labelValues ...string) {
		m, err := prometheus.NewConstMetric(g.desc, prometheus.GaugeValue, value, labelValues...)
		if err != nil {
			m = prometheus.NewInvalidMetric(g.desc, err)
		}
		ch <- m
	})
}
