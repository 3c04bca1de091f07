package catalog

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/pkg/catalog/internal/format"
)

func mustType(t *testing.T, c *Catalog, name string) *Type {
	t.Helper()
	ty, ok := c.Type(name)
	if !ok {
		t.Fatalf("type %s not in the catalog", name)
	}
	return ty
}

// Facts stated in the data set's SOURCES.md validation section.
func TestBuiltinKnownTypes(t *testing.T) {
	c := Builtin()
	tests := []struct {
		name  string
		check func(t *testing.T, ty *Type)
	}{
		{"m5.large", func(t *testing.T, ty *Type) {
			if ty.VCPU != 2 || ty.MemoryMiB != 8192 || ty.Arch != "amd64" || ty.MaxENIs != 3 || ty.IPv4PerENI != 10 || ty.ENIMaxPods != 29 {
				t.Errorf("got vcpu %d mem %d arch %s enis %d ipv4 %d maxpods %d", ty.VCPU, ty.MemoryMiB, ty.Arch, ty.MaxENIs, ty.IPv4PerENI, ty.ENIMaxPods)
			}
			if ty.Family != "m5" || ty.Size != "large" || ty.Category != "m" || ty.Generation != 5 || ty.CPUManufacturer != "intel" {
				t.Errorf("got family %s size %s category %s generation %d cpu %s", ty.Family, ty.Size, ty.Category, ty.Generation, ty.CPUManufacturer)
			}
			// DescribeInstanceTypes facts the emulator serves.
			if ty.MaxEBSAttachments != 27 || ty.ENASupport != "required" || ty.EBSNVMeSupport != "required" ||
				!slices.Equal(ty.BootModes, []string{"legacy-bios", "uefi"}) || !slices.Equal(ty.VirtualizationTypes, []string{"hvm"}) ||
				!slices.Equal(ty.PlacementStrategies, []string{"cluster", "partition", "spread"}) || !ty.DedicatedHosts || !ty.AutoRecovery {
				t.Errorf("got attachments %d ena %s nvme %s boot %v virt %v placement %v dedicated %v recovery %v", ty.MaxEBSAttachments,
					ty.ENASupport, ty.EBSNVMeSupport, ty.BootModes, ty.VirtualizationTypes, ty.PlacementStrategies, ty.DedicatedHosts, ty.AutoRecovery)
			}
			if want := []NetworkCard{{Index: 0, MaxENIs: 3, BaselineMbps: 750, PeakMbps: 10000, Performance: "Up to 10 Gigabit"}}; !slices.Equal(ty.NetworkCardList, want) {
				t.Errorf("network cards %+v", ty.NetworkCardList)
			}
		}},
		{"m7g.large", func(t *testing.T, ty *Type) {
			if ty.VCPU != 2 || ty.MemoryMiB != 8192 || ty.Arch != "arm64" || ty.CPUManufacturer != "aws" {
				t.Errorf("got vcpu %d mem %d arch %s cpu %s", ty.VCPU, ty.MemoryMiB, ty.Arch, ty.CPUManufacturer)
			}
		}},
		{"p5.48xlarge", func(t *testing.T, ty *Type) {
			if ty.GPU == nil || ty.GPU.Count != 8 || ty.GPU.Name != "H100" || ty.GPU.Manufacturer != "NVIDIA" || ty.GPU.MemoryMiB != 80*1024 {
				t.Errorf("got GPU %+v", ty.GPU)
			}
			// 64 ENIs over 32 cards, 2 on the default card.
			if ty.MaxENIs != 2 || ty.MaxENIsAllCards != 64 || ty.NetworkCards != 32 || !ty.EFA || ty.EFAInterfaces != 32 {
				t.Errorf("got enis %d/%d cards %d efa %v/%d", ty.MaxENIs, ty.MaxENIsAllCards, ty.NetworkCards, ty.EFA, ty.EFAInterfaces)
			}
			if len(ty.NetworkCardList) != 32 || ty.NetworkCardList[31] != (NetworkCard{Index: 31, MaxENIs: 2, BaselineMbps: 100000, PeakMbps: 100000, Performance: "100 Gigabit"}) {
				t.Errorf("network cards %+v", ty.NetworkCardList)
			}
		}},
		{"inf2.xlarge", func(t *testing.T, ty *Type) {
			if a := ty.Accelerator; a == nil || a.Kind != AcceleratorNeuron || a.Count != 1 || a.Name != "Inferentia2" || a.CoresPerDevice != 2 {
				t.Errorf("got accelerator %+v", a)
			}
		}},
		{"trn1.32xlarge", func(t *testing.T, ty *Type) {
			if a := ty.Accelerator; a == nil || a.Count != 16 {
				t.Errorf("got accelerator %+v", a)
			}
		}},
		{"t3.micro", func(t *testing.T, ty *Type) {
			if !ty.Burstable {
				t.Error("t3 must be burstable")
			}
		}},
		{"m5d.large", func(t *testing.T, ty *Type) {
			if ty.LocalNVMeGiB != 75 || ty.InstanceStorageGB != 75 || ty.InstanceStorageNVMe != "required" ||
				!slices.Equal(ty.InstanceStorageDisks, []Disk{{Count: 1, SizeGB: 75, Type: "ssd"}}) {
				t.Errorf("local NVMe %d, storage %d %s %+v", ty.LocalNVMeGiB, ty.InstanceStorageGB, ty.InstanceStorageNVMe, ty.InstanceStorageDisks)
			}
		}},
		{"m5.metal", func(t *testing.T, ty *Type) {
			if !ty.BareMetal || ty.Hypervisor != "" {
				t.Errorf("bare metal %v hypervisor %q", ty.BareMetal, ty.Hypervisor)
			}
		}},
		{"u7i-12tb.224xlarge", func(t *testing.T, ty *Type) {
			if ty.Category != "u" || ty.Generation != 7 || ty.Family != "u7i-12tb" {
				t.Errorf("category %s generation %d family %s", ty.Category, ty.Generation, ty.Family)
			}
		}},
		{"c7i-flex.large", func(t *testing.T, ty *Type) {
			if ty.Category != "c" || ty.Generation != 7 || ty.Labels()[LabelInstanceCapabilityFlex] != "true" {
				t.Errorf("category %s generation %d flex %s", ty.Category, ty.Generation, ty.Labels()[LabelInstanceCapabilityFlex])
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, mustType(t, c, tt.name)) })
	}
}

