package catalog

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/dovetail-sh/dovetail/pkg/cloudprovider"
)

// Extended resources a type's capacity may carry.
const (
	ResourceNVIDIAGPU     corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU        corev1.ResourceName = "amd.com/gpu"
	ResourceHabanaGaudi   corev1.ResourceName = "habana.ai/gaudi"
	ResourceAWSNeuron     corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceAWSPodENI     corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
	ResourceEFA           corev1.ResourceName = "vpc.amazonaws.com/efa"
)

// AMI families that decide how allocatable is computed.
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyCustom       = "Custom"
)

// Eviction signals that reserve capacity. Other kubelet signals are accepted
// by Validate but reserve nothing the scheduler counts.
const (
	SignalMemoryAvailable = "memory.available"
	SignalNodeFSAvailable = "nodefs.available"
)

// Defaults of the allocatable computation.
const (
	// DefaultVMMemoryOverheadPercent is the share of advertised memory the
	// hypervisor and firmware keep.
	DefaultVMMemoryOverheadPercent = 0.075
	// Arm64ReservedMiB is memory arm64 (Graviton) kernels set aside for the
	// contiguous memory allocator before the VM overhead is applied.
	Arm64ReservedMiB = 64
)

// DefaultEphemeralVolumeGiB is the size of the EBS volume that backs
// ephemeral storage when the node class does not size it (AL2, AL2023,
// Custom, and Bottlerocket's data volume).
const DefaultEphemeralVolumeGiB = 20

var (
	defaultEphemeralVolume       = *resource.NewQuantity(DefaultEphemeralVolumeGiB<<30, resource.BinarySI)
	defaultKubeReservedEphemeral = resource.MustParse("1Gi")
	defaultEvictionMemory        = resource.MustParse("100Mi")
	defaultEvictionNodeFSPercent = 10.0
)

// KubeletSettings are the inputs of the allocatable computation: the
// EC2NodeClass spec.kubelet fields that matter, plus the few node-class and
// controller facts allocatable depends on. The zero value means "all
// defaults" (AL2023, ENI-limited pods, 20Gi volume, 7.5% VM overhead).
// Callers convert their API types into it and should call Validate first:
// Capacity, Overhead and InstanceTypes ignore entries Validate rejects.
type KubeletSettings struct {
	// MaxPods overrides the pod limit (spec.kubelet.maxPods).
	MaxPods *int32
	// PodsPerCore caps pods at PodsPerCore × vCPU (spec.kubelet.podsPerCore);
	// 0 means unset. Bottlerocket ignores it.
	PodsPerCore *int32
	// KubeReserved and SystemReserved map cpu, memory, ephemeral-storage
	// (and pid) to quantities; a KubeReserved entry replaces the default for
	// that resource.
	KubeReserved, SystemReserved map[string]string
	// EvictionHard and EvictionSoft map eviction signals to a quantity or a
	// percentage of the resource's capacity ("5%"). For memory.available and
	// nodefs.available the larger of the hard and soft thresholds replaces
	// the default (100Mi and 10%). Bottlerocket ignores EvictionSoft.
	EvictionHard, EvictionSoft map[string]string
	// AMIFamily is AL2, AL2023 (the default when empty), Bottlerocket or
	// Custom.
	AMIFamily string
	// EphemeralVolumeSize is the size of the EBS volume that holds ephemeral
	// storage (the root volume, or Bottlerocket's data volume), as resolved
	// from spec.blockDeviceMappings; nil means DefaultEphemeralVolumeGiB.
	EphemeralVolumeSize *resource.Quantity
	// InstanceStorePolicy "RAID0" makes types with instance storage use it
	// for ephemeral storage (spec.instanceStorePolicy).
	InstanceStorePolicy string
	// VMMemoryOverheadPercent is the fraction of memory lost to
	// virtualisation, in [0, 1); 0 means DefaultVMMemoryOverheadPercent.
	VMMemoryOverheadPercent float64
	// ReservedENIs are ENIs kept from the VPC CNI (the controller's
	// reserved-ENIs option); they lower the ENI pod limit.
	ReservedENIs int
}

