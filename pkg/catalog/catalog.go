package catalog

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/dovetail-sh/dovetail/pkg/catalog/internal/format"
)

//go:embed data/catalog.bin
var builtinData []byte

// Type is one EC2 instance type: the facts DescribeInstanceTypes reports plus
// the VPC limits that decide pod density. A *Type returned by a Catalog is
// shared: callers must not modify it.
type Type struct {
	// Name is the EC2 name, e.g. "m7g.large".
	Name string
	// Family and Size are the parts of Name before and after the dot
	// ("c7i-flex", "large"; "u7i-12tb", "224xlarge").
	Family, Size string
	// Category is the letters of the family before the generation digit
	// ("m", "c", "inf", "trn", "hpc", "u"), Generation the number after them.
	Category   string
	Generation int
	// Arch is the Kubernetes architecture: "amd64" or "arm64".
	Arch string
	// VCPU is the default vCPU count; DefaultCores and ThreadsPerCore its
	// split into cores and threads.
	VCPU, DefaultCores, ThreadsPerCore int
	// MemoryMiB is the memory EC2 advertises, before any overhead.
	MemoryMiB int64
	// CPUManufacturer is "intel", "amd" or "aws"; CPUClockMHz the sustained
	// clock speed (0 where EC2 does not state one).
	CPUManufacturer string
	CPUClockMHz     int
	// GPU is nil for types without GPUs. Some fractional-GPU types
	// (g6f, gr6f) report a GPU with Count 0.
	GPU *GPU
	// Accelerator is nil for types without Neuron or inference accelerators.
	Accelerator *Accelerator
	// LocalNVMeGiB is the total local NVMe instance storage (EC2 calls the
	// unit GB; the figure is passed through), 0 without NVMe instance storage.
	LocalNVMeGiB int
	// InstanceStorageGB is the total instance storage of any kind, 0 without.
	InstanceStorageGB int
	// Hypervisor is "nitro" or "xen"; empty for bare-metal types.
	Hypervisor string
	// NetworkPerformance is EC2's description ("Up to 10 Gigabit");
	// NetworkBandwidthMbps the baseline bandwidth, 0 where unpublished.
	NetworkPerformance   string
	NetworkBandwidthMbps int
	// NetworkCards and MaxENIsAllCards describe all network cards.
	NetworkCards, MaxENIsAllCards int
	// MaxENIs is the ENI limit of the default network card, the one the VPC
	// CNI uses; IPv4PerENI and IPv6PerENI are the addresses per ENI.
	MaxENIs, IPv4PerENI, IPv6PerENI int
	// IPv6 reports IPv6 support.
	IPv6 bool
	// ENIMaxPods is the VPC CNI's pod limit MaxENIs*(IPv4PerENI-1)+2.
	ENIMaxPods int
	// TrunkingCompatible types support security groups for pods; BranchENIs is
	// then their vpc.amazonaws.com/pod-eni capacity (0 otherwise).
	TrunkingCompatible bool
	BranchENIs         int
	// EFA reports Elastic Fabric Adapter support; EFAInterfaces is the
	// vpc.amazonaws.com/efa capacity (see the generator for how it is
	// derived).
	EFA           bool
	EFAInterfaces int
	// EBSOptimizedSupport is "default", "supported" or "unsupported";
	// EBSBaselineMbps and EBSMaximumMbps are 0 where unknown.
	EBSOptimizedSupport             string
	EBSBaselineMbps, EBSMaximumMbps int
	BareMetal, Burstable            bool
	// UsageClasses are EC2's supported usage classes, sorted: a subset of
	// "capacity-block", "on-demand", "spot".
	UsageClasses []string
	// OnDemandSupported, SpotSupported and CapacityBlockSupported restate
	// UsageClasses.
	OnDemandSupported, SpotSupported, CapacityBlockSupported bool
	// CurrentGeneration is EC2's current-generation flag.
	CurrentGeneration bool
	// EncryptionInTransit, NitroEnclaves, FreeTierEligible, Hibernation,
	// DedicatedHosts and AutoRecovery are EC2's flags of the same names.
	EncryptionInTransit, NitroEnclaves, FreeTierEligible, Hibernation bool
	DedicatedHosts, AutoRecovery                                      bool

	// The remaining fields are EC2 facts that only the local emulator uses
	// (it serves them in DescribeInstanceTypes).

	// ENASupport, EBSNVMeSupport, NitroTPMSupport and InstanceStorageNVMe are
	// "required", "supported" or "unsupported" (InstanceStorageNVMe is empty
	// without instance storage).
	ENASupport, EBSNVMeSupport, NitroTPMSupport, InstanceStorageNVMe string
	// MaxEBSAttachments, EBSBaselineIOPS and EBSMaximumIOPS are 0 where
	// unknown.
	MaxEBSAttachments, EBSBaselineIOPS, EBSMaximumIOPS int
	// InstanceStorageDisks lists the instance-store disks.
	InstanceStorageDisks []Disk
	// NetworkCardList describes each network card; DefaultNetworkCardIndex
	// names the one MaxENIs refers to.
	NetworkCardList         []NetworkCard
	DefaultNetworkCardIndex int
	// BootModes, VirtualizationTypes, RootDeviceTypes and PlacementStrategies
	// are EC2's supported values, sorted.
	BootModes, VirtualizationTypes, RootDeviceTypes, PlacementStrategies []string

	labels map[string]string // built once by the catalog, copied by Labels
}

