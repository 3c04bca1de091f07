package catalog

import (
	"errors"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	mi = int64(1) << 20
	gi = int64(1) << 30
)

func ptr32(v int32) *int32 { return &v }

// want is an expected allocatable (and optionally capacity), in plain units.
type want struct {
	cpuMilli, memBytes, pods, ephBytes int64
	// capMemMiB, when not zero, is the expected memory capacity.
	capMemMiB int64
}

// TestKubeletSettingsAllocatable checks the allocatable of three types under
// kubelet settings against figures worked out by hand from the formula in
// the package documentation (the arithmetic is written out in each case).
//
//	m5.large:   2 vCPU,  8192 MiB, amd64, 3 ENIs × 10 IPv4 -> 29 pods,
//	            memory capacity 8192 − ceil(8192×0.075)=615 -> 7577 MiB,
//	            kube-reserved cpu 60+10 = 70m
//	m7g.large:  2 vCPU,  8192 MiB, arm64 -> 8128 − ceil(8128×0.075)=610 -> 7518 MiB
//	m5.4xlarge: 16 vCPU, 65536 MiB, 8 ENIs × 30 IPv4 -> 234 pods,
//	            65536 − ceil(4915.2)=4916 -> 60620 MiB,
//	            kube-reserved cpu 60+10+2×5+12×2.5 = 110m
//	m5d.large:  as m5.large with 75 GB of instance storage
func TestKubeletSettingsAllocatable(t *testing.T) {
	c := Builtin()
	const (
		m5Cap   = 7577 // MiB
		m5Kube  = 11*29 + 255
		twenty  = 20 * gi
		evict10 = 2 * gi // 10% of 20Gi
	)
	tests := []struct {
		name string
		typ  string
		s    KubeletSettings
		want want
	}{
		{"defaults", "m5.large", KubeletSettings{},
			want{2000 - 70, (m5Cap - m5Kube - 100) * mi, 29, twenty - gi - evict10, m5Cap}},
		{"maxPods raises pods, AL2023 keeps ENI-sized kube-reserved memory", "m5.large",
			KubeletSettings{MaxPods: ptr32(110)},
			want{1930, (m5Cap - m5Kube - 100) * mi, 110, 17 * gi, 0}},
		{"maxPods on Bottlerocket sizes kube-reserved memory by maxPods", "m5.large",
			KubeletSettings{MaxPods: ptr32(110), AMIFamily: AMIFamilyBottlerocket},
			want{1930, (m5Cap - (11*110 + 255) - 100) * mi, 110, 17 * gi, 0}},
		{"podsPerCore caps pods at podsPerCore x vCPU", "m5.large",
			KubeletSettings{PodsPerCore: ptr32(4)},
			want{1930, (m5Cap - m5Kube - 100) * mi, 4 * 2, 17 * gi, 0}},
		{"podsPerCore above the ENI limit changes nothing", "m5.large",
			KubeletSettings{PodsPerCore: ptr32(100)},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, 17 * gi, 0}},
		{"Bottlerocket ignores podsPerCore", "m5.large",
			KubeletSettings{PodsPerCore: ptr32(4), AMIFamily: AMIFamilyBottlerocket},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, 17 * gi, 0}},
		{"podsPerCore and maxPods: the smaller wins", "m5.4xlarge",
			KubeletSettings{PodsPerCore: ptr32(10), MaxPods: ptr32(200)},
			want{16000 - 110, (60620 - (11*234 + 255) - 100) * mi, 10 * 16, 17 * gi, 60620}},
		{"kubeReserved replaces the defaults per resource", "m5.large",
			KubeletSettings{KubeReserved: map[string]string{"cpu": "500m", "memory": "1Gi"}},
			want{2000 - 500, (m5Cap - 1024 - 100) * mi, 29, twenty - gi - evict10, 0}},
		{"kubeReserved ephemeral-storage", "m5.large",
			KubeletSettings{KubeReserved: map[string]string{"ephemeral-storage": "3Gi"}},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, twenty - 3*gi - evict10, 0}},
		{"systemReserved adds to the defaults", "m5.large",
			KubeletSettings{SystemReserved: map[string]string{"cpu": "100m", "memory": "200Mi", "ephemeral-storage": "1Gi"}},
			want{1930 - 100, (m5Cap - m5Kube - 100 - 200) * mi, 29, twenty - gi - evict10 - gi, 0}},
		{"evictionHard memory percentage of memory capacity", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"memory.available": "5%"}},
			// ceil(7577 MiB × 5 / 100) bytes, in integers.
			want{1930, (m5Cap-m5Kube)*mi - (m5Cap*mi*5+99)/100, 29, 17 * gi, 0}},
		{"evictionHard nodefs percentage of ephemeral capacity", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "15%"}},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, twenty - gi - twenty*15/100, 0}},
		{"evictionHard absolute values", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"memory.available": "500Mi", "nodefs.available": "5Gi"}},
			want{1930, (m5Cap - m5Kube - 500) * mi, 29, twenty - gi - 5*gi, 0}},
		{"evictionSoft larger than evictionHard wins", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"memory.available": "500Mi"}, EvictionSoft: map[string]string{"memory.available": "1Gi"}},
			want{1930, (m5Cap - m5Kube - 1024) * mi, 29, 17 * gi, 0}},
		{"evictionHard larger than evictionSoft wins", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"memory.available": "1Gi"}, EvictionSoft: map[string]string{"memory.available": "500Mi"}},
			want{1930, (m5Cap - m5Kube - 1024) * mi, 29, 17 * gi, 0}},
		{"Bottlerocket ignores evictionSoft", "m5.large",
			KubeletSettings{AMIFamily: AMIFamilyBottlerocket, EvictionHard: map[string]string{"memory.available": "500Mi"}, EvictionSoft: map[string]string{"memory.available": "1Gi"}},
			want{1930, (m5Cap - m5Kube - 500) * mi, 29, 17 * gi, 0}},
		{"evictionHard 100% disables the threshold", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"memory.available": "100%"}},
			want{1930, (m5Cap - m5Kube) * mi, 29, 17 * gi, 0}},
		{"other eviction signals reserve nothing", "m5.large",
			KubeletSettings{EvictionHard: map[string]string{"nodefs.inodesFree": "5%", "imagefs.available": "15%"}},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, 17 * gi, 0}},
		{"larger volume", "m5.large",
			KubeletSettings{EphemeralVolumeSize: resource.NewQuantity(100*gi, resource.BinarySI)},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, 100*gi - gi - 10*gi, 0}},
		{"RAID0 puts ephemeral storage on the instance store", "m5d.large",
			KubeletSettings{InstanceStorePolicy: InstanceStorePolicyRAID0},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, 75e9 - gi - 75e9/10, 0}},
		{"RAID0 without instance store keeps the volume", "m5.large",
			KubeletSettings{InstanceStorePolicy: InstanceStorePolicyRAID0},
			want{1930, (m5Cap - m5Kube - 100) * mi, 29, 17 * gi, 0}},
		{"VM overhead 5%", "m5.large",
			KubeletSettings{VMMemoryOverheadPercent: 0.05},
			// 8192 − ceil(409.6) = 7782 MiB capacity.
			want{1930, (7782 - m5Kube - 100) * mi, 29, 17 * gi, 7782}},
		{"reserved ENIs lower pods and kube-reserved memory", "m5.large",
			KubeletSettings{ReservedENIs: 1},
			// (3−1) × (10−1) + 2 = 20 pods.
			want{1930, (m5Cap - (11*20 + 255) - 100) * mi, 20, 17 * gi, 0}},
		{"reserving every ENI leaves no pods", "m5.large",
			KubeletSettings{ReservedENIs: 3},
			want{1930, (m5Cap - 255 - 100) * mi, 0, 17 * gi, 0}},
		{"arm64 keeps 64 MiB before the VM overhead", "m7g.large", KubeletSettings{},
			want{1930, (7518 - m5Kube - 100) * mi, 29, 17 * gi, 7518}},
		{"16 vCPUs", "m5.4xlarge", KubeletSettings{},
			want{15890, (60620 - (11*234 + 255) - 100) * mi, 234, 17 * gi, 60620}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := tt.s.Validate(); len(errs) > 0 {
				t.Fatalf("settings invalid: %v", errs)
			}
			ty := mustType(t, c, tt.typ)
			got := allocatable(ty, tt.s)
			check := func(name corev1.ResourceName, q resource.Quantity, w int64, milli bool) {
				t.Helper()
				v := q.Value()
				if milli {
					v = q.MilliValue()
				}
				if v != w {
					t.Errorf("allocatable %s = %s (%d), want %d", name, q.String(), v, w)
				}
			}
			check(corev1.ResourceCPU, got[corev1.ResourceCPU], tt.want.cpuMilli, true)
			check(corev1.ResourceMemory, got[corev1.ResourceMemory], tt.want.memBytes, false)
			check(corev1.ResourcePods, got[corev1.ResourcePods], tt.want.pods, false)
			check(corev1.ResourceEphemeralStorage, got[corev1.ResourceEphemeralStorage], tt.want.ephBytes, false)
			if tt.want.capMemMiB != 0 {
				capacity := ty.Capacity(tt.s)
				check("capacity memory", capacity[corev1.ResourceMemory], tt.want.capMemMiB*mi, false)
			}
			// Capacity and Overhead agree with the allocatable computed above.
			o := ty.Overhead(tt.s)
			capacity := ty.Capacity(tt.s)
			mem := capacity[corev1.ResourceMemory]
			for _, part := range []corev1.ResourceList{o.KubeReserved, o.SystemReserved, o.EvictionThreshold} {
				if q, ok := part[corev1.ResourceMemory]; ok {
					mem.Sub(q)
				}
			}
			if mem.Cmp(got[corev1.ResourceMemory]) != 0 && mem.Sign() > 0 {
				t.Errorf("capacity − overhead = %s, allocatable %s", mem.String(), got.Memory().String())
			}
		})
	}
}