// InstanceStorePolicyRAID0 is the InstanceStorePolicy that puts ephemeral
// storage on the instance store.
const InstanceStorePolicyRAID0 = "RAID0"

var (
	reservedKeys  = []string{string(corev1.ResourceCPU), string(corev1.ResourceEphemeralStorage), string(corev1.ResourceMemory), "pid"}
	evictionKeys  = []string{"imagefs.available", "imagefs.inodesFree", SignalMemoryAvailable, SignalNodeFSAvailable, "nodefs.inodesFree", "pid.available"}
	amiFamilies   = []string{AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyCustom}
	kubeletPath   = field.NewPath("spec", "kubelet")
	windowsDetail = "Windows nodes are not part of the catalog"
)

// Validate checks the settings and returns every problem, each with the field
// path it has in an EC2NodeClass (spec.kubelet.kubeReserved[memory], ...).
func (s KubeletSettings) Validate() field.ErrorList {
	var errs field.ErrorList
	if s.MaxPods != nil && *s.MaxPods < 0 {
		errs = append(errs, field.Invalid(kubeletPath.Child("maxPods"), *s.MaxPods, "must not be negative"))
	}
	if s.PodsPerCore != nil && *s.PodsPerCore < 0 {
		errs = append(errs, field.Invalid(kubeletPath.Child("podsPerCore"), *s.PodsPerCore, "must not be negative"))
	}
	for _, m := range []struct {
		name string
		v    map[string]string
	}{{"kubeReserved", s.KubeReserved}, {"systemReserved", s.SystemReserved}} {
		for _, k := range sortedKeys(m.v) {
			p := kubeletPath.Child(m.name).Key(k)
			if !slices.Contains(reservedKeys, k) {
				errs = append(errs, field.NotSupported(kubeletPath.Child(m.name), k, reservedKeys))
				continue
			}
			if _, err := parseNonNegative(m.v[k]); err != nil {
				errs = append(errs, field.Invalid(p, m.v[k], err.Error()))
			}
		}
	}
	for _, m := range []struct {
		name string
		v    map[string]string
	}{{"evictionHard", s.EvictionHard}, {"evictionSoft", s.EvictionSoft}} {
		for _, k := range sortedKeys(m.v) {
			if !slices.Contains(evictionKeys, k) {
				errs = append(errs, field.NotSupported(kubeletPath.Child(m.name), k, evictionKeys))
				continue
			}
			if _, err := parseSignal(m.v[k]); err != nil {
				errs = append(errs, field.Invalid(kubeletPath.Child(m.name).Key(k), m.v[k], err.Error()))
			}
		}
	}
	switch {
	case s.AMIFamily == "" || slices.Contains(amiFamilies, s.AMIFamily):
	case strings.HasPrefix(s.AMIFamily, "Windows"):
		errs = append(errs, field.Invalid(field.NewPath("spec", "amiFamily"), s.AMIFamily, windowsDetail))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("spec", "amiFamily"), s.AMIFamily, amiFamilies))
	}
	if v := s.EphemeralVolumeSize; v != nil && v.Sign() <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "blockDeviceMappings").Child("ebs", "volumeSize"), v.String(), "the volume holding ephemeral storage must have a positive size"))
	}
	if s.InstanceStorePolicy != "" && s.InstanceStorePolicy != InstanceStorePolicyRAID0 {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "instanceStorePolicy"), s.InstanceStorePolicy, []string{InstanceStorePolicyRAID0}))
	}
	if v := s.VMMemoryOverheadPercent; !(v >= 0 && v < 1) {
		errs = append(errs, field.Invalid(field.NewPath("vmMemoryOverheadPercent"), v, "must be at least 0 and below 1"))
	}
	if s.ReservedENIs < 0 {
		errs = append(errs, field.Invalid(field.NewPath("reservedENIs"), s.ReservedENIs, "must not be negative"))
	}
	return errs
}

