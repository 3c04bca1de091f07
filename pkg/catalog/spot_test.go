package catalog

import (
	"hash/fnv"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// referenceSpotPrice is the documented rule written independently: the
// standard library's FNV-1a and the constants from the package
// documentation.
func referenceSpotPrice(region, zone, typeName string, onDemand float64) float64 {
	h := func(parts ...string) float64 {
		f := fnv.New64a()
		f.Write([]byte(strings.Join(parts, "\x00")))
		return float64(f.Sum64()>>11) / math.Exp2(53)
	}
	family := strings.SplitN(typeName, ".", 2)[0]
	discount := 0.55 + 0.20*h("dovetail/spot/family", family) + 0.05*h("dovetail/spot/zone", region, zone, typeName)
	p := math.Round(onDemand*(1-discount)*10000) / 10000
	return math.Max(p, 0.0001)
}

// Every spot price in the catalog follows the rule and its promises.
func TestSpotPriceProperties(t *testing.T) {
	c := Builtin()
	checked, zonesVary, multiZone := 0, 0, 0
	familyDiscounts := map[string][]float64{}
	for _, region := range c.Regions() {
		zones := c.Zones(region)
		for _, ty := range c.Types() {
			od, ok := c.OnDemandPrice(region, ty.Name)
			if !ok {
				continue
			}
			distinct := map[float64]bool{}
			for _, z := range zones {
				p := SpotPrice(region, z.Name, ty.Name, od)
				checked++
				if p >= od || p <= 0 {
					t.Fatalf("%s %s %s: spot %v, on-demand %v", region, z.Name, ty.Name, p, od)
				}
				// Within the band, allowing for the rounding to 4 decimals.
				slack := 0.00005 / od
				if d := 1 - p/od; d < SpotMinDiscount-slack || d > SpotMaxDiscount+slack {
					t.Errorf("%s %s %s: discount %.4f outside the band", region, z.Name, ty.Name, d)
				}
				if scaled := p * 1e4; math.Abs(scaled-math.Round(scaled)) > 1e-6 {
					t.Errorf("%s %s %s: %v has more than 4 decimals", region, z.Name, ty.Name, p)
				}
				if want := referenceSpotPrice(region, z.Name, ty.Name, od); p != want {
					t.Errorf("%s %s %s: %v, the documented rule gives %v", region, z.Name, ty.Name, p, want)
				}
				if again := SpotPrice(region, z.Name, ty.Name, od); again != p {
					t.Errorf("%s %s %s: not stable: %v then %v", region, z.Name, ty.Name, p, again)
				}
				distinct[p] = true
				familyDiscounts[ty.Family] = append(familyDiscounts[ty.Family], SpotDiscount(region, z.Name, ty.Name))
			}
			if len(zones) > 1 {
				multiZone++
				if len(distinct) > 1 {
					zonesVary++
				}
			}
		}
	}
	if checked < 40000 {
		t.Errorf("only %d spot prices checked", checked)
	}
	// Prices vary across the zones of a region for nearly every type (cheap
	// types can round to the same value in two zones).
	if float64(zonesVary) < 0.95*float64(multiZone) {
		t.Errorf("spot prices vary across zones for %d of %d (region, type) pairs", zonesVary, multiZone)
	}
	// Some families are much cheaper on spot than others.
	lo, hi := 1.0, 0.0
	for _, ds := range familyDiscounts {
		mean := 0.0
		for _, d := range ds {
			mean += d
		}
		mean /= float64(len(ds))
		lo, hi = math.Min(lo, mean), math.Max(hi, mean)
	}
	if hi-lo < 0.15 {
		t.Errorf("family mean discounts span only %.3f..%.3f", lo, hi)
	}
	t.Logf("%d spot prices; zones differ for %d/%d (region, type); family mean discounts %.3f..%.3f", checked, zonesVary, multiZone, lo, hi)
}

// The rule holds for any names and prices, not only the catalog's.
func TestSpotPriceRapid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		region := rapid.StringMatching(`[a-z]{2}-[a-z]{4,9}-[1-9]`).Draw(t, "region")
		zone := region + rapid.StringMatching(`[a-f]`).Draw(t, "zone")
		typ := rapid.StringMatching(`[a-z]{1,4}[0-9][a-z-]{0,6}\.[0-9]{0,2}x?large`).Draw(t, "type")
		od := rapid.Float64Range(0.0003, 500).Draw(t, "onDemand")
		p := SpotPrice(region, zone, typ, od)
		if !(p > 0 && p < od) {
			t.Fatalf("spot %v for on-demand %v", p, od)
		}
		if d := SpotDiscount(region, zone, typ); d < SpotMinDiscount || d >= SpotMaxDiscount {
			t.Fatalf("discount %v outside [%v, %v)", d, SpotMinDiscount, SpotMaxDiscount)
		}
		if want := referenceSpotPrice(region, zone, typ, od); p != want && od >= 0.0002 {
			t.Fatalf("spot %v, documented rule %v", p, want)
		}
	})
}

func TestSpotPriceEdgeCases(t *testing.T) {
	tests := []struct {
		name     string
		onDemand float64
		check    func(p float64) bool
	}{
		{"zero on-demand", 0, func(p float64) bool { return p == 0 }},
		{"negative on-demand", -1, func(p float64) bool { return p == 0 }},
		{"NaN on-demand", math.NaN(), func(p float64) bool { return p == 0 }},
		{"infinite on-demand", math.Inf(1), func(p float64) bool { return p == 0 }},
		{"tiny on-demand stays below it", 0.00015, func(p float64) bool { return p > 0 && p < 0.00015 }},
		{"floor of 0.0001", 0.0002, func(p float64) bool { return p == 0.0001 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if p := SpotPrice("us-east-1", "us-east-1a", "m5.large", tt.onDemand); !tt.check(p) {
				t.Errorf("SpotPrice(%v) = %v", tt.onDemand, p)
			}
		})
	}
}