func TestCapacityExtendedResources(t *testing.T) {
	c := Builtin()
	tests := []struct {
		typ  string
		want map[corev1.ResourceName]int64
	}{
		{"p5.48xlarge", map[corev1.ResourceName]int64{ResourceNVIDIAGPU: 8, ResourceEFA: 32, ResourceAWSPodENI: 120}},
		{"g4ad.xlarge", map[corev1.ResourceName]int64{ResourceAMDGPU: 1}},
		{"inf2.xlarge", map[corev1.ResourceName]int64{ResourceAWSNeuron: 1, ResourceAWSNeuronCore: 2}},
		{"trn1.32xlarge", map[corev1.ResourceName]int64{ResourceAWSNeuron: 16, ResourceAWSNeuronCore: 32, ResourceEFA: 8}},
		{"g6f.large", map[corev1.ResourceName]int64{}}, // a fractional GPU: no whole nvidia.com/gpu
		{"dl2q.24xlarge", map[corev1.ResourceName]int64{ResourceEFA: 1}},
		{"m5.large", map[corev1.ResourceName]int64{ResourceAWSPodENI: 9}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			ty := mustType(t, c, tt.typ)
			capacity := ty.Capacity(KubeletSettings{})
			for name, q := range capacity {
				switch name {
				case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage:
					continue
				case ResourceAWSPodENI:
					// Security groups for pods: the branch ENIs of the data set.
					if !ty.TrunkingCompatible || q.Value() != int64(ty.BranchENIs) {
						t.Errorf("pod-eni %s, trunking %v branch ENIs %d", q.String(), ty.TrunkingCompatible, ty.BranchENIs)
					}
					continue
				}
				if _, ok := tt.want[name]; !ok {
					t.Errorf("unexpected %s=%s", name, q.String())
				}
			}
			for name, n := range tt.want {
				if q, ok := capacity[name]; !ok || q.Value() != n {
					t.Errorf("%s = %v, want %d", name, capacity[name], n)
				}
			}
		})
	}
}

