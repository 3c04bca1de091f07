package engine

import "math/bits"

// bitset is a fixed-size set of small integers (instance-type indices of
// one pool). The zero-length bitset is the empty set.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)         { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) clear(i int)       { b[i>>6] &^= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool    { return i>>6 < len(b) && b[i>>6]&(1<<(uint(i)&63)) != 0 }
func (b bitset) clone() bitset     { return append(bitset(nil), b...) }
func (b bitset) copyFrom(o bitset) { copy(b, o) }

func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

func (b bitset) count() int {
	n := 0
	for _, w := range b {
		n += bits.OnesCount64(w)
	}
	return n
}

// and sets b to b ∩ o.
func (b bitset) and(o bitset) {
	for i := range b {
		if i < len(o) {
			b[i] &= o[i]
		} else {
			b[i] = 0
		}
	}
}

// intersects reports b ∩ o ≠ ∅.
func (b bitset) intersects(o bitset) bool {
	for i := range b {
		if i < len(o) && b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// subsetOf reports b ⊆ o.
func (b bitset) subsetOf(o bitset) bool {
	for i, w := range b {
		var ow uint64
		if i < len(o) {
			ow = o[i]
		}
		if w&^ow != 0 {
			return false
		}
	}
	return true
}

// each calls f for every member in increasing order.
func (b bitset) each(f func(i int)) {
	for wi, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			f(wi<<6 | t)
			w &= w - 1
		}
	}
}

// zmask is a set of zone indices (at most 64 zones per solve).
type zmask uint64

func (m zmask) has(z int) bool { return m&(1<<uint(z)) != 0 }
func (m zmask) count() int     { return bits.OnesCount64(uint64(m)) }

// first returns the smallest member, or -1.
func (m zmask) first() int {
	if m == 0 {
		return -1
	}
	return bits.TrailingZeros64(uint64(m))
}

// only reports whether m has exactly one member, and which.
func (m zmask) only() (int, bool) {
	if m != 0 && m&(m-1) == 0 {
		return bits.TrailingZeros64(uint64(m)), true
	}
	return -1, false
}

const allZones = ^zmask(0)

// Capacity type indices and masks.
const (
	ctOnDemand = iota
	ctSpot
	ctReserved
	nCT
)

type ctmask uint8

func (m ctmask) has(c int) bool { return m&(1<<uint(c)) != 0 }

func (m ctmask) only() (int, bool) {
	if m != 0 && m&(m-1) == 0 {
		return bits.TrailingZeros8(uint8(m)), true
	}
	return -1, false
}

const allCTs = ctmask(1<<nCT - 1)
