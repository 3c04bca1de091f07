package metricstest

import (
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Value returns the value of the single series c collects (a counter,
// gauge or untyped metric; the sample count for a summary or histogram).
// It fails the test when c collects no series or more than one.
func Value(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	v, err := Read(c)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Read is Value for callers without a testing.TB (examples).
func Read(c prometheus.Collector) (float64, error) {
	ms := collect(c)
	if len(ms) != 1 {
		return 0, fmt.Errorf("collector has %d series, want exactly 1", len(ms))
	}
	return value(ms[0])
}

// Count returns the number of series c collects.
func Count(c prometheus.Collector) int { return len(collect(c)) }

func collect(c prometheus.Collector) []*dto.Metric {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	var out []*dto.Metric
	for m := range ch {
		pb := &dto.Metric{}
		if err := m.Write(pb); err == nil {
			out = append(out, pb)
		}
	}
	return out
}

func value(m *dto.Metric) (float64, error) {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue(), nil
	case m.Gauge != nil:
		return m.Gauge.GetValue(), nil
	case m.Untyped != nil:
		return m.Untyped.GetValue(), nil
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount()), nil
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount()), nil
	}
	return 0, fmt.Errorf("metric %v has no value", m)
}

// With is the part of c whose series carry every label of labels, for
// Value or Count (a collector such as a NodeGauges' has no
// WithLabelValues).
func With(c prometheus.Collector, labels prometheus.Labels) prometheus.Collector {
	return with{c: c, labels: labels}
}

type with struct {
	c      prometheus.Collector
	labels prometheus.Labels
}

func (w with) Describe(ch chan<- *prometheus.Desc) { w.c.Describe(ch) }

func (w with) Collect(ch chan<- prometheus.Metric) {
	in := make(chan prometheus.Metric)
	go func() {
		w.c.Collect(in)
		close(in)
	}()
	for m := range in {
		pb := &dto.Metric{}
		if err := m.Write(pb); err != nil {
			continue
		}
		found := 0
		for _, lp := range pb.GetLabel() {
			if v, ok := w.labels[lp.GetName()]; ok && v == lp.GetValue() {
				found++
			}
		}
		if found == len(w.labels) {
			ch <- m
		}
	}
}