// GPU describes a type's GPUs.
type GPU struct {
	// Name and Manufacturer as EC2 reports them ("H100", "NVIDIA").
	Name, Manufacturer string
	Count              int
	// MemoryMiB is the memory of one GPU.
	MemoryMiB int64
}

// Accelerator describes a type's machine-learning accelerators.
type Accelerator struct {
	// Kind is AcceleratorNeuron (Inferentia, Trainium) or
	// AcceleratorInference (other inference accelerators such as the
	// Qualcomm AI100 of dl2q).
	Kind string
	// Name as EC2 reports it ("Inferentia2"); Manufacturer may be empty.
	Name, Manufacturer string
	Count              int
	// MemoryMiB is the memory of one device.
	MemoryMiB int64
	// CoresPerDevice is the NeuronCore count of one Neuron device (0 for
	// other kinds).
	CoresPerDevice int
}

// Disk is one kind of instance-store disk of a type.
type Disk struct {
	Count, SizeGB int
	// Type is "ssd" or "hdd".
	Type string
}

// NetworkCard is one network card of a type.
type NetworkCard struct {
	Index, MaxENIs int
	// BaselineMbps and PeakMbps are the card's bandwidth.
	BaselineMbps, PeakMbps int
	// Performance is EC2's description ("100 Gigabit").
	Performance string
}

// Accelerator kinds.
const (
	AcceleratorNeuron    = "neuron"
	AcceleratorInference = "inference"
)

// Zone is an availability zone: its name (topology.kubernetes.io/zone) and
// its account-independent id (topology.k8s.aws/zone-id).
type Zone struct {
	Name, ID string
}

// Catalog is an immutable set of instance types with their regional prices
// and zonal offerings. It is safe for concurrent use.
type Catalog struct {
	types   []*Type
	byName  map[string]int
	regions []string
	region  map[string]*regionData
}

type regionData struct {
	name   string
	prices []float64 // by type index; 0 where the type has no price
	zones  []zoneData
	byKey  map[string]int // zone name and zone id -> index in zones
}

type zoneData struct {
	Zone
	offered format.Bitset
}

var builtin = sync.OnceValue(func() *Catalog {
	c, err := Decode(builtinData)
	if err != nil {
		// The embedded data is generated and checked in; tests decode it.
		panic(fmt.Sprintf("catalog: the embedded catalog does not decode (regenerate with `make generate`): %v", err))
	}
	return c
})

// Builtin returns the catalog generated from the EC2 data set and embedded in
// the binary. It is decoded on first use and shared afterwards.
func Builtin() *Catalog { return builtin() }

