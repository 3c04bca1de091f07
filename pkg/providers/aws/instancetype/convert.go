package instancetype

import (
	"math"
	"slices"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/dovetail-sh/dovetail/pkg/catalog"
)

// FromEC2 converts what DescribeInstanceTypes reports into the catalog's
// type model, so capacity, overhead and labels are computed by the same
// code the engine and simulator use. Facts EC2 does not report (branch
// ENIs for security groups per pod, EFA interface counts, EBS bandwidth
// when absent) are taken from the built-in catalog when it knows the type.
func FromEC2(info ec2types.InstanceTypeInfo, builtin *catalog.Catalog) *catalog.Type {
	name := string(info.InstanceType)
	t := &catalog.Type{Name: name}
	t.Family, t.Size, _ = strings.Cut(name, ".")
	t.Category, t.Generation = splitFamily(t.Family)
	t.Arch = "amd64"
	if pi := info.ProcessorInfo; pi != nil {
		if slices.Contains(pi.SupportedArchitectures, ec2types.ArchitectureTypeArm64) {
			t.Arch = "arm64"
		}
		t.CPUManufacturer = strings.ToLower(deref(pi.Manufacturer))
		if pi.SustainedClockSpeedInGhz != nil {
			t.CPUClockMHz = int(math.Round(*pi.SustainedClockSpeedInGhz * 1000))
		}
	}
	if v := info.VCpuInfo; v != nil {
		t.VCPU = int(deref(v.DefaultVCpus))
		t.DefaultCores = int(deref(v.DefaultCores))
		t.ThreadsPerCore = int(deref(v.DefaultThreadsPerCore))
	}
	if m := info.MemoryInfo; m != nil {
		t.MemoryMiB = deref(m.SizeInMiB)
	}
	if g := info.GpuInfo; g != nil && len(g.Gpus) > 0 {
		d := g.Gpus[0]
		t.GPU = &catalog.GPU{Name: deref(d.Name), Manufacturer: deref(d.Manufacturer), Count: int(deref(d.Count))}
		if d.MemoryInfo != nil {
			t.GPU.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
		}
	}
	if n := info.NeuronInfo; n != nil && len(n.NeuronDevices) > 0 {
		d := n.NeuronDevices[0]
		t.Accelerator = &catalog.Accelerator{Kind: catalog.AcceleratorNeuron, Name: deref(d.Name), Count: int(deref(d.Count))}
		if d.CoreInfo != nil {
			t.Accelerator.CoresPerDevice = int(deref(d.CoreInfo.Count))
		}
		if d.MemoryInfo != nil {
			t.Accelerator.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
		}
	} else if a := info.InferenceAcceleratorInfo; a != nil && len(a.Accelerators) > 0 {
		d := a.Accelerators[0]
		t.Accelerator = &catalog.Accelerator{Kind: catalog.AcceleratorInference, Name: deref(d.Name), Manufacturer: deref(d.Manufacturer), Count: int(deref(d.Count))}
		if d.MemoryInfo != nil {
			t.Accelerator.MemoryMiB = int64(deref(d.MemoryInfo.SizeInMiB))
		}
	}
	if s := info.InstanceStorageInfo; s != nil {
		t.InstanceStorageGB = int(deref(s.TotalSizeInGB))
		if s.NvmeSupport != "" && s.NvmeSupport != ec2types.EphemeralNvmeSupportUnsupported {
			t.LocalNVMeGiB = t.InstanceStorageGB
		}
	}
	t.Hypervisor = string(info.Hypervisor)
	if n := info.NetworkInfo; n != nil {
		t.NetworkPerformance = deref(n.NetworkPerformance)
		t.NetworkCards = max(len(n.NetworkCards), 1)
		t.MaxENIsAllCards = int(deref(n.MaximumNetworkInterfaces))
		t.MaxENIs = t.MaxENIsAllCards
		t.DefaultNetworkCardIndex = int(deref(n.DefaultNetworkCardIndex))
		var gbps float64
		for _, c := range n.NetworkCards {
			if deref(c.NetworkCardIndex) == deref(n.DefaultNetworkCardIndex) && c.MaximumNetworkInterfaces != nil {
				t.MaxENIs = int(*c.MaximumNetworkInterfaces)
			}
			gbps += deref(c.BaselineBandwidthInGbps)
			t.NetworkCardList = append(t.NetworkCardList, catalog.NetworkCard{
				Index: int(deref(c.NetworkCardIndex)), MaxENIs: int(deref(c.MaximumNetworkInterfaces)),
				BaselineMbps: int(math.Round(deref(c.BaselineBandwidthInGbps) * 1000)),
				PeakMbps:     int(math.Round(deref(c.PeakBandwidthInGbps) * 1000)),
				Performance:  deref(c.NetworkPerformance),
			})
		}
		t.NetworkBandwidthMbps = int(math.Round(gbps * 1000))
		t.IPv4PerENI = int(deref(n.Ipv4AddressesPerInterface))
		t.IPv6PerENI = int(deref(n.Ipv6AddressesPerInterface))
		t.IPv6 = deref(n.Ipv6Supported)
		t.EFA = deref(n.EfaSupported)
		if n.EfaInfo != nil {
			t.EFAInterfaces = int(deref(n.EfaInfo.MaximumEfaInterfaces))
		}
		t.EncryptionInTransit = deref(n.EncryptionInTransitSupported)
	}
	t.ENIMaxPods = t.MaxENIs*(t.IPv4PerENI-1) + 2
	if e := info.EbsInfo; e != nil {
		t.EBSOptimizedSupport = string(e.EbsOptimizedSupport)
		if o := e.EbsOptimizedInfo; o != nil {
			t.EBSBaselineMbps = int(deref(o.BaselineBandwidthInMbps))
			t.EBSMaximumMbps = int(deref(o.MaximumBandwidthInMbps))
		}
	}
	t.BareMetal = deref(info.BareMetal)
	t.Burstable = deref(info.BurstablePerformanceSupported)
	for _, u := range info.SupportedUsageClasses {
		t.UsageClasses = append(t.UsageClasses, string(u))
	}
	slices.Sort(t.UsageClasses)
	t.OnDemandSupported = slices.Contains(t.UsageClasses, "on-demand")
	t.SpotSupported = slices.Contains(t.UsageClasses, "spot")
	t.CapacityBlockSupported = slices.Contains(t.UsageClasses, "capacity-block")
	t.CurrentGeneration = deref(info.CurrentGeneration)
	t.FreeTierEligible = deref(info.FreeTierEligible)
	t.Hibernation = deref(info.HibernationSupported)
	t.NitroEnclaves = info.NitroEnclavesSupport == ec2types.NitroEnclavesSupportSupported

	if builtin != nil {
		if b, ok := builtin.Type(name); ok {
			t.TrunkingCompatible, t.BranchENIs = b.TrunkingCompatible, b.BranchENIs
			if t.EFAInterfaces == 0 {
				t.EFAInterfaces = b.EFAInterfaces
			}
			if t.EBSMaximumMbps == 0 {
				t.EBSBaselineMbps, t.EBSMaximumMbps = b.EBSBaselineMbps, b.EBSMaximumMbps
			}
			if t.NetworkBandwidthMbps == 0 {
				t.NetworkBandwidthMbps = b.NetworkBandwidthMbps
			}
			if t.Accelerator != nil && t.Accelerator.Manufacturer == "" && b.Accelerator != nil {
				t.Accelerator.Manufacturer = b.Accelerator.Manufacturer
			}
		}
	}
	return t
}

// splitFamily splits a family ("c7i-flex", "inf2", "u7i-12tb", "u-6tb1") into its
// category letters and generation number.
func splitFamily(family string) (string, int) {
	i := 0
	for i < len(family) && family[i] >= 'a' && family[i] <= 'z' {
		i++
	}
	if i < len(family) && family[i] == '-' {
		// "u-6tb1": the generation is the number at the end.
		k := len(family)
		for k > i && family[k-1] >= '0' && family[k-1] <= '9' {
			k--
		}
		gen, _ := strconv.Atoi(family[k:])
		return family[:i], gen
	}
	j := i
	for j < len(family) && family[j] >= '0' && family[j] <= '9' {
		j++
	}
	gen, _ := strconv.Atoi(family[i:j])
	return family[:i], gen
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
