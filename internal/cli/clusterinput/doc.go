// Package clusterinput reads what the read-only commands (explain, cost)
// work on: the cluster of the kubeconfig through pkg/clusterdump (list
// only), or simulate input files through pkg/simulate, and builds the
// engine's input from it with the built-in catalog (pkg/snapshot). It holds
// no decisions.
package clusterinput