func TestBuiltinPrices(t *testing.T) {
	c := Builtin()
	tests := []struct {
		region, typ string
		want        float64
	}{
		{"us-east-1", "m5.large", 0.096},
		{"us-west-2", "m5.large", 0.096},
		{"eu-west-1", "m5.large", 0.107},
		{"ap-northeast-1", "m5.large", 0.124},
		{"us-east-1", "m7g.large", 0.0816},
		{"us-east-1", "p5.48xlarge", 55.04},
		{"us-west-2", "p5.48xlarge", 98.32},
	}
	for _, tt := range tests {
		t.Run(tt.region+"/"+tt.typ, func(t *testing.T) {
			got, ok := c.OnDemandPrice(tt.region, tt.typ)
			if !ok || got != tt.want {
				t.Errorf("OnDemandPrice = %v, %v; want %v", got, ok, tt.want)
			}
		})
	}
	if _, ok := c.OnDemandPrice("us-east-1", "no.such"); ok {
		t.Error("price for an unknown type")
	}
	if _, ok := c.OnDemandPrice("mars-north-1", "m5.large"); ok {
		t.Error("price in an unknown region")
	}
	if got := len(c.Regions()); got != 34 {
		t.Errorf("%d regions, want the data set's 34", got)
	}
}

func TestBuiltinZones(t *testing.T) {
	c := Builtin()
	want := []Zone{
		{"us-east-1a", "use1-az2"}, {"us-east-1b", "use1-az4"}, {"us-east-1c", "use1-az6"},
		{"us-east-1d", "use1-az1"}, {"us-east-1e", "use1-az3"}, {"us-east-1f", "use1-az5"},
	}
	if got := c.Zones("us-east-1"); !slices.Equal(got, want) {
		t.Errorf("Zones(us-east-1) = %v, want %v", got, want)
	}
	if got := c.DefaultZones("us-east-1"); !slices.Equal(got, want[:3]) {
		t.Errorf("DefaultZones(us-east-1) = %v", got)
	}
	if got := c.DefaultZones("us-west-1"); len(got) != 2 {
		t.Errorf("DefaultZones(us-west-1) = %v, want its two zones", got)
	}
	if got := c.Zones("us-gov-west-1"); got != nil {
		t.Errorf("us-gov-west-1 has no zone data, got %v", got)
	}
	if z, ok := c.Zone("us-east-1", "use1-az4"); !ok || z.Name != "us-east-1b" {
		t.Errorf("Zone by id = %v, %v", z, ok)
	}
	if !c.Offered("us-east-1", "us-east-1a", "m5.large") || !c.Offered("us-east-1", "use1-az2", "m5.large") {
		t.Error("m5.large must be offered in us-east-1a by name and id")
	}
	if c.Offered("us-east-1", "us-east-1z", "m5.large") || c.Offered("us-east-1", "us-east-1a", "no.such") {
		t.Error("unknown zone or type offered")
	}
	// Returned slices belong to the caller.
	zs := c.Zones("us-east-1")
	zs[0].Name = "mutated"
	if c.Zones("us-east-1")[0].Name != "us-east-1a" {
		t.Error("Zones exposes internal state")
	}
}

