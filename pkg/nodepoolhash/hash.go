package nodepoolhash

import (
	"strconv"

	"github.com/mitchellh/hashstructure/v2"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/pkg/nodepoolhash/internal/peershape"
)

// Version is the version of the hashing scheme, written to
// karpenter.sh/nodepool-hash-version: the peer's, since the hash is the
// peer's.
const Version = "v3"

// options are the peer's hashing options: slices (taints) as sets, zero
// values and nil pointers left out. A new value each call: hashstructure
// keeps its hasher in the options, so options shared between goroutines
// (provisioning makes a pass's NodeClaims in parallel) mix their hashes.
func options() *hashstructure.HashOptions {
	return &hashstructure.HashOptions{SlicesAsSets: true, IgnoreZeroValue: true, ZeroNil: true}
}

// Hash returns the template hash of the NodePool (see the package doc).
func Hash(np *karpv1.NodePool) string {
	h, err := hashstructure.Hash(peershape.Of(np), hashstructure.FormatV2, options())
	if err != nil {
		// Only maps, strings, integers, times and structs of them: cannot
		// fail.
		panic("hash: hashing the template: " + err.Error())
	}
	return strconv.FormatUint(h, 10)
}

// Annotations returns the two annotations a NodePool (and a NodeClaim made
// from it now) should carry.
func Annotations(np *karpv1.NodePool) map[string]string {
	return map[string]string{
		karpv1.NodePoolHashAnnotationKey:        Hash(np),
		karpv1.NodePoolHashVersionAnnotationKey: Version,
	}
}
