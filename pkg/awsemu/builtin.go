package awsemu

import (
	"fmt"
	"sync"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// BuiltinCatalog returns the emulator's view of dovetail's built-in EC2
// catalog (pkg/catalog): the same types, zones, offerings and prices the
// scheduling engine uses, with spot prices from catalog.SpotPrice.
func BuiltinCatalog() (Catalog, error) {
	builtinOnce.Do(func() {
		builtinCat, builtinErr = FromCatalog(catalog.Builtin())
	})
	return builtinCat, builtinErr
}

var (
	builtinOnce sync.Once
	builtinCat  Catalog
	builtinErr  error
)

// FromCatalog adapts a pkg/catalog catalog.
func FromCatalog(c *catalog.Catalog) (Catalog, error) {
	if c == nil {
		return nil, fmt.Errorf("awsemu: nil catalog")
	}
	types := c.Types()
	infos := make([]InstanceTypeInfo, 0, len(types))
	for _, t := range types {
		infos = append(infos, typeInfo(t))
	}
	return &catalogAdapter{c: c, types: infos}, nil
}

type catalogAdapter struct {
	c     *catalog.Catalog
	types []InstanceTypeInfo
}

// Regions lists the regions with prices (the Pricing API serves them all).
func (a *catalogAdapter) Regions() []string { return a.c.Regions() }

func (a *catalogAdapter) InstanceTypes() []InstanceTypeInfo { return a.types }

func (a *catalogAdapter) Zones(region string) []Zone {
	zs := a.c.Zones(region)
	out := make([]Zone, len(zs))
	for i, z := range zs {
		out[i] = Zone{Name: z.Name, ID: z.ID}
	}
	return out
}

func (a *catalogAdapter) Offered(region, zone, instanceType string) bool {
	return a.c.Offered(region, zone, instanceType)
}

func (a *catalogAdapter) OnDemandPrice(region, instanceType string) (float64, bool) {
	return a.c.OnDemandPrice(region, instanceType)
}

func (a *catalogAdapter) SpotPrice(region, zone, instanceType string) (float64, bool) {
	od, ok := a.c.OnDemandPrice(region, instanceType)
	if !ok {
		return 0, false
	}
	p := catalog.SpotPrice(region, zone, instanceType, od)
	return p, p > 0
}

// ec2Arch maps a Kubernetes architecture to EC2's name.
func ec2Arch(k8sArch string) string {
	if k8sArch == "amd64" {
		return "x86_64"
	}
	return k8sArch
}

var cpuManufacturers = map[string]string{"intel": "Intel", "amd": "AMD", "aws": "AWS", "apple": "Apple"}

func typeInfo(t *catalog.Type) InstanceTypeInfo {
	info := InstanceTypeInfo{
		Name:                    t.Name,
		CurrentGeneration:       t.CurrentGeneration,
		VCPU:                    int32(t.VCPU),
		DefaultCores:            int32(t.DefaultCores),
		DefaultThreadsPerCore:   int32(t.ThreadsPerCore),
		MemoryMiB:               t.MemoryMiB,
		Architectures:           []string{ec2Arch(t.Arch)},
		Manufacturer:            cpuManufacturers[t.CPUManufacturer],
		SustainedClockGHz:       float64(t.CPUClockMHz) / 1000,
		Hypervisor:              t.Hypervisor,
		BareMetal:               t.BareMetal,
		Burstable:               t.Burstable,
		UsageClasses:            append([]string(nil), t.UsageClasses...),
		NetworkPerformance:      t.NetworkPerformance,
		MaxENIs:                 int32(t.MaxENIsAllCards),
		MaxENIsDefaultCard:      int32(t.MaxENIs),
		IPv4PerENI:              int32(t.IPv4PerENI),
		IPv6PerENI:              int32(t.IPv6PerENI),
		IPv6Supported:           t.IPv6,
		EFASupported:            t.EFA,
		ENASupport:              "required",
		EBSOptimizedSupport:     t.EBSOptimizedSupport,
		MaxEBSAttachments:       27,
		EBSNVMeSupport:          "required",
		BootModes:               []string{"legacy-bios", "uefi"},
		VirtualizationTypes:     []string{"hvm"},
		RootDeviceTypes:         []string{"ebs"},
		HibernationSupported:    t.Hibernation,
		EncryptionInTransit:     t.EncryptionInTransit,
		AutoRecoverySupported:   !t.BareMetal,
		DedicatedHostsSupported: true,
		FreeTierEligible:        t.FreeTierEligible,
		NitroEnclavesSupport:    "unsupported",
		NitroTPMSupport:         "unsupported",
		PlacementStrategies:     []string{"cluster", "partition", "spread"},
		MaxPods:                 int32(t.ENIMaxPods),
	}
	if info.Manufacturer == "" {
		info.Manufacturer = t.CPUManufacturer
	}
	if t.Arch == "arm64" {
		info.BootModes = []string{"uefi"}
	}
	if t.NitroEnclaves {
		info.NitroEnclavesSupport = "supported"
	}
	if t.Hypervisor == "nitro" {
		info.NitroTPMSupport = "supported"
	}
	if t.EFA {
		info.EFAInterfaces = int32(t.EFAInterfaces)
	}
	// Each card's interfaces as the catalog lists them; types the catalog
	// does not list cards for share the ENIs evenly, the default card
	// holding MaxENIs. The baseline bandwidth is the type's, split evenly,
	// so the sum a client reads is the catalog's figure (the per-card
	// figures of the raw data do not always add up to it).
	for _, c := range t.NetworkCardList {
		info.NetworkCards = append(info.NetworkCards, NetworkCard{
			Index: int32(c.Index), MaxENIs: int32(c.MaxENIs), NetworkPerformance: c.Performance,
			BaselineGbps: float64(t.NetworkBandwidthMbps) / 1000 / float64(len(t.NetworkCardList)),
			PeakGbps:     float64(c.PeakMbps) / 1000,
		})
	}
	info.DefaultNetworkCard = int32(t.DefaultNetworkCardIndex)
	if len(info.NetworkCards) == 0 {
		info.DefaultNetworkCard = 0
		cards := max(t.NetworkCards, 1)
		perCard := int32(t.MaxENIsAllCards / cards)
		for i := 0; i < cards; i++ {
			n := perCard
			if i == 0 {
				n = int32(t.MaxENIs)
			}
			info.NetworkCards = append(info.NetworkCards, NetworkCard{
				Index: int32(i), MaxENIs: n, NetworkPerformance: t.NetworkPerformance,
				BaselineGbps: float64(t.NetworkBandwidthMbps) / 1000 / float64(cards),
			})
		}
	}
	if g := t.GPU; g != nil {
		info.GPU = &GPUInfo{Count: int32(g.Count), Manufacturer: g.Manufacturer, Name: g.Name, MemoryMiB: int32(g.MemoryMiB)}
	}
	if a := t.Accelerator; a != nil {
		info.Accelerators = &AcceleratorInfo{
			Kind: a.Kind, Count: int32(a.Count), Name: a.Name, Manufacturer: a.Manufacturer,
			MemoryMiB: int32(a.MemoryMiB), CoresPerDevice: int32(a.CoresPerDevice),
		}
	}
	if t.InstanceStorageGB > 0 {
		nvme := "unsupported"
		typ := "hdd"
		if t.LocalNVMeGiB > 0 {
			nvme, typ = "required", "ssd"
		}
		info.InstanceStorage = &InstanceStorage{
			TotalGB: int64(t.InstanceStorageGB), NVMeSupport: nvme,
			Disks: []Disk{{Count: 1, SizeGB: int64(t.InstanceStorageGB), Type: typ}},
		}
	}
	return info
}