func TestBuiltinInvariants(t *testing.T) {
	c := Builtin()
	types := c.Types()
	if len(types) < 1300 {
		t.Fatalf("only %d types", len(types))
	}
	for i, ty := range types {
		if i > 0 && types[i-1].Name >= ty.Name {
			t.Fatalf("types not sorted/unique at %s", ty.Name)
		}
		if got, ok := c.Type(ty.Name); !ok || got != ty {
			t.Errorf("Type(%s) does not return the listed type", ty.Name)
		}
		if ty.Arch != "amd64" && ty.Arch != "arm64" {
			t.Errorf("%s: arch %q", ty.Name, ty.Arch)
		}
		if strings.HasPrefix(ty.Name, "mac") {
			t.Errorf("%s: Mac types must be excluded", ty.Name)
		}
		if ty.Family+"."+ty.Size != ty.Name || !strings.HasPrefix(ty.Family, ty.Category+strconv.Itoa(ty.Generation)) && !strings.HasPrefix(ty.Family, ty.Category+"-") {
			t.Errorf("%s: family %q size %q category %q generation %d", ty.Name, ty.Family, ty.Size, ty.Category, ty.Generation)
		}
		if ty.ENIMaxPods != ty.MaxENIs*(ty.IPv4PerENI-1)+2 {
			t.Errorf("%s: ENIMaxPods %d", ty.Name, ty.ENIMaxPods)
		}
		if ty.VCPU <= 0 || ty.MemoryMiB <= 0 || ty.CPUManufacturer == "" {
			t.Errorf("%s: vcpu %d memory %d cpu %q", ty.Name, ty.VCPU, ty.MemoryMiB, ty.CPUManufacturer)
		}
	}
	for _, r := range c.Regions() {
		for _, z := range c.Zones(r) {
			if !strings.HasPrefix(z.Name, r) || z.ID == "" {
				t.Errorf("%s: zone %+v", r, z)
			}
			if n := len(c.OfferedTypes(r, z.Name)); n == 0 {
				t.Errorf("%s/%s offers nothing", r, z.Name)
			}
		}
	}
	// Types() hands out a fresh slice.
	types[0] = nil
	if c.Types()[0] == nil {
		t.Error("Types exposes internal state")
	}
}

func TestOfferedTypes(t *testing.T) {
	c := Builtin()
	all := c.OfferedTypes("us-east-1", "")
	a := c.OfferedTypes("us-east-1", "us-east-1a")
	if len(a) == 0 || len(a) > len(all) {
		t.Fatalf("us-east-1a offers %d of %d", len(a), len(all))
	}
	for _, ty := range a {
		if !c.Offered("us-east-1", "us-east-1a", ty.Name) {
			t.Errorf("%s listed but not Offered", ty.Name)
		}
	}
	byID := c.OfferedTypes("us-east-1", "use1-az2")
	if len(byID) != len(a) {
		t.Errorf("by id %d types, by name %d", len(byID), len(a))
	}
	if got := c.OfferedTypes("us-east-1", "nowhere"); got != nil {
		t.Errorf("unknown zone offers %d types", len(got))
	}
}

func TestDecodeRejectsCorruptData(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"wrong magic", []byte("NOTACATALOG")},
		{"truncated", builtinData[:len(builtinData)/2]},
		{"trailing bytes", append(slices.Clone(builtinData), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data)
			if !errors.Is(err, format.ErrCorrupt) {
				t.Errorf("Decode error = %v, want ErrCorrupt", err)
			}
		})
	}
}