func parseNonNegative(v string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return q, fmt.Errorf("not a Kubernetes quantity (such as 500m, 100Mi or 1Gi)")
	}
	if q.Sign() < 0 {
		return q, fmt.Errorf("must not be negative")
	}
	return q, nil
}

// signal is a parsed eviction threshold: a quantity, or a percentage of the
// resource's capacity.
type signal struct {
	percent   float64
	isPercent bool
	quantity  resource.Quantity
}

func parseSignal(v string) (signal, error) {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
			return signal{}, fmt.Errorf("percentage must be a number from 0 to 100")
		}
		if f == 100 {
			// The kubelet reads 100% as "threshold disabled".
			f = 0
		}
		return signal{percent: f, isPercent: true}, nil
	}
	q, err := parseNonNegative(v)
	if err != nil {
		return signal{}, fmt.Errorf("want a quantity or a percentage: %w", err)
	}
	return signal{quantity: q}, nil
}

// amount resolves the threshold against a capacity: percentages are taken of
// the capacity in bytes and rounded up.
func (s signal) amount(capacity resource.Quantity) resource.Quantity {
	if !s.isPercent {
		return s.quantity
	}
	return *resource.NewQuantity(int64(math.Ceil(capacity.AsApproximateFloat64()/100*s.percent)), resource.DecimalSI)
}

// resolved is KubeletSettings parsed once, so that computing many types does
// not parse the same strings again.
type resolved struct {
	maxPods                   *int64
	podsPerCore               int64
	kubeReserved, sysReserved corev1.ResourceList
	evictionSignals           []map[string]signal // memory.available / nodefs.available only
	volume                    resource.Quantity
	raid0                     bool
	vmOverhead                float64
	reservedENIs              int
	// AMI-family behaviour (every Linux family sizes pods from ENIs).
	eniLimitedMemoryOverhead, podsPerCoreEnabled bool
}

func (s KubeletSettings) resolve() *resolved {
	r := &resolved{
		volume:                   defaultEphemeralVolume,
		raid0:                    s.InstanceStorePolicy == InstanceStorePolicyRAID0,
		vmOverhead:               DefaultVMMemoryOverheadPercent,
		reservedENIs:             max(s.ReservedENIs, 0),
		eniLimitedMemoryOverhead: true,
		podsPerCoreEnabled:       true,
	}
	if s.MaxPods != nil && *s.MaxPods >= 0 {
		v := int64(*s.MaxPods)
		r.maxPods = &v
	}
	if s.PodsPerCore != nil && *s.PodsPerCore > 0 {
		r.podsPerCore = int64(*s.PodsPerCore)
	}
	r.kubeReserved = parseReserved(s.KubeReserved)
	r.sysReserved = parseReserved(s.SystemReserved)
	if v := s.EphemeralVolumeSize; v != nil && v.Sign() > 0 {
		r.volume = *v
	}
	if v := s.VMMemoryOverheadPercent; v > 0 && v < 1 {
		r.vmOverhead = v
	}
	evictionSoft := true
	if s.AMIFamily == AMIFamilyBottlerocket {
		// Bottlerocket sizes kube-reserved memory from its actual pod limit,
		// and its settings API has neither podsPerCore nor evictionSoft.
		r.eniLimitedMemoryOverhead = false
		r.podsPerCoreEnabled = false
		evictionSoft = false
	}
	signalMaps := []map[string]string{s.EvictionHard}
	if evictionSoft {
		signalMaps = append(signalMaps, s.EvictionSoft)
	}
	for _, m := range signalMaps {
		if m == nil {
			continue
		}
		parsed := map[string]signal{}
		for _, k := range []string{SignalMemoryAvailable, SignalNodeFSAvailable} {
			if v, ok := m[k]; ok {
				if sig, err := parseSignal(v); err == nil {
					parsed[k] = sig
				}
			}
		}
		r.evictionSignals = append(r.evictionSignals, parsed)
	}
	return r
}

