// Package local runs the whole dovetail stack on one machine: a real
// control plane (package controlplane, with the controller manager, the
// scheduler and kwok) plus the Components registered by the rest of the
// project (the AWS emulator, the controller), with dovetail's CRDs
// installed and, optionally, the user's manifests applied. It is what
// `dovetail local up` runs, and tests can run it in-process.
//
// # Lifecycle
//
//	Up:    lock Dir ─► control plane ─► components, in order ─► apply manifests ─► Dir/kubeconfig
//	Close: components, in reverse ─► control plane ─► remove Dir/kubeconfig ─► unlock Dir
//
// Run wraps the two around a wait for cancellation (SIGINT/SIGTERM in the
// CLI) or for part of the stack dying on its own.
//
// # Invariants
//
//   - One stack per directory: Dir/local.lock is held with flock(2) while
//     the stack runs, so a second Up on the same Dir fails with a
//     *controlplane.DirInUseError naming the holder's pid, and a stack
//     killed with SIGKILL releases it. The next Up takes such a directory
//     over and starts from an empty cluster.
//   - Dir/kubeconfig exists exactly while a stack is ready; it is written
//     last and removed on Close.
//   - No process outlives the stack (see package controlplane).
//
// # Vocabulary
//
// Stack: the running whole. Component: one part started after the control
// plane, with Start and Stop. See ExampleUp.
package local
