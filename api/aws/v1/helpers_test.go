package v1_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

func TestAMIFamily(t *testing.T) {
	tests := []struct {
		name   string
		terms  []awsv1.AMISelectorTerm
		family *string
		want   string
	}{
		{name: "alias al2023", terms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, want: awsv1.AMIFamilyAL2023},
		{name: "alias al2", terms: []awsv1.AMISelectorTerm{{Alias: "al2@v20240807"}}, want: awsv1.AMIFamilyAL2},
		{name: "alias bottlerocket", terms: []awsv1.AMISelectorTerm{{Alias: "bottlerocket@v1.20.0"}}, want: awsv1.AMIFamilyBottlerocket},
		{name: "alias windows2025", terms: []awsv1.AMISelectorTerm{{Alias: "windows2025@latest"}}, want: awsv1.AMIFamilyWindows2025},
		{name: "alias wins over amiFamily", terms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, family: ptr.To("AL2"), want: awsv1.AMIFamilyAL2023},
		{name: "tags with amiFamily", terms: []awsv1.AMISelectorTerm{{Tags: map[string]string{"role": "x"}}}, family: ptr.To("Custom"), want: awsv1.AMIFamilyCustom},
		{name: "unknown alias family", terms: []awsv1.AMISelectorTerm{{Alias: "ubuntu@latest"}}, want: ""},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{AMISelectorTerms: tt.terms, AMIFamily: tt.family}}
			if got := nc.AMIFamily(); got != tt.want {
				t.Errorf("AMIFamily() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAliasVersion(t *testing.T) {
	for in, want := range map[string]string{"al2023@latest": "latest", "al2@v20240807": "v20240807", "al2023": ""} {
		if got := awsv1.AliasVersion(in); got != want {
			t.Errorf("AliasVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every AMI family except Custom has an alias spelling, and that spelling
// maps back to the family.
func TestFamilyFromAliasCoversFamilies(t *testing.T) {
	for _, f := range awsv1.AMIFamilies {
		if f == awsv1.AMIFamilyCustom {
			continue
		}
		if got := awsv1.FamilyFromAlias(strings.ToLower(f) + "@latest"); got != f {
			t.Errorf("FamilyFromAlias(%q) = %q, want %q", strings.ToLower(f)+"@latest", got, f)
		}
	}
}

func TestEC2NodeClassReady(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nc := &awsv1.EC2NodeClass{}
	for i, c := range awsv1.ReadyDependents {
		nc.SetCondition(c, metav1.ConditionTrue, "Ready", "", now)
		if ready := nc.IsTrue(awsv1.ConditionTypeReady); ready != (i == len(awsv1.ReadyDependents)-1) {
			t.Fatalf("after %s: Ready=%v", c, ready)
		}
	}
	nc.SetCondition(awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, "AMINotFound", "no image", now)
	if got := nc.GetCondition(awsv1.ConditionTypeReady); got.Status != metav1.ConditionFalse || got.Reason != "AMINotFound" {
		t.Errorf("Ready = %+v, want False/AMINotFound", got)
	}
}

func TestRuntimeValidate(t *testing.T) {
	tests := []struct {
		name    string
		kubelet *awsv1.KubeletConfiguration
		want    []string
	}{
		{name: "no kubelet"},
		{name: "valid", kubelet: &awsv1.KubeletConfiguration{
			SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi"},
			EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.available": "1Gi"},
		}},
		{name: "bad values", kubelet: &awsv1.KubeletConfiguration{
			KubeReserved:            map[string]string{"cpu": "lots"},
			EvictionHard:            map[string]string{"memory.available": "150%"},
			EvictionSoft:            map[string]string{"nodefs.available": "0%", "pid.available": "-1"},
			EvictionSoftGracePeriod: map[string]metav1.Duration{"nodefs.available": {Duration: time.Minute}, "pid.available": {Duration: time.Minute}},
		}, want: []string{
			"spec.kubelet.evictionHard[memory.available]",
			"spec.kubelet.evictionSoft[nodefs.available]",
			"spec.kubelet.evictionSoft[pid.available]",
			"spec.kubelet.kubeReserved[cpu]",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
				SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}},
				SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-1"}},
				AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
				Role:                       "nodes",
				Kubelet:                    tt.kubelet,
			}}
			var got []string
			for _, e := range nc.RuntimeValidate() {
				got = append(got, e.Field)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("fields = %q, want %q", got, tt.want)
			}
		})
	}
}

func ExampleEC2NodeClass_AMIFamily() {
	nc := &awsv1.EC2NodeClass{Spec: awsv1.EC2NodeClassSpec{
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
	}}
	fmt.Println(nc.AMIFamily(), awsv1.AliasVersion(nc.Alias()))
	// Output: AL2023 latest
}

func TestKubeletDecodingIsFreeForm(t *testing.T) {
	var k awsv1.KubeletConfiguration
	in := `{"maxPods": 110, "podsPerCore": "ten", "kubeReserved": {"cpu": "100m"}, "evictionHard": ["x"],
		"evictionSoftGracePeriod": {"memory.available": "1m"}, "cpuManagerPolicy": "static", "imageGCLowThresholdPercent": 40}`
	if err := json.Unmarshal([]byte(in), &k); err != nil {
		t.Fatal(err)
	}
	if k.MaxPods == nil || *k.MaxPods != 110 || k.KubeReserved["cpu"] != "100m" || k.ImageGCLowThresholdPercent == nil || *k.ImageGCLowThresholdPercent != 40 {
		t.Errorf("typed keys not decoded: %+v", k)
	}
	if k.EvictionSoftGracePeriod["memory.available"].Duration != time.Minute {
		t.Errorf("evictionSoftGracePeriod %v", k.EvictionSoftGracePeriod)
	}
	if k.PodsPerCore != nil || k.EvictionHard != nil {
		t.Errorf("mistyped keys were set: podsPerCore %v evictionHard %v", k.PodsPerCore, k.EvictionHard)
	}
	want := map[string]string{"podsPerCore": "must be an integer", "evictionHard": "must be a map of strings"}
	if fmt.Sprint(k.TypeErrors) != fmt.Sprint(want) {
		t.Errorf("TypeErrors %v, want %v", k.TypeErrors, want)
	}
	if fmt.Sprint(k.UnknownKeys) != "[cpuManagerPolicy]" {
		t.Errorf("UnknownKeys %v", k.UnknownKeys)
	}
	if err := json.Unmarshal([]byte(`["not", "an", "object"]`), &k); err == nil {
		t.Error("a kubelet that is not an object decoded")
	}
}

// TestKubeletRoundTrip: free-form kubelet keys survive a read and a write
// (a typed client's Update), with the typed keys.
func TestKubeletRoundTrip(t *testing.T) {
	var k awsv1.KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"maxPods": 20, "cpuManagerPolicy": "static", "featureGates": {"A": true}}`), &k); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&awsv1.EC2NodeClassSpec{Kubelet: &k})
	if err != nil {
		t.Fatal(err)
	}
	var back awsv1.EC2NodeClassSpec
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	kb := back.Kubelet
	if kb == nil || kb.MaxPods == nil || *kb.MaxPods != 20 || fmt.Sprint(kb.UnknownKeys) != "[cpuManagerPolicy featureGates]" ||
		kb.UnknownValues["cpuManagerPolicy"] != `"static"` || kb.UnknownValues["featureGates"] != `{"A":true}` {
		t.Errorf("round trip of %s gave %+v", b, kb)
	}
}
