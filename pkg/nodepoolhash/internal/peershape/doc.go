// Package peershape holds a NodePool template in the shape the peer's
// karpenter.sh/nodepool-hash reads: the peer hashes its own Go value of
// spec.template with github.com/mitchellh/hashstructure/v2 (format v2, slices
// as sets, zero values and nil pointers ignored), and that hash covers the
// names of the structs and of their fields. The types here carry the same
// type names, field names and hash tags (facts of the peer's published API),
// so hashing them gives the peer's value for the same template.
//
// What must not live here: anything but the types and the conversion from
// dovetail's API types; the hash options and the version belong to the
// parent package.
package peershape
