package requirements

import "slices"

// wellKnownKeys are the labels Kubernetes, Karpenter v1 and its AWS provider
// define, sorted. They feed typo hints; WellKnownKey exposes them as a
// predicate that callers may use as CompatibleOptions.OpenKeys.
var wellKnownKeys = func() []string {
	keys := []string{
		"kubernetes.io/arch",
		"kubernetes.io/hostname",
		"kubernetes.io/os",
		"node.kubernetes.io/instance-type",
		"node.kubernetes.io/windows-build",
		"topology.kubernetes.io/region",
		"topology.kubernetes.io/zone",
		"karpenter.sh/capacity-type",
		"karpenter.sh/nodepool",
		"karpenter.sh/initialized",
		"karpenter.sh/registered",
		"topology.k8s.aws/zone-id",
		"karpenter.k8s.aws/instance-category",
		"karpenter.k8s.aws/instance-family",
		"karpenter.k8s.aws/instance-generation",
		"karpenter.k8s.aws/instance-size",
		"karpenter.k8s.aws/instance-cpu",
		"karpenter.k8s.aws/instance-cpu-manufacturer",
		"karpenter.k8s.aws/instance-memory",
		"karpenter.k8s.aws/instance-network-bandwidth",
		"karpenter.k8s.aws/instance-gpu-name",
		"karpenter.k8s.aws/instance-gpu-manufacturer",
		"karpenter.k8s.aws/instance-gpu-count",
		"karpenter.k8s.aws/instance-gpu-memory",
		"karpenter.k8s.aws/instance-hypervisor",
		"karpenter.k8s.aws/instance-local-nvme",
	}
	slices.Sort(keys)
	return keys
}()

// WellKnownKeys returns the well-known label keys used for typo hints,
// sorted: the Kubernetes topology/arch/os/instance-type/hostname labels, the
// karpenter.sh labels and the karpenter.k8s.aws instance labels.
func WellKnownKeys() []string { return slices.Clone(wellKnownKeys) }

// WellKnownKey reports whether key is one of WellKnownKeys.
func WellKnownKey(key string) bool {
	_, ok := slices.BinarySearch(wellKnownKeys, key)
	return ok
}
