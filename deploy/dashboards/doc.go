// Package dashboards holds dovetail's Grafana dashboards (*.json, import
// them or load them with Grafana's dashboard provisioning) and the test
// that keeps them honest: every PromQL expression parses with the
// Prometheus parser, names only metrics the controller registers
// (pkg/metrics and the controllers' own), and the panels the install
// guide promises are there.
//
// Must not: hold Go code used at run time.
package dashboards