// Decode builds a catalog from data in the generator's format (see
// pkg/catalog/internal/format). Errors wrap format.ErrCorrupt.
func Decode(data []byte) (*Catalog, error) {
	f, err := format.Decode(data)
	if err != nil {
		return nil, err
	}
	c := &Catalog{
		types:  make([]*Type, len(f.Types)),
		byName: make(map[string]int, len(f.Types)),
		region: make(map[string]*regionData, len(f.Regions)),
	}
	// One backing array keeps the types close together in memory.
	store := make([]Type, len(f.Types))
	for i := range f.Types {
		t := &store[i]
		fromFormat(t, &f.Types[i])
		if i > 0 && store[i-1].Name >= t.Name {
			return nil, fmt.Errorf("%w: types not sorted by name at %q", format.ErrCorrupt, t.Name)
		}
		t.labels = t.buildLabels()
		c.types[i] = t
		c.byName[t.Name] = i
	}
	for _, r := range f.Regions {
		rd := &regionData{name: r.Name, prices: make([]float64, len(f.Types)), byKey: map[string]int{}}
		for _, p := range r.Prices {
			rd.prices[p.Type] = float64(p.MicroUSD) / 1e6
		}
		for i, z := range r.Zones {
			rd.zones = append(rd.zones, zoneData{Zone: Zone{Name: z.Name, ID: z.ID}, offered: z.Offered})
			rd.byKey[z.Name] = i
			if z.ID != "" {
				rd.byKey[z.ID] = i
			}
		}
		if !sort.SliceIsSorted(rd.zones, func(i, j int) bool { return rd.zones[i].Name < rd.zones[j].Name }) {
			return nil, fmt.Errorf("%w: zones of %s not sorted by name", format.ErrCorrupt, r.Name)
		}
		c.regions = append(c.regions, r.Name)
		c.region[r.Name] = rd
	}
	if !slices.IsSorted(c.regions) {
		return nil, fmt.Errorf("%w: regions not sorted", format.ErrCorrupt)
	}
	return c, nil
}

func fromFormat(t *Type, s *format.Type) {
	*t = Type{
		Name: s.Name, Family: s.Family, Size: s.Size, Category: s.Category, Generation: s.Generation,
		Arch: s.Arch, VCPU: s.VCPU, DefaultCores: s.DefaultCores, ThreadsPerCore: s.ThreadsPerCore,
		MemoryMiB: s.MemoryMiB, CPUManufacturer: s.CPUManufacturer, CPUClockMHz: s.ClockSpeedMHz,
		LocalNVMeGiB: s.LocalNVMeGiB, InstanceStorageGB: s.InstanceStorageGB, Hypervisor: s.Hypervisor,
		NetworkPerformance: s.NetworkPerformance, NetworkBandwidthMbps: s.NetworkBandwidthMbps,
		NetworkCards: s.NetworkCards, MaxENIsAllCards: s.MaxENIsAllCards,
		MaxENIs: s.MaxENIs, IPv4PerENI: s.IPv4PerENI, IPv6PerENI: s.IPv6PerENI,
		ENIMaxPods:          s.MaxENIs*(s.IPv4PerENI-1) + 2,
		BranchENIs:          s.BranchENIs,
		EFAInterfaces:       s.EFAInterfaces,
		EBSOptimizedSupport: s.EBSOptimizedSupport, EBSBaselineMbps: s.EBSBaselineMbps, EBSMaximumMbps: s.EBSMaximumMbps,
		UsageClasses:        s.UsageClasses,
		IPv6:                s.Flags&format.FlagIPv6 != 0,
		TrunkingCompatible:  s.Flags&format.FlagTrunking != 0,
		EFA:                 s.Flags&format.FlagEFA != 0,
		BareMetal:           s.Flags&format.FlagBareMetal != 0,
		Burstable:           s.Flags&format.FlagBurstable != 0,
		CurrentGeneration:   s.Flags&format.FlagCurrentGeneration != 0,
		EncryptionInTransit: s.Flags&format.FlagEncryptionInTransit != 0,
		NitroEnclaves:       s.Flags&format.FlagNitroEnclaves != 0,
		FreeTierEligible:    s.Flags&format.FlagFreeTier != 0,
		Hibernation:         s.Flags&format.FlagHibernation != 0,
		DedicatedHosts:      s.Flags&format.FlagDedicatedHosts != 0,
		AutoRecovery:        s.Flags&format.FlagAutoRecovery != 0,

		ENASupport: s.ENASupport, EBSNVMeSupport: s.EBSNVMeSupport, NitroTPMSupport: s.NitroTPMSupport,
		InstanceStorageNVMe: s.InstanceStorageNVMe,
		MaxEBSAttachments:   s.MaxEBSAttachments, EBSBaselineIOPS: s.EBSBaselineIOPS, EBSMaximumIOPS: s.EBSMaximumIOPS,
		DefaultNetworkCardIndex: s.DefaultNetworkCardIndex,
		BootModes:               s.BootModes, VirtualizationTypes: s.VirtualizationTypes,
		RootDeviceTypes: s.RootDeviceTypes, PlacementStrategies: s.PlacementStrategies,
	}
	for _, d := range s.Disks {
		t.InstanceStorageDisks = append(t.InstanceStorageDisks, Disk{Count: d.Count, SizeGB: d.SizeGB, Type: d.Type})
	}
	for _, c := range s.Cards {
		t.NetworkCardList = append(t.NetworkCardList, NetworkCard{
			Index: c.Index, MaxENIs: c.MaxENIs, BaselineMbps: c.BaselineMbps, PeakMbps: c.PeakMbps, Performance: c.Performance,
		})
	}
	for _, uc := range s.UsageClasses {
		switch uc {
		case "on-demand":
			t.OnDemandSupported = true
		case "spot":
			t.SpotSupported = true
		case "capacity-block":
			t.CapacityBlockSupported = true
		}
	}
	if s.GPUName != "" || s.GPUCount > 0 {
		t.GPU = &GPU{Name: s.GPUName, Manufacturer: s.GPUManufacturer, Count: s.GPUCount, MemoryMiB: s.GPUMemoryMiB}
	}
	if s.AcceleratorKind != "" {
		t.Accelerator = &Accelerator{
			Kind: s.AcceleratorKind, Name: s.AcceleratorName, Manufacturer: s.AcceleratorManufacturer,
			Count: s.AcceleratorCount, MemoryMiB: s.AcceleratorMemoryMiB, CoresPerDevice: s.AcceleratorCores,
		}
	}
}