func parseReserved(m map[string]string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k, v := range m {
		switch corev1.ResourceName(k) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage:
			if q, err := parseNonNegative(v); err == nil {
				out[corev1.ResourceName(k)] = q
			}
		}
	}
	return out
}

// Capacity is what a node of the type reports as capacity: cpu (vCPUs),
// memory (advertised memory less Arm64ReservedMiB on arm64, less the VM
// overhead rounded up to a whole MiB), pods, ephemeral-storage and the
// extended resources the type has (nvidia.com/gpu, amd.com/gpu,
// aws.amazon.com/neuron, aws.amazon.com/neuroncore, vpc.amazonaws.com/pod-eni,
// vpc.amazonaws.com/efa). Extended resources with a count of zero are left
// out.
func (t *Type) Capacity(s KubeletSettings) corev1.ResourceList {
	return t.capacity(s.resolve())
}

// Overhead is what a node of the type keeps back from its capacity:
// kube-reserved, system-reserved and the eviction thresholds.
func (t *Type) Overhead(s KubeletSettings) cloudprovider.Overhead {
	r := s.resolve()
	return t.overhead(r, t.capacity(r), nil)
}

func (t *Type) capacity(r *resolved) corev1.ResourceList {
	c := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(t.VCPU), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(t.memoryCapacityMiB(r.vmOverhead)*mebi, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(t.pods(r), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: t.ephemeralStorage(r),
	}
	add := func(name corev1.ResourceName, n int) {
		if n > 0 {
			c[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
		}
	}
	if g := t.GPU; g != nil {
		switch g.Manufacturer {
		case "NVIDIA":
			add(ResourceNVIDIAGPU, g.Count)
		case "AMD":
			add(ResourceAMDGPU, g.Count)
		case "Habana":
			add(ResourceHabanaGaudi, g.Count)
		}
	}
	if a := t.Accelerator; a != nil && a.Kind == AcceleratorNeuron {
		add(ResourceAWSNeuron, a.Count)
		add(ResourceAWSNeuronCore, a.Count*a.CoresPerDevice)
	}
	if t.TrunkingCompatible {
		add(ResourceAWSPodENI, t.BranchENIs)
	}
	add(ResourceEFA, t.EFAInterfaces)
	return c
}

const mebi = 1 << 20

// memoryCapacityMiB applies the arm64 reservation and the VM overhead. The
// overhead is computed in floating point and rounded up exactly as the AWS
// provider does, so that results agree to the MiB.
func (t *Type) memoryCapacityMiB(vmOverhead float64) int64 {
	mib := t.MemoryMiB
	if t.Arch == "arm64" {
		mib -= Arm64ReservedMiB
	}
	overhead := int64(math.Ceil(float64(mib*mebi) * vmOverhead / 1024 / 1024))
	return max(mib-overhead, 0)
}

// eniLimitedPods is the VPC CNI pod limit after reserved ENIs.
func (t *Type) eniLimitedPods(reservedENIs int) int64 {
	enis := t.MaxENIs - reservedENIs
	if enis <= 0 {
		return 0
	}
	return int64(enis*(t.IPv4PerENI-1) + 2)
}

func (t *Type) pods(r *resolved) int64 {
	n := t.eniLimitedPods(r.reservedENIs)
	if r.maxPods != nil {
		n = *r.maxPods
	}
	if r.podsPerCore > 0 && r.podsPerCoreEnabled {
		n = min(n, r.podsPerCore*int64(t.VCPU))
	}
	return n
}

func (t *Type) ephemeralStorage(r *resolved) resource.Quantity {
	if r.raid0 && t.InstanceStorageGB > 0 {
		return *resource.NewQuantity(int64(t.InstanceStorageGB)*1_000_000_000, resource.DecimalSI)
	}
	return r.volume
}

// kubeReservedCPUMilli is the default kube-reserved cpu: 6% of the first
// core, 1% of the second, 0.5% of the third and fourth and 0.25% of every
// further core, in whole millicores (the last part rounded down).
func kubeReservedCPUMilli(vcpu int) int64 {
	c := int64(vcpu)
	m := 60*min(c, 1) + 10*min(max(c-1, 0), 1) + 5*min(max(c-2, 0), 2)
	return m + (max(c-4, 0)*1000*25)/10000
}

// sharedOverhead holds the parts of the overhead that are the same for every
// type under one set of settings, so that InstanceTypes builds them once.
type sharedOverhead struct {
	systemReserved, eviction corev1.ResourceList // eviction nil when it varies by type
}

func (r *resolved) shared(anyType *Type) *sharedOverhead {
	sh := &sharedOverhead{systemReserved: r.systemReserved()}
	if r.evictionVariesByType() {
		return sh
	}
	sh.eviction = anyType.eviction(r, anyType.capacity(r))
	return sh
}

// evictionVariesByType reports whether the eviction thresholds depend on the
// type: memory thresholds given in percent, or ephemeral storage on the
// instance store.
func (r *resolved) evictionVariesByType() bool {
	if r.raid0 {
		return true
	}
	for _, m := range r.evictionSignals {
		if m[SignalMemoryAvailable].isPercent {
			return true
		}
	}
	return false
}

func (r *resolved) systemReserved() corev1.ResourceList {
	sys := make(corev1.ResourceList, len(r.sysReserved))
	for k, v := range r.sysReserved {
		sys[k] = v
	}
	return sys
}

func (t *Type) eviction(r *resolved, capacity corev1.ResourceList) corev1.ResourceList {
	storageCap := capacity[corev1.ResourceEphemeralStorage]
	eviction := make(corev1.ResourceList, 2)
	eviction[corev1.ResourceMemory] = r.evictionThreshold(SignalMemoryAvailable, capacity[corev1.ResourceMemory], defaultEvictionMemory)
	eviction[corev1.ResourceEphemeralStorage] = r.evictionThreshold(SignalNodeFSAvailable, storageCap,
		signal{percent: defaultEvictionNodeFSPercent, isPercent: true}.amount(storageCap))
	return eviction
}

// overhead computes the overhead of the type; parts in shared (when not nil)
// are used as they are.
func (t *Type) overhead(r *resolved, capacity corev1.ResourceList, shared *sharedOverhead) cloudprovider.Overhead {
	podsForMemory := capacity.Pods().Value()
	if r.eniLimitedMemoryOverhead {
		// AL2, AL2023 and Custom size kube-reserved memory from the ENI pod
		// limit even when maxPods or podsPerCore lower the actual limit.
		podsForMemory = t.eniLimitedPods(r.reservedENIs)
	}
	kube := make(corev1.ResourceList, 3+len(r.kubeReserved))
	kube[corev1.ResourceCPU] = *resource.NewMilliQuantity(kubeReservedCPUMilli(t.VCPU), resource.DecimalSI)
	kube[corev1.ResourceMemory] = *resource.NewQuantity((11*podsForMemory+255)*mebi, resource.BinarySI)
	kube[corev1.ResourceEphemeralStorage] = defaultKubeReservedEphemeral
	for k, v := range r.kubeReserved {
		kube[k] = v
	}
	o := cloudprovider.Overhead{KubeReserved: kube}
	if shared != nil {
		o.SystemReserved, o.EvictionThreshold = shared.systemReserved, shared.eviction
	} else {
		o.SystemReserved = r.systemReserved()
	}
	if o.EvictionThreshold == nil {
		o.EvictionThreshold = t.eviction(r, capacity)
	}
	return o
}

// evictionThreshold is the largest threshold the hard and soft eviction
// settings give for a signal, or def when neither sets it.
func (r *resolved) evictionThreshold(sig string, capacity, def resource.Quantity) resource.Quantity {
	var best resource.Quantity
	found := false
	for _, m := range r.evictionSignals {
		v, ok := m[sig]
		if !ok {
			continue
		}
		if amt := v.amount(capacity); !found || amt.Cmp(best) > 0 {
			best, found = amt, true
		}
	}
	if !found {
		return def
	}
	return best
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
