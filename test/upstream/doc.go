// Command upstream runs the peer's own end-to-end suites (Karpenter's
// test/suites/regression and test/suites/disruption, `make test-upstream`,
// not part of `make test`) against dovetail's local stack, one spec at a
// time on a fresh `dovetail local up`.
//
// It builds the suites' test binaries in a scratch Go module outside the
// repository (under the cache root, $DOVETAIL_CACHE_DIR or the user cache
// dir + /dovetail) through the Go module proxy, with GOTOOLCHAIN=auto since
// the peer's module asks for a newer Go than the repository's; it fetches
// the AWS provider's default EC2NodeClass and NodePool (the files its
// upstream-e2etests target passes) the same way, at run time. No peer code
// or text is committed and dovetail's module does not import the peer: the
// suites are separate binaries this command starts.
//
// For each spec (or each group of specs sharing a source line) it starts a
// stack with the feature gates the spec's group needs (gates.go), runs the
// suite binary focused on that spec with the peer's flags, reads ginkgo's
// JSON report, stops the stack (its whole process group), and appends a row
// to the results table (suite, spec, state, seconds, first failure line,
// log paths). The results are compared with the checked-in expectations
// file (expectations.txt): every spec that cannot pass here, with its
// reason. A result that differs from its expectation fails the run.
//
// What lives here: the harness (building, listing, running, reporting,
// expectations). What must not: anything another package imports (this is
// a main package), or a test that `go test ./...` would run for longer than
// a moment (the unit tests check parsing, comparison and process handling).
package main
