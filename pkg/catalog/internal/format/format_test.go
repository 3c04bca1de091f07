package format

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

func genFile(t *rapid.T) *File {
	nTypes := rapid.IntRange(0, 20).Draw(t, "types")
	f := &File{}
	str := rapid.StringMatching(`[a-zA-Z0-9 .-]{0,12}`)
	small := rapid.IntRange(0, 1<<20)
	for i := 0; i < nTypes; i++ {
		ty := Type{
			Name: fmt.Sprintf("t%03d.large", i), Family: str.Draw(t, "family"), Size: str.Draw(t, "size"),
			Category: str.Draw(t, "category"), Arch: rapid.SampledFrom([]string{"amd64", "arm64"}).Draw(t, "arch"),
			CPUManufacturer: str.Draw(t, "cpu"), GPUName: str.Draw(t, "gpu"), Hypervisor: str.Draw(t, "hv"),
			AcceleratorKind: str.Draw(t, "accel"), NetworkPerformance: str.Draw(t, "net"),
			Generation: small.Draw(t, "gen"), VCPU: small.Draw(t, "vcpu"), MaxENIs: small.Draw(t, "enis"),
			IPv4PerENI: small.Draw(t, "ipv4"), EFAInterfaces: small.Draw(t, "efa"), EBSMaximumMbps: small.Draw(t, "ebs"),
			MemoryMiB: rapid.Int64Range(0, 1<<40).Draw(t, "mem"), GPUMemoryMiB: rapid.Int64Range(0, 1<<20).Draw(t, "gpumem"),
			Flags: Flags(rapid.Uint64Range(0, 1<<10-1).Draw(t, "flags")),
		}
		if n := rapid.IntRange(0, 3).Draw(t, "usage classes"); n > 0 {
			ty.UsageClasses = []string{"capacity-block", "on-demand", "spot"}[:n]
		}
		ty.BootModes = rapid.SliceOfN(str, 0, 2).Draw(t, "boot modes")
		ty.ENASupport, ty.MaxEBSAttachments = str.Draw(t, "ena"), small.Draw(t, "attachments")
		for j := 0; j < rapid.IntRange(0, 2).Draw(t, "disks"); j++ {
			ty.Disks = append(ty.Disks, Disk{Count: small.Draw(t, "disk count"), SizeGB: small.Draw(t, "disk size"), Type: str.Draw(t, "disk type")})
		}
		for j := 0; j < rapid.IntRange(0, 3).Draw(t, "cards"); j++ {
			ty.Cards = append(ty.Cards, NetworkCard{Index: j, MaxENIs: small.Draw(t, "card enis"), BaselineMbps: small.Draw(t, "base"), PeakMbps: small.Draw(t, "peak"), Performance: str.Draw(t, "perf")})
		}
		f.Types = append(f.Types, ty)
	}
	nRegions := rapid.IntRange(0, 4).Draw(t, "regions")
	for r := 0; r < nRegions; r++ {
		reg := Region{Name: fmt.Sprintf("r-%d", r)}
		for i := 0; i < nTypes; i++ {
			if rapid.Bool().Draw(t, "priced") {
				reg.Prices = append(reg.Prices, Price{Type: i, MicroUSD: rapid.Int64Range(1, 1e9).Draw(t, "price")})
			}
		}
		for z := 0; z < rapid.IntRange(0, 4).Draw(t, "zones"); z++ {
			bs := NewBitset(nTypes)
			for i := 0; i < nTypes; i++ {
				if rapid.Bool().Draw(t, "offered") {
					bs.Set(i)
				}
			}
			reg.Zones = append(reg.Zones, Zone{Name: fmt.Sprintf("r-%d%c", r, 'a'+z), ID: str.Draw(t, "id"), Offered: bs})
		}
		f.Regions = append(f.Regions, reg)
	}
	return f
}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genFile(t)
		data, err := Encode(f)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Encode(f)
		if err != nil || !bytes.Equal(data, again) {
			t.Fatal("encoding is not deterministic")
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(normalise(got), normalise(f)) {
			t.Fatalf("round trip differs:\n got %+v\nwant %+v", got, f)
		}
	})
}

