// Package metricstest reads metric values back in tests and examples,
// without the extra module dependencies of client_golang's testutil.
//
// Value fails the test unless the collector holds exactly one series (pick
// one with WithLabelValues, or With, first); Count counts series, e.g. to
// check that DeleteNodePool removed a pool's series. With narrows a
// collector to the series with the given labels.
package metricstest
