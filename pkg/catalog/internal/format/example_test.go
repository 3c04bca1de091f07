package format_test

import (
	"fmt"

	"github.com/dovetail-sh/dovetail/pkg/catalog/internal/format"
)

// A catalog of one type, priced and offered in one zone, survives the round
// trip through its binary form.
func Example() {
	offered := format.NewBitset(1)
	offered.Set(0)
	data, err := format.Encode(&format.File{
		Types: []format.Type{{Name: "m5.large", Family: "m5", Arch: "amd64", VCPU: 2, MemoryMiB: 8192}},
		Regions: []format.Region{{
			Name:   "us-east-1",
			Prices: []format.Price{{Type: 0, MicroUSD: 96000}},
			Zones:  []format.Zone{{Name: "us-east-1a", ID: "use1-az2", Offered: offered}},
		}},
	})
	if err != nil {
		panic(err)
	}
	f, err := format.Decode(data)
	if err != nil {
		panic(err)
	}
	r := f.Regions[0]
	fmt.Printf("%s: %d vCPU, %d MiB; $%.3f/h in %s; offered in %s (%s): %v\n",
		f.Types[0].Name, f.Types[0].VCPU, f.Types[0].MemoryMiB, float64(r.Prices[0].MicroUSD)/1e6, r.Name,
		r.Zones[0].Name, r.Zones[0].ID, r.Zones[0].Offered.Has(0))
	// Output:
	// m5.large: 2 vCPU, 8192 MiB; $0.096/h in us-east-1; offered in us-east-1a (use1-az2): true
}
