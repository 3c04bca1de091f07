// Package controlplanetest runs one real control plane (package
// controlplane) per test package, from TestMain, so that every test of the
// package shares it:
//
//	var cp *controlplane.ControlPlane
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplanetest.Main(m, controlplane.Options{
//			ControllerManager: true, Scheduler: true, Kwok: true,
//		}, &cp))
//	}
//
// Tests share the cluster: give each test its own namespace or object names,
// and poll with a deadline for what the controllers do asynchronously.
// Main stops everything when the tests end, fail, are interrupted, or time
// out (see Main).
package controlplanetest