func TestKubeletSettingsValidate(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name string
		s    KubeletSettings
		want []*field.Error // Type and Field only
	}{
		{"zero value is valid", KubeletSettings{}, nil},
		{"all fields valid", KubeletSettings{
			MaxPods: ptr32(110), PodsPerCore: ptr32(10), AMIFamily: AMIFamilyAL2,
			KubeReserved: map[string]string{"cpu": "100m", "memory": "1Gi", "ephemeral-storage": "1Gi", "pid": "1000"},
			EvictionHard: map[string]string{"memory.available": "5%", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "2.5%", "pid.available": "10%"},
			EvictionSoft: map[string]string{"memory.available": "1Gi"}, InstanceStorePolicy: InstanceStorePolicyRAID0,
			EphemeralVolumeSize: resource.NewQuantity(50*gi, resource.BinarySI), VMMemoryOverheadPercent: 0.1, ReservedENIs: 1,
		}, nil},
		{"negative maxPods", KubeletSettings{MaxPods: ptr32(-1)},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.maxPods"}}},
		{"negative podsPerCore", KubeletSettings{PodsPerCore: ptr32(-3)},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.podsPerCore"}}},
		{"bad kubeReserved quantity", KubeletSettings{KubeReserved: map[string]string{"memory": "1 GiB"}},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.kubeReserved[memory]"}}},
		{"negative systemReserved", KubeletSettings{SystemReserved: map[string]string{"cpu": "-1"}},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.systemReserved[cpu]"}}},
		{"unknown reserved resource", KubeletSettings{SystemReserved: map[string]string{"gpu": "1"}},
			[]*field.Error{{Type: field.ErrorTypeNotSupported, Field: "spec.kubelet.systemReserved"}}},
		{"percentage over 100", KubeletSettings{EvictionHard: map[string]string{"memory.available": "101%"}},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.evictionHard[memory.available]"}}},
		{"percentage not a number", KubeletSettings{EvictionSoft: map[string]string{"nodefs.available": "ten%"}},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.evictionSoft[nodefs.available]"}}},
		{"bad eviction quantity", KubeletSettings{EvictionHard: map[string]string{"nodefs.available": "lots"}},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.evictionHard[nodefs.available]"}}},
		{"unknown eviction signal", KubeletSettings{EvictionHard: map[string]string{"memory.free": "1Gi"}},
			[]*field.Error{{Type: field.ErrorTypeNotSupported, Field: "spec.kubelet.evictionHard"}}},
		{"unknown AMI family", KubeletSettings{AMIFamily: "Ubuntu"},
			[]*field.Error{{Type: field.ErrorTypeNotSupported, Field: "spec.amiFamily"}}},
		{"Windows", KubeletSettings{AMIFamily: "Windows2022"},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.amiFamily"}}},
		{"zero volume", KubeletSettings{EphemeralVolumeSize: resource.NewQuantity(0, resource.BinarySI)},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "spec.blockDeviceMappings.ebs.volumeSize"}}},
		{"unknown instance store policy", KubeletSettings{InstanceStorePolicy: "RAID1"},
			[]*field.Error{{Type: field.ErrorTypeNotSupported, Field: "spec.instanceStorePolicy"}}},
		{"VM overhead of 1", KubeletSettings{VMMemoryOverheadPercent: 1},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "vmMemoryOverheadPercent"}}},
		{"VM overhead NaN", KubeletSettings{VMMemoryOverheadPercent: nan},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "vmMemoryOverheadPercent"}}},
		{"negative reserved ENIs", KubeletSettings{ReservedENIs: -1},
			[]*field.Error{{Type: field.ErrorTypeInvalid, Field: "reservedENIs"}}},
		{"every error is reported, in a stable order", KubeletSettings{
			MaxPods:      ptr32(-1),
			KubeReserved: map[string]string{"memory": "x", "cpu": "y"},
			EvictionHard: map[string]string{"nodefs.available": "200%"},
		}, []*field.Error{
			{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.maxPods"},
			{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.kubeReserved[cpu]"},
			{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.kubeReserved[memory]"},
			{Type: field.ErrorTypeInvalid, Field: "spec.kubelet.evictionHard[nodefs.available]"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.s.Validate()
			if len(got) != len(tt.want) {
				t.Fatalf("Validate() = %v, want %d errors", got, len(tt.want))
			}
			for i := range got {
				if got[i].Type != tt.want[i].Type || got[i].Field != tt.want[i].Field {
					t.Errorf("error %d = %s %s, want %s %s", i, got[i].Type, got[i].Field, tt.want[i].Type, tt.want[i].Field)
				}
			}
			if agg := got.ToAggregate(); agg != nil {
				var fe *field.Error
				if !errors.As(agg.Errors()[0], &fe) {
					t.Errorf("aggregate does not hold *field.Error")
				}
			}
		})
	}
}

// Invalid entries are ignored by the computations, never a panic.
func TestInvalidSettingsAreIgnored(t *testing.T) {
	ty := mustType(t, Builtin(), "m5.large")
	bad := KubeletSettings{
		KubeReserved: map[string]string{"memory": "garbage"},
		EvictionHard: map[string]string{"memory.available": "999%"},
		AMIFamily:    "Nope", VMMemoryOverheadPercent: -3, MaxPods: ptr32(-5), ReservedENIs: -2,
	}
	if got, def := allocatable(ty, bad), allocatable(ty, KubeletSettings{}); !equalLists(got, def) {
		t.Errorf("invalid settings changed allocatable: %v vs %v", got, def)
	}
}

// FuzzKubeletSettings feeds arbitrary strings and numbers through Validate
// and the computations: no input may panic, and every unparsable quantity must
// be reported against its own field.
func FuzzKubeletSettings(f *testing.F) {
	f.Add("memory", "1Gi", "memory.available", "5%", int32(110), int32(0), 0.075, "20Gi")
	f.Add("cpu", "100m", "nodefs.available", "100%", int32(-1), int32(4), 0.0, "0")
	f.Add("ephemeral-storage", "1e3", "nodefs.available", "-5%", int32(0), int32(-1), 0.99, "-1Gi")
	f.Add("pid", "NaN", "memory.available", "NaN%", int32(1<<30), int32(1<<30), math.Inf(1), "1Ei")
	f.Add("memory", "9223372036854775807Ei", "memory.available", "1e400%", int32(2), int32(1), -0.5, "1e1000")
	f.Add("", "", "", "%", int32(0), int32(0), 0.5, "")
	f.Fuzz(func(t *testing.T, resKey, resVal, sigKey, sigVal string, maxPods, podsPerCore int32, vmOverhead float64, volume string) {
		s := KubeletSettings{
			MaxPods: &maxPods, PodsPerCore: &podsPerCore,
			KubeReserved: map[string]string{resKey: resVal}, SystemReserved: map[string]string{resKey: resVal},
			EvictionHard: map[string]string{sigKey: sigVal}, EvictionSoft: map[string]string{sigKey: sigVal},
			VMMemoryOverheadPercent: vmOverhead,
		}
		if q, err := resource.ParseQuantity(volume); err == nil {
			s.EphemeralVolumeSize = &q
		}
		errs := s.Validate()
		for _, e := range errs {
			if !strings.HasPrefix(e.Field, "spec.") && e.Field != "vmMemoryOverheadPercent" && e.Field != "reservedENIs" {
				t.Errorf("error without a field path: %v", e)
			}
		}
		if q, err := resource.ParseQuantity(resVal); err != nil && (resKey == "cpu" || resKey == "memory") {
			p := "spec.kubelet.kubeReserved[" + resKey + "]"
			if !hasField(errs, p) {
				t.Errorf("unparsable %q not reported at %s: %v", resVal, p, errs)
			}
		} else if err == nil && q.Sign() < 0 && resKey == "memory" && !hasField(errs, "spec.kubelet.systemReserved[memory]") {
			t.Errorf("negative %q not reported: %v", resVal, errs)
		}
		for _, name := range []string{"m5.large", "m7g.large", "p5.48xlarge"} {
			ty, _ := Builtin().Type(name)
			capacity := ty.Capacity(s)
			if q := capacity[corev1.ResourceCPU]; q.Value() != int64(ty.VCPU) {
				t.Fatalf("%s: cpu capacity %s", name, q.String())
			}
			if len(errs) == 0 {
				if p := capacity[corev1.ResourcePods]; p.Value() < 0 {
					t.Fatalf("%s: negative pods %s", name, p.String())
				}
			}
			_ = ty.Overhead(s)
			_ = allocatable(ty, s)
		}
	})
}

func hasField(errs field.ErrorList, path string) bool {
	for _, e := range errs {
		if e.Field == path {
			return true
		}
	}
	return false
}

func equalLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}
