// Command patchcrds amends, in place, the CRD files controller-gen wrote
// into a directory with what its markers cannot express (crds.Patch).
// `make generate` and hack/verify-generated.sh run it after controller-gen:
//
//	go run ./api/crds/internal/patchcrds api/crds
//
// What must not live here: the amendments themselves (they are in
// api/crds, where TestGeneratedCRDsUpToDate applies them too).
package main
