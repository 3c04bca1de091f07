// Package format is the on-disk form of the built-in instance catalog: a
// small, versioned binary encoding written by the generator
// (pkg/catalog/internal/gen) and read by pkg/catalog when the catalog is
// first used.
//
// # Layout
//
// All integers are unsigned LEB128 varints (encoding/binary.AppendUvarint),
// strings are a varint length followed by UTF-8 bytes, and the file is:
//
//	magic "DVTLCAT\x01"
//	string table: count, then each string
//	types:        count, then each Type: its strings (as table indices),
//	              integers, string lists, disks, network cards and flags
//	regions:      count, then each Region:
//	                name, price count, then (type-index delta, micro-USD) pairs,
//	                zone count, then each zone: name, id, offered-type bitset
//
// Bitsets have one bit per type index (bit i of byte i/8 is type i) and are
// ceil(len(types)/8) bytes long. Prices are stored as integer micro-dollars,
// so every price with at most six decimals round-trips exactly.
//
// The encoding is deterministic: the same File always yields the same bytes,
// which `make verify-generated` relies on. Decode never panics: truncated or
// corrupt input yields an error naming the offset and what was being read.
//
// See Example for a round trip.
package format
