package catalog

import (
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Label keys the catalog publishes. The karpenter.k8s.aws keys are the
// AWS provider's well-known instance labels.
const (
	LabelInstanceType = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	LabelArch         = corev1.LabelArchStable         // kubernetes.io/arch
	LabelOS           = corev1.LabelOSStable           // kubernetes.io/os
	// LabelZoneID is per offering, not in Type.Labels.
	LabelZoneID = "topology.k8s.aws/zone-id"

	LabelInstanceCategory                     = "karpenter.k8s.aws/instance-category"
	LabelInstanceFamily                       = "karpenter.k8s.aws/instance-family"
	LabelInstanceGeneration                   = "karpenter.k8s.aws/instance-generation"
	LabelInstanceSize                         = "karpenter.k8s.aws/instance-size"
	LabelInstanceCPU                          = "karpenter.k8s.aws/instance-cpu"
	LabelInstanceCPUManufacturer              = "karpenter.k8s.aws/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeedMhz    = "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                       = "karpenter.k8s.aws/instance-memory"
	LabelInstanceNetworkBandwidth             = "karpenter.k8s.aws/instance-network-bandwidth"
	LabelInstanceEBSBandwidth                 = "karpenter.k8s.aws/instance-ebs-bandwidth"
	LabelInstanceGPUName                      = "karpenter.k8s.aws/instance-gpu-name"
	LabelInstanceGPUManufacturer              = "karpenter.k8s.aws/instance-gpu-manufacturer"
	LabelInstanceGPUCount                     = "karpenter.k8s.aws/instance-gpu-count"
	LabelInstanceGPUMemory                    = "karpenter.k8s.aws/instance-gpu-memory"
	LabelInstanceAcceleratorName              = "karpenter.k8s.aws/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer      = "karpenter.k8s.aws/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount             = "karpenter.k8s.aws/instance-accelerator-count"
	LabelInstanceHypervisor                   = "karpenter.k8s.aws/instance-hypervisor"
	LabelInstanceLocalNVMe                    = "karpenter.k8s.aws/instance-local-nvme"
	LabelInstanceEncryptionInTransitSupported = "karpenter.k8s.aws/instance-encryption-in-transit-supported"
	LabelInstanceCapabilityFlex               = "karpenter.k8s.aws/instance-capability-flex"
	LabelInstanceTenancy                      = "karpenter.k8s.aws/instance-tenancy"
)

// Labels returns the single-valued node labels of the type, with values as
// the AWS provider publishes them. The map is the caller's to modify.
//
// Always present: instance-type, arch, os (linux), and the instance
// category, family, generation, size, cpu, cpu-manufacturer,
// cpu-sustained-clock-speed-mhz ("0" where EC2 states no clock speed),
// memory (MiB), hypervisor (empty for bare metal),
// encryption-in-transit-supported, capability-flex and tenancy ("default").
// Present when known: network-bandwidth (Mbps), ebs-bandwidth (maximum Mbps,
// EBS-optimised-by-default types only), local-nvme (GiB), the four gpu-*
// labels (gpu-name and gpu-manufacturer lower-case with dashes for spaces;
// gpu-memory per GPU in MiB) and the three accelerator-* labels.
//
// Zone, zone id and capacity type vary per offering and are not included.
func (t *Type) Labels() map[string]string {
	if t.labels != nil {
		return maps.Clone(t.labels)
	}
	return t.buildLabels()
}

func (t *Type) buildLabels() map[string]string {
	l := make(map[string]string, 28)
	l[LabelInstanceType] = t.Name
	l[LabelArch] = t.Arch
	l[LabelOS] = string(corev1.Linux)
	l[LabelInstanceCategory] = t.Category
	l[LabelInstanceFamily] = t.Family
	l[LabelInstanceGeneration] = strconv.Itoa(t.Generation)
	l[LabelInstanceSize] = t.Size
	l[LabelInstanceCPU] = strconv.Itoa(t.VCPU)
	l[LabelInstanceCPUManufacturer] = t.CPUManufacturer
	l[LabelInstanceCPUSustainedClockSpeedMhz] = strconv.Itoa(t.CPUClockMHz)
	l[LabelInstanceMemory] = strconv.FormatInt(t.MemoryMiB, 10)
	l[LabelInstanceHypervisor] = t.Hypervisor
	l[LabelInstanceEncryptionInTransitSupported] = strconv.FormatBool(t.EncryptionInTransit)
	l[LabelInstanceCapabilityFlex] = strconv.FormatBool(strings.Contains(t.Family, "-flex"))
	l[LabelInstanceTenancy] = "default"
	if t.NetworkBandwidthMbps > 0 {
		l[LabelInstanceNetworkBandwidth] = strconv.Itoa(t.NetworkBandwidthMbps)
	}
	if t.EBSOptimizedSupport == "default" && t.EBSMaximumMbps > 0 {
		l[LabelInstanceEBSBandwidth] = strconv.Itoa(t.EBSMaximumMbps)
	}
	if t.LocalNVMeGiB > 0 {
		l[LabelInstanceLocalNVMe] = strconv.Itoa(t.LocalNVMeGiB)
	}
	if g := t.GPU; g != nil {
		l[LabelInstanceGPUName] = labelCase(g.Name)
		l[LabelInstanceGPUManufacturer] = labelCase(g.Manufacturer)
		l[LabelInstanceGPUCount] = strconv.Itoa(g.Count)
		l[LabelInstanceGPUMemory] = strconv.FormatInt(g.MemoryMiB, 10)
	}
	if a := t.Accelerator; a != nil {
		l[LabelInstanceAcceleratorName] = labelCase(a.Name)
		manufacturer := a.Manufacturer
		if a.Kind == AcceleratorNeuron {
			// Neuron devices are AWS's own; EC2 names no manufacturer for
			// Trainium, and the provider labels them all "aws".
			manufacturer = "aws"
		}
		if manufacturer != "" {
			l[LabelInstanceAcceleratorManufacturer] = labelCase(manufacturer)
		}
		l[LabelInstanceAcceleratorCount] = strconv.Itoa(a.Count)
	}
	return l
}

// labelCase lower-cases an EC2 name and replaces spaces by dashes
// ("Radeon Pro V520" -> "radeon-pro-v520").
func labelCase(s string) string { return strings.ToLower(strings.ReplaceAll(s, " ", "-")) }
