// Package ctrlproc runs the dovetail controller in the local stack the way
// it runs in a cluster: as its own process (`dovetail controller`), under
// its own identity, talking to the local AWS emulator. It is the
// "controller" Component of `dovetail local up`.
//
//	Start: kubectl apply the RBAC manifests (config/rbac)
//	     ─▶ kubeconfig for system:serviceaccount:kube-system:dovetail
//	        (a client certificate from the control plane's CA: RBAC sees the
//	        ServiceAccount, not an admin); or, with Component.Kubeconfig,
//	        an identity the caller supplies (the chart test hands it a
//	        TokenRequest token of the chart's ServiceAccount) and no RBAC
//	        applied
//	     ─▶ environment from DIR/aws.env (AWS_ENDPOINT_URL, region, dummy
//	        keys), CLUSTER_NAME, INTERRUPTION_QUEUE, METRICS_PORT,
//	        HEALTH_PROBE_PORT; --liveness-time-scale from the emulator's
//	        time scale
//	     ─▶ N replicas, each ready when /readyz answers 200
//	Stop:  SIGTERM, then SIGKILL after StopGrace
//
// # Why a child process
//
// A child process is what production runs (its own memory, its own client
// rate limits, its own identity), and it lets the end-to-end tests crash it
// for real: Kill sends SIGKILL to the process group and Restart starts a
// fresh process in the same slot. Peak memory is read from the kernel
// (Replica.PeakRSS, VmHWM).
//
// # Invariants
//
//   - No replica outlives the stack: children are forked from a thread that
//     lives as long as the process, with a parent-death SIGKILL (Linux), in
//     a process group of their own that Stop and Kill signal as a whole.
//   - One replica runs without leader election, so a restart after a crash
//     does not wait for the dead leader's lease; several replicas elect a
//     leader with short local timings (Lease).
//   - A replica's log is DIR/controller/replica-N.log, appended across
//     restarts.
//
// The package is exercised end to end by test/e2e.
package ctrlproc
