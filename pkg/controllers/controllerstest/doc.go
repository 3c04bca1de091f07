// Package controllerstest runs dovetail controllers against the real
// control plane of a test package (see package controlplanetest), with the
// in-memory fake cloud provider, a fake clock and a simulated kubelet.
//
// # Using it
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplanetest.Main(m, controlplane.Options{
//			ControllerManager: true, Scheduler: true, Kwok: true,
//		}, &cp))
//	}
//
//	func TestSomething(t *testing.T) {
//		env := controllerstest.New(t, cp.RESTConfig())
//		env.Start(lifecycle.NewController(env.Manager.GetClient(), env.Cloud, env.Clock,
//			env.Recorder(), env.Metrics, env.Unavailable, lifecycle.Options{}))
//		env.StartKubelet(controllerstest.KubeletOptions{})
//		nc := env.Create(controllerstest.NodeClaim("a", "default"))
//		env.Eventually("registered", func() (bool, error) { ... })
//	}
//
// # Pieces
//
//   - Env: an uncached admin client for the test's own reads and writes,
//     a controller-runtime manager (with dovetail's cache indexes) that runs
//     the controllers under test, a fake clock, the metrics registry, the
//     unavailable-offerings cache, and Cloud, the fake cloud.
//   - Cloud: fake.CloudProvider plus error injection and call counts that
//     are safe to use while controllers run.
//   - Kubelet: plays what the cloud and the kubelet do after a launch:
//     for every instance of the fake cloud it creates a Node with the
//     instance's providerID, labels, capacity, and the taints a real node
//     registers with (karpenter.sh/unregistered plus the NodeClaim's taints
//     and startup taints); kwok then makes it Ready and runs its pods.
//     End-to-end tests of provisioning use it the same way.
//
// # Invariants
//
// Tests of one package share one cluster and run one at a time (no
// t.Parallel). Everything an Env starts stops in t.Cleanup, which also
// deletes every NodePool, NodeClaim, Node and EC2NodeClass (stripping
// finalizers) and the namespaces the Env created, so the next test starts
// from an empty cluster. Nothing here sleeps: waits poll with a deadline
// (Eventually).
package controllerstest
