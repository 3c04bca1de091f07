// Command gen builds the built-in instance catalog of pkg/catalog from the
// raw EC2 data set (instance-types.json, on-demand-prices.json,
// instance-type-offerings.json, max-pods.json, karpenter-allocatable.json;
// see that data set's SOURCES.md).
//
//	go run ./pkg/catalog/internal/gen -data <dir with the raw files> -out pkg/catalog/data
//
// It writes:
//
//   - <out>/catalog.bin: the compact binary catalog (pkg/catalog/internal/format)
//     that pkg/catalog embeds;
//   - <out>/summary.txt: a human-readable account of what went in and what was
//     left out, for review of regenerated data;
//   - <testdata>/karpenter-allocatable.json: the allocatable figures the
//     Karpenter documentation publishes, for the types in the catalog, which
//     pkg/catalog's tests compare against (tests never read the raw data set).
//
// The output is a pure function of the input files: the same input yields
// byte-identical output (`make verify-generated` depends on this).
//
// What is left out, and why:
//
//   - mac*.metal types (architectures arm64_mac / x86_64_mac): they cannot
//     run EKS Linux nodes;
//   - types with neither x86_64 nor arm64 among their architectures (none in
//     the current data; i386 types that also list x86_64 are kept as amd64);
//   - prices and offerings of types that are not in instance-types.json
//     (retired types still listed in price files).
//
// The tests (gen_test.go) run the generator on testdata/ec2, a small subset of
// the data set, so they need nothing outside the repository.
package main