// Types returns every type, sorted by name. The slice is the caller's; the
// types are shared.
func (c *Catalog) Types() []*Type { return slices.Clone(c.types) }

// Type looks a type up by name.
func (c *Catalog) Type(name string) (*Type, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return c.types[i], true
}

// Regions returns every region with prices or zones, sorted. A few regions
// have prices but no zone data (see data/summary.txt); they have no Zones.
func (c *Catalog) Regions() []string { return slices.Clone(c.regions) }

// Zones returns the zones of a region sorted by name; nil for an unknown
// region or one without zone data.
func (c *Catalog) Zones(region string) []Zone {
	rd := c.region[region]
	if rd == nil || len(rd.zones) == 0 {
		return nil
	}
	out := make([]Zone, len(rd.zones))
	for i, z := range rd.zones {
		out[i] = z.Zone
	}
	return out
}

// DefaultZoneCount is how many zones DefaultZones returns.
const DefaultZoneCount = 3

// DefaultZones returns the first DefaultZoneCount zones of a region by name:
// the zones the local AWS emulator creates its default subnets in.
func (c *Catalog) DefaultZones(region string) []Zone {
	zs := c.Zones(region)
	if len(zs) > DefaultZoneCount {
		zs = zs[:DefaultZoneCount]
	}
	return zs
}

// Zone resolves a zone of a region given its name or its id.
func (c *Catalog) Zone(region, nameOrID string) (Zone, bool) {
	rd := c.region[region]
	if rd == nil {
		return Zone{}, false
	}
	i, ok := rd.byKey[nameOrID]
	if !ok {
		return Zone{}, false
	}
	return rd.zones[i].Zone, true
}

// Offered reports whether a type is offered in a zone (given by name or id)
// of a region.
func (c *Catalog) Offered(region, zone, typeName string) bool {
	rd := c.region[region]
	if rd == nil {
		return false
	}
	zi, ok := rd.byKey[zone]
	if !ok {
		return false
	}
	ti, ok := c.byName[typeName]
	return ok && rd.zones[zi].offered.Has(ti)
}

// OfferedTypes returns the types offered in a zone (name or id) of a region,
// sorted by name; with zone "" it returns those offered in any zone of the
// region.
func (c *Catalog) OfferedTypes(region, zone string) []*Type {
	rd := c.region[region]
	if rd == nil {
		return nil
	}
	var zones []zoneData
	if zone == "" {
		zones = rd.zones
	} else if zi, ok := rd.byKey[zone]; ok {
		zones = rd.zones[zi : zi+1]
	}
	var out []*Type
	for i, t := range c.types {
		for _, z := range zones {
			if z.offered.Has(i) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// OnDemandPrice returns the Linux on-demand price of a type in a region, in
// USD per hour.
func (c *Catalog) OnDemandPrice(region, typeName string) (float64, bool) {
	rd := c.region[region]
	ti, ok := c.byName[typeName]
	if rd == nil || !ok || rd.prices[ti] == 0 {
		return 0, false
	}
	return rd.prices[ti], true
}
