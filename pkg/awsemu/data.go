package awsemu

// Catalog is the EC2 data the emulator serves: instance types, zones, where
// each type is offered, and prices. The default is the built-in catalog
// (pkg/catalog); tests may pass a smaller one through Options.Catalog.
//
// Implementations must be safe for concurrent use and must not change what
// they return while an emulator uses them.
type Catalog interface {
	// InstanceTypes returns every instance type, sorted by name.
	InstanceTypes() []InstanceTypeInfo
	// Zones returns the region's availability zones, sorted by name.
	Zones(region string) []Zone
	// Offered reports whether the type is sold in the zone (by name).
	Offered(region, zone, instanceType string) bool
	// OnDemandPrice is the Linux on-demand price in USD per hour; ok is
	// false when the type has no price in the region.
	OnDemandPrice(region, instanceType string) (price float64, ok bool)
	// SpotPrice is the current spot price in USD per hour; ok is false when
	// the type has no spot price there.
	SpotPrice(region, zone, instanceType string) (price float64, ok bool)
}

// Zone is an availability zone: its account-specific name and its
// account-independent id.
type Zone struct {
	Name string // e.g. us-east-1a
	ID   string // e.g. use1-az1
}

// InstanceTypeInfo is what DescribeInstanceTypes reports for one type, plus
// the facts the node booter needs (max pods).
type InstanceTypeInfo struct {
	Name                  string
	CurrentGeneration     bool
	VCPU                  int32
	DefaultCores          int32
	DefaultThreadsPerCore int32
	MemoryMiB             int64
	// Architectures as EC2 spells them: x86_64, arm64, i386, x86_64_mac...
	Architectures      []string
	Manufacturer       string
	SustainedClockGHz  float64
	Hypervisor         string // nitro, xen or "" (bare metal)
	BareMetal          bool
	Burstable          bool
	UsageClasses       []string // on-demand, spot, capacity-block
	NetworkPerformance string
	MaxENIs            int32
	MaxENIsDefaultCard int32
	IPv4PerENI         int32
	IPv6PerENI         int32
	IPv6Supported      bool
	EFASupported       bool
	// EFAInterfaces is NetworkInfo.EfaInfo.MaximumEfaInterfaces (served
	// when EFASupported).
	EFAInterfaces           int32
	ENASupport              string
	DefaultNetworkCard      int32
	NetworkCards            []NetworkCard
	GPU                     *GPUInfo
	Accelerators            *AcceleratorInfo
	InstanceStorage         *InstanceStorage
	EBSOptimizedSupport     string
	MaxEBSAttachments       int32
	EBSNVMeSupport          string
	BootModes               []string
	VirtualizationTypes     []string
	RootDeviceTypes         []string
	HibernationSupported    bool
	EncryptionInTransit     bool
	AutoRecoverySupported   bool
	DedicatedHostsSupported bool
	FreeTierEligible        bool
	NitroEnclavesSupport    string
	NitroTPMSupport         string
	PlacementStrategies     []string
	// MaxPods is the VPC CNI's ENI-based pod limit for the type (ENIs x
	// (IPv4 per ENI - 1) + 2), the kubelet's max pods when user data does
	// not say otherwise.
	MaxPods int32
}

// NetworkCard is one entry of NetworkInfo.NetworkCards.
type NetworkCard struct {
	Index              int32
	MaxENIs            int32
	BaselineGbps       float64
	PeakGbps           float64
	NetworkPerformance string
}

// GPUInfo describes the GPUs of a type (EC2 lists at most one GPU model).
type GPUInfo struct {
	Count        int32
	Manufacturer string
	Name         string
	MemoryMiB    int32 // per GPU
}

// AcceleratorInfo describes Neuron (Inferentia/Trainium) or inference
// accelerators.
type AcceleratorInfo struct {
	Kind           string // "neuron" or "inference"
	Count          int32
	Name           string
	Manufacturer   string
	MemoryMiB      int32
	CoresPerDevice int32
}

// InstanceStorage is the instance store of a type.
type InstanceStorage struct {
	TotalGB     int64
	NVMeSupport string // required, supported, unsupported
	Disks       []Disk
}

// Disk is one kind of instance-store disk.
type Disk struct {
	Count  int32
	SizeGB int64
	Type   string // ssd, hdd
}

// HasArch reports whether the type supports the EC2 architecture name.
func (t *InstanceTypeInfo) HasArch(arch string) bool {
	for _, a := range t.Architectures {
		if a == arch {
			return true
		}
	}
	return false
}

// SupportsUsageClass reports whether the type can be bought as the given
// usage class (on-demand, spot).
func (t *InstanceTypeInfo) SupportsUsageClass(c string) bool {
	for _, u := range t.UsageClasses {
		if u == c {
			return true
		}
	}
	return false
}