// normalise maps empty slices to nil so DeepEqual compares content only.
func normalise(f *File) *File {
	out := *f
	out.Types = append([]Type(nil), f.Types...)
	for i := range out.Types {
		ty := &out.Types[i]
		for _, l := range typeStringLists(ty) {
			if len(*l) == 0 {
				*l = nil
			}
		}
		if len(ty.Disks) == 0 {
			ty.Disks = nil
		}
		if len(ty.Cards) == 0 {
			ty.Cards = nil
		}
	}
	if len(out.Types) == 0 {
		out.Types = nil
	}
	out.Regions = append([]Region(nil), f.Regions...)
	for i := range out.Regions {
		if len(out.Regions[i].Prices) == 0 {
			out.Regions[i].Prices = nil
		}
		if len(out.Regions[i].Zones) == 0 {
			out.Regions[i].Zones = nil
		}
	}
	if len(out.Regions) == 0 {
		out.Regions = nil
	}
	return &out
}

func TestEncodeRejects(t *testing.T) {
	one := []Type{{Name: "a.large"}}
	tests := []struct {
		name string
		f    *File
	}{
		{"negative integer", &File{Types: []Type{{Name: "a.large", VCPU: -1}}}},
		{"negative disk size", &File{Types: []Type{{Name: "a.large", Disks: []Disk{{Count: 1, SizeGB: -1}}}}}},
		{"negative card bandwidth", &File{Types: []Type{{Name: "a.large", Cards: []NetworkCard{{BaselineMbps: -1}}}}}},
		{"price for an unknown type", &File{Types: one, Regions: []Region{{Name: "r", Prices: []Price{{Type: 1, MicroUSD: 1}}}}}},
		{"prices out of order", &File{Types: append(one, Type{Name: "b.large"}), Regions: []Region{{Name: "r", Prices: []Price{{Type: 1, MicroUSD: 1}, {Type: 0, MicroUSD: 1}}}}}},
		{"zero price", &File{Types: one, Regions: []Region{{Name: "r", Prices: []Price{{Type: 0, MicroUSD: 0}}}}}},
		{"bitset of the wrong size", &File{Types: one, Regions: []Region{{Name: "r", Zones: []Zone{{Name: "r-a", Offered: Bitset{0, 0}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Encode(tt.f); err == nil {
				t.Error("Encode accepted the file")
			}
		})
	}
}

func sample(tb testing.TB) []byte {
	tb.Helper()
	f := &File{
		Types: []Type{
			{Name: "m5.large", Family: "m5", Arch: "amd64", VCPU: 2, MemoryMiB: 8192, UsageClasses: []string{"on-demand", "spot"}, Flags: FlagTrunking},
			{Name: "m7g.large", Family: "m7g", Arch: "arm64", VCPU: 2, MemoryMiB: 8192},
		},
		Regions: []Region{{
			Name:   "us-east-1",
			Prices: []Price{{Type: 0, MicroUSD: 96000}, {Type: 1, MicroUSD: 81600}},
			Zones:  []Zone{{Name: "us-east-1a", ID: "use1-az2", Offered: Bitset{0b11}}},
		}},
	}
	data, err := Encode(f)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func TestDecodeErrors(t *testing.T) {
	good := sample(t)
	for cut := 0; cut < len(good); cut++ {
		if _, err := Decode(good[:cut]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d bytes: err %v", cut, err)
		}
	}
	if _, err := Decode(append(append([]byte{}, good...), 1)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v", err)
	}
	if _, err := Decode(good); err != nil {
		t.Errorf("sample: %v", err)
	}
}

// FuzzDecode: arbitrary bytes give a File or an ErrCorrupt, never a panic, and
// whatever decodes encodes back to the same bytes.
func FuzzDecode(f *testing.F) {
	good := sample(f)
	f.Add(good)
	f.Add([]byte(Magic))
	f.Add(append([]byte(Magic), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))
	f.Add(good[:len(good)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		again, err := Encode(file)
		if err != nil {
			t.Fatalf("decoded file does not encode: %v", err)
		}
		if back, err := Decode(again); err != nil || !reflect.DeepEqual(normalise(back), normalise(file)) {
			t.Fatalf("re-encoding changed the file: %v", err)
		}
	})
}

func TestBitset(t *testing.T) {
	b := NewBitset(10)
	if len(b) != 2 {
		t.Fatalf("len %d", len(b))
	}
	for _, i := range []int{0, 7, 8, 9} {
		b.Set(i)
	}
	for i := -1; i < 20; i++ {
		want := i == 0 || i == 7 || i == 8 || i == 9
		if b.Has(i) != want {
			t.Errorf("Has(%d) = %v", i, !want)
		}
	}
	if b.Len() != 4 {
		t.Errorf("Len %d", b.Len())
	}
}
