package catalog

import (
	"math"
	"strings"
)

// The spot-price rule (see the package documentation). These numbers are part
// of the rule: changing one changes every simulated spot price.
const (
	// SpotMinDiscount and SpotMaxDiscount bound the fraction of the on-demand
	// price a spot offering saves: every spot price lies within
	// [onDemand*(1-SpotMaxDiscount), onDemand*(1-SpotMinDiscount)] up to the
	// rounding to SpotPriceDecimals decimals.
	SpotMinDiscount = 0.55
	SpotMaxDiscount = 0.80
	// SpotFamilySpread is the part of the band chosen per instance family;
	// the remaining SpotMaxDiscount-SpotMinDiscount-SpotFamilySpread varies
	// per (region, zone, type).
	SpotFamilySpread = 0.20
	// SpotPriceDecimals is the number of decimals spot prices are rounded to.
	SpotPriceDecimals = 4
)

// SpotDiscount is the fraction of the on-demand price that the spot offering
// of typeName in (region, zone) saves under the spot rule: a value in
// [SpotMinDiscount, SpotMaxDiscount).
func SpotDiscount(region, zone, typeName string) float64 {
	family, _, _ := strings.Cut(typeName, ".")
	familyPart := unitHash("dovetail/spot/family", family)
	zonePart := unitHash("dovetail/spot/zone", region, zone, typeName)
	zoneSpread := SpotMaxDiscount - SpotMinDiscount - SpotFamilySpread
	return SpotMinDiscount + SpotFamilySpread*familyPart + zoneSpread*zonePart
}

// SpotPrice is THE spot price of a type in a zone: the on-demand price less
// SpotDiscount, rounded to SpotPriceDecimals decimals and never below
// 0.0001. It is always below onDemand for positive onDemand, stable across
// runs and machines, and 0 when onDemand is not positive.
func SpotPrice(region, zone, typeName string, onDemand float64) float64 {
	if !(onDemand > 0) || math.IsInf(onDemand, 1) {
		return 0
	}
	exact := onDemand * (1 - SpotDiscount(region, zone, typeName))
	scale := math.Pow10(SpotPriceDecimals)
	p := math.Max(math.Round(exact*scale)/scale, 1/scale)
	if p >= onDemand {
		// Only for on-demand prices below two ten-thousandths, where rounding
		// could reach the on-demand price; no real type costs that little.
		return exact
	}
	return p
}

// unitHash maps its parts to [0, 1) with FNV-1a (64 bit) over the parts
// separated by NUL bytes, so ("a", "bc") and ("ab", "c") differ.
func unitHash(parts ...string) float64 {
	// FNV-1a written out (it is the same function as hash/fnv's New64a) so
	// that hashing allocates nothing; InstanceTypes calls this per offering.
	h := uint64(fnvOffset64)
	for i, p := range parts {
		if i > 0 {
			h ^= 0
			h *= fnvPrime64
		}
		for j := 0; j < len(p); j++ {
			h ^= uint64(p[j])
			h *= fnvPrime64
		}
	}
	// The top 53 bits give a float64 in [0, 1) with every value exact.
	return float64(h>>11) / (1 << 53)
}

// FNV-1a 64-bit parameters.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)
