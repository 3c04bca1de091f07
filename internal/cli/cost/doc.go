// Package cost is `dovetail cost`: the fleet's $/h now per NodePool or per
// NodePool label (--by team), node counts and spot share, the dollars spent
// over a window (--since) from the in-cluster cost record
// (pkg/costrecord, kept by pkg/controllers/cost), and the fleet's $/h next
// to the engine's lower bound for its pods. Read-only, through the
// kubeconfig.
//
// Options / NewCmd / Run as in cmdutil. Exit codes: 0 printed, 1 cluster
// error, 2 bad input (flags, kubeconfig). See docs/cost.md.
package cost
