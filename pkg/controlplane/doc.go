// Package controlplane runs a real Kubernetes control plane on loopback for
// tests and for `dovetail local up`: etcd and kube-apiserver, plus, on
// request, kube-controller-manager, kube-scheduler and kwok (which plays the
// kubelet of every Node, so nodes that exist only on paper become Ready and
// run their pods). The binaries are the pinned versions (KubernetesVersion,
// EtcdVersion, KwokVersion) built by the repository's tools module.
//
// # Using it
//
//	cp, err := controlplane.Start(ctx, controlplane.Options{
//		ControllerManager: true, Scheduler: true, Kwok: true,
//		Progress: os.Stderr,
//	})
//	if err != nil { ... }
//	defer cp.Close()
//	client, err := kubernetes.NewForConfig(cp.RESTConfig())
//
// Test packages use controlplanetest.Main to share one control plane per
// package; see ExampleControlPlane_Kubectl.
//
// # Start-up
//
// Start finds the binaries (ResolveBinDir: $DOVETAIL_CONTROLPLANE_DIR, the
// per-version cache, or a build through the tools module), generates a CA
// and ECDSA certificates, and starts etcd (fsync off) and then the API
// server, each on freshly probed 127.0.0.1 ports. Once the API server
// answers /readyz, the other components start in parallel with the CRD
// installation (dovetail's CRDs from package api/crds, unless SkipCRDs).
// Each wait polls a health endpoint with a deadline, and each component's
// readiness time goes to Options.Progress. If a component loses a port race
// (another process bound the port between probing and use) it is restarted
// on new ports. Any other failure stops what was started and returns a
// *StartError carrying the tail of the component's log.
//
// # Directory layout
//
// Everything lives in Options.Dir (a temporary directory when empty):
//
//	.lock               flock held while the control plane runs (DirInUseError)
//	kubeconfig          admin (system:masters) kubeconfig
//	kubeconfigs/        component and KubeconfigFor identities
//	pki/                CA, serving certificate, service-account keys
//	etcd/               etcd data
//	config/             kwok stages, kube-scheduler configuration, audit policy
//	kubectl-cache/      discovery cache of Kubectl
//	logs/<component>.log
//	logs/audit.log      with Options.AuditUsers: one JSON line per request
//	                    of those users (level Metadata); CountAudit counts
//	                    them by user agent and verb
//
// # Invariants
//
//   - Children never outlive the process that started them. They run in
//     one new process group of their own (never the caller's), Close stops
//     them (SIGTERM, then SIGKILL after a grace period), and each carries a
//     parent-death signal (SIGKILL) so that they also die when the parent
//     is killed with SIGKILL or crashes, as on go test's -timeout panic.
//     See the comment on spawn for why one dedicated OS thread forks them.
//     (The parent-death signal is Linux-only; elsewhere only Close stops
//     the children.)
//   - A component that dies while the control plane runs closes Exited;
//     Err then names it and carries its log tail.
//   - A directory is used by one control plane at a time; a directory left
//     by a dead one is taken over: leftover components are killed and the
//     old state discarded. Every Start begins with an empty cluster.
//   - The API server authorizes with RBAC. RESTConfig and KubeconfigPath
//     are cluster-admin; RESTConfigFor and KubeconfigFor mint client
//     certificates for any user and groups, which hold only what RBAC grants.
//
// # Vocabulary
//
// Component: one of the processes (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok). Tier: the order in which
// Close stops them (clients, then the API server, then etcd). Stage: a kwok
// rule that moves a Node or Pod to its next state.
package controlplane
