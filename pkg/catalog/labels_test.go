package catalog

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestLabelsOfKnownTypes(t *testing.T) {
	c := Builtin()
	tests := []struct {
		typ    string
		want   map[string]string
		absent []string
	}{
		{"m5.large", map[string]string{
			LabelInstanceType: "m5.large", LabelArch: "amd64", LabelOS: "linux",
			LabelInstanceCategory: "m", LabelInstanceFamily: "m5", LabelInstanceGeneration: "5", LabelInstanceSize: "large",
			LabelInstanceCPU: "2", LabelInstanceCPUManufacturer: "intel", LabelInstanceCPUSustainedClockSpeedMhz: "3100",
			LabelInstanceMemory: "8192", LabelInstanceNetworkBandwidth: "750", LabelInstanceEBSBandwidth: "4750",
			LabelInstanceHypervisor: "nitro", LabelInstanceEncryptionInTransitSupported: "false",
			LabelInstanceCapabilityFlex: "false", LabelInstanceTenancy: "default",
		}, []string{LabelInstanceGPUName, LabelInstanceGPUCount, LabelInstanceAcceleratorName, LabelInstanceLocalNVMe}},
		{"p5.48xlarge", map[string]string{
			LabelInstanceGPUName: "h100", LabelInstanceGPUManufacturer: "nvidia", LabelInstanceGPUCount: "8",
			LabelInstanceGPUMemory: "81920", LabelInstanceLocalNVMe: "30400", LabelInstanceCPUManufacturer: "amd",
			LabelInstanceEncryptionInTransitSupported: "true",
		}, nil},
		{"g4ad.xlarge", map[string]string{LabelInstanceGPUName: "radeon-pro-v520", LabelInstanceGPUManufacturer: "amd", LabelInstanceGPUCount: "1"}, nil},
		{"g7e.2xlarge", map[string]string{LabelInstanceGPUName: "rtx-pro-server-6000"}, nil},
		{"g6f.large", map[string]string{LabelInstanceGPUName: "l4", LabelInstanceGPUCount: "0"}, nil},
		{"inf2.xlarge", map[string]string{LabelInstanceAcceleratorName: "inferentia2", LabelInstanceAcceleratorManufacturer: "aws", LabelInstanceAcceleratorCount: "1", LabelInstanceCategory: "inf"}, nil},
		{"trn1.2xlarge", map[string]string{LabelInstanceAcceleratorName: "trainium", LabelInstanceAcceleratorManufacturer: "aws", LabelInstanceCategory: "trn"}, nil},
		{"dl2q.24xlarge", map[string]string{LabelInstanceAcceleratorName: "qualcomm-ai100", LabelInstanceAcceleratorManufacturer: "qualcomm", LabelInstanceAcceleratorCount: "8"}, nil},
		{"m7g.large", map[string]string{LabelArch: "arm64", LabelInstanceCPUManufacturer: "aws"}, nil},
		{"m5.metal", map[string]string{LabelInstanceHypervisor: "", LabelInstanceSize: "metal"}, nil},
		{"m5d.large", map[string]string{LabelInstanceLocalNVMe: "75"}, nil},
		{"c7i-flex.large", map[string]string{LabelInstanceFamily: "c7i-flex", LabelInstanceCapabilityFlex: "true"}, nil},
		{"m1.small", map[string]string{LabelInstanceCPUSustainedClockSpeedMhz: "0", LabelInstanceHypervisor: "xen"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			got := mustType(t, c, tt.typ).Labels()
			for k, v := range tt.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %q (present %v), want %q", k, g, ok, v)
				}
			}
			for _, k := range tt.absent {
				if v, ok := got[k]; ok {
					t.Errorf("%s = %q, want absent", k, v)
				}
			}
		})
	}
}

// Label rules that hold for every type.
func TestLabelsOfEveryType(t *testing.T) {
	for _, ty := range Builtin().Types() {
		l := ty.Labels()
		for k, v := range l {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				t.Errorf("%s: key %q: %v", ty.Name, k, errs)
			}
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Errorf("%s: %s=%q: %v", ty.Name, k, v, errs)
			}
		}
		wantEq := map[string]string{
			LabelInstanceType: ty.Name, LabelArch: ty.Arch, LabelOS: "linux", LabelInstanceFamily: ty.Family,
			LabelInstanceSize: ty.Size, LabelInstanceCPU: strconv.Itoa(ty.VCPU),
			LabelInstanceMemory: strconv.FormatInt(ty.MemoryMiB, 10), LabelInstanceGeneration: strconv.Itoa(ty.Generation),
		}
		for k, v := range wantEq {
			if l[k] != v {
				t.Errorf("%s: %s=%q, want %q", ty.Name, k, l[k], v)
			}
		}
		if m := l[LabelInstanceCPUManufacturer]; !slices.Contains([]string{"intel", "amd", "aws"}, m) {
			t.Errorf("%s: cpu manufacturer %q", ty.Name, m)
		}
		if h := l[LabelInstanceHypervisor]; (h == "") != ty.BareMetal || !slices.Contains([]string{"nitro", "xen", ""}, h) {
			t.Errorf("%s: hypervisor %q, bare metal %v", ty.Name, h, ty.BareMetal)
		}
		if _, ok := l[LabelInstanceGPUName]; ok != (ty.GPU != nil) {
			t.Errorf("%s: gpu label present %v, GPU %+v", ty.Name, ok, ty.GPU)
		}
		if _, ok := l[LabelInstanceAcceleratorName]; ok != (ty.Accelerator != nil) {
			t.Errorf("%s: accelerator label present %v", ty.Name, ok)
		}
		if _, ok := l[LabelInstanceEBSBandwidth]; ok != (ty.EBSOptimizedSupport == "default" && ty.EBSMaximumMbps > 0) {
			t.Errorf("%s: ebs-bandwidth present %v with support %q", ty.Name, ok, ty.EBSOptimizedSupport)
		}
		for _, k := range []string{LabelInstanceGPUName, LabelInstanceGPUManufacturer, LabelInstanceAcceleratorName} {
			if v := l[k]; v != strings.ToLower(v) || strings.Contains(v, " ") {
				t.Errorf("%s: %s=%q not lower-case-with-dashes", ty.Name, k, v)
			}
		}
	}
}

func TestLabelsReturnsACopy(t *testing.T) {
	ty := mustType(t, Builtin(), "m5.large")
	l := ty.Labels()
	before := maps.Clone(l)
	l[LabelArch] = "s390x"
	delete(l, LabelOS)
	if got := ty.Labels(); !maps.Equal(got, before) {
		t.Errorf("Labels changed after mutating a returned map: %v", got)
	}
	// A Type built by hand (not from a catalog) computes its labels too.
	own := *ty
	own.labels = nil
	if got := own.Labels(); !maps.Equal(got, before) {
		t.Errorf("hand-built type labels differ: %v", got)
	}
}
