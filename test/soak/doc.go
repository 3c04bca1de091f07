// Command soak is dovetail's full-cycle soak (`make soak`, not part of
// `make test`): on the local stack (pkg/local with the AWS emulator and the
// controller as a child process, as test/e2e runs it) it scales a mixed
// workload up to several hundred pods across the examples/ NodePools under
// 30% API throttling and insufficient capacity on the cheapest offerings,
// interrupts spot instances, scales down with consolidation, makes every
// node drift by publishing a newer image, and SIGKILLs the controller 50
// times spread over the phases. It then reports, and exits non-zero unless
// all hold: no leaked instance (emulator instances against NodeClaims), no
// duplicate NodeClaim, no PodDisruptionBudget violation (watched through
// API watches for the whole cycle), every pod Running, and the fleet's $/h
// within 10% of what pkg/simulate plans for the final pods.
//
// Admin calls to the emulator (faults, interruptions, images, instances)
// go through awsemu.AdminClient from localaws.Admin, never raw HTTP.
//
// What lives here: the soak's driver, its watcher and its report. What
// must not: anything another package imports (this is a main package), or
// a test that `go test ./...` would run for longer than a moment (the
// unit tests here check the watcher's bookkeeping only).
package main
