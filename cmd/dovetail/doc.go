// Command dovetail is the single dovetail binary.
//
//	dovetail controller        run the autoscaler (in a cluster, or under `local up`)
//	dovetail local up          run the whole stack on this machine: control plane, AWS emulator, controller
//	dovetail local fault ...   inject insufficient capacity or throttling into the running emulator
//	dovetail local interrupt   send an EC2 interruption event for an instance or node
//	dovetail simulate          plan nodes for manifests without a cluster
//	dovetail snapshot          write a live cluster (read-only) as simulate input
//	dovetail explain           why a pod is pending, why a NodeClaim has its instance type
//	dovetail cost              $/h now and $ spent per NodePool or team, spot share, lower bound
//	dovetail version           print the version
//
// Exit codes: 0 success, 1 error, 2 bad input. main only maps the error a
// command returns to its exit code (internal/cli/cmdutil); everything else
// lives in internal/cli and pkg.
package main
