package userdata

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

func ptr[T any](v T) *T { return &v }

func baseInput(family string) Input {
	return Input{
		Family:          family,
		ClusterName:     "prod-east",
		ClusterEndpoint: "https://ABCDEF.gr7.us-east-1.eks.amazonaws.com",
		ClusterCA:       "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
		ServiceCIDR:     "10.100.0.0/16",
		Labels: map[string]string{
			"karpenter.sh/nodepool":            "default",
			"team":                             "b",
			"node.kubernetes.io/instance-type": "m5.large",
			"example.kubernetes.io/forbidden":  "x", // the kubelet may not set it
		},
		Taints: []corev1.Taint{
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "startup", Effect: corev1.TaintEffectNoSchedule},
		},
	}
}

// wantLabels is what the kubelet should register: the input labels minus
// the one outside its allowed domains (listed by hand, not via KubeletMaySet).
func wantLabels(in Input) map[string]string {
	w := maps.Clone(in.Labels)
	delete(w, "example.kubernetes.io/forbidden")
	return w
}

func TestRenderParseRoundTrip(t *testing.T) {
	for _, family := range []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyAL2} {
		t.Run(family, func(t *testing.T) {
			in := baseInput(family)
			in.Kubelet = &awsv1.KubeletConfiguration{MaxPods: ptr(int32(42))}
			data, err := Render(in)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			n, err := Parse(family, data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			if n.ClusterName != in.ClusterName || n.APIServerEndpoint != in.ClusterEndpoint || n.ClusterCA != in.ClusterCA {
				t.Errorf("cluster = %q %q %q, want %q %q %q", n.ClusterName, n.APIServerEndpoint, n.ClusterCA, in.ClusterName, in.ClusterEndpoint, in.ClusterCA)
			}
			if !reflect.DeepEqual(n.Labels, wantLabels(in)) {
				t.Errorf("labels = %v, want %v", n.Labels, wantLabels(in))
			}
			wantTaints := []corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
				{Key: "startup", Effect: corev1.TaintEffectNoSchedule},
			}
			if !reflect.DeepEqual(n.Taints, wantTaints) {
				t.Errorf("taints = %v, want %v", n.Taints, wantTaints)
			}
			if n.MaxPods == nil || *n.MaxPods != 42 {
				t.Errorf("maxPods = %v, want 42", n.MaxPods)
			}
			again, err := Render(in)
			if err != nil || again != data {
				t.Errorf("Render is not deterministic")
			}
		})
	}
}

func TestAL2023KeepsUserParts(t *testing.T) {
	userScript := "#!/bin/bash\necho hello from the user\n"
	userNodeConfig := `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s
    flags:
    - --node-labels=from-user=yes
`
	mimeDoc := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n" +
		"--BOUNDARY\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\n\n" + userScript +
		"--BOUNDARY\nContent-Type: application/node.eks.aws\n\n" + userNodeConfig +
		"--BOUNDARY--\n"
	tests := []struct {
		name      string
		userData  string
		wantParts []string // bodies that must appear, in order, before ours
		extra     map[string]string
	}{
		{name: "mime", userData: mimeDoc, wantParts: []string{strings.TrimSuffix(userScript, "\n"), strings.TrimSuffix(userNodeConfig, "\n")}, extra: map[string]string{"from-user": "yes"}},
		{name: "shell script", userData: userScript, wantParts: []string{userScript}},
		{name: "bare NodeConfig", userData: userNodeConfig, wantParts: []string{userNodeConfig}, extra: map[string]string{"from-user": "yes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput(awsv1.AMIFamilyAL2023)
			in.UserData = ptr(tc.userData)
			data, err := Render(in)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			parts, err := parseMIME(awsv1.AMIFamilyAL2023, data)
			if err != nil {
				t.Fatalf("output is not MIME: %v", err)
			}
			if len(parts) != len(tc.wantParts)+1 {
				t.Fatalf("got %d parts, want %d", len(parts), len(tc.wantParts)+1)
			}
			for i, want := range tc.wantParts {
				if parts[i].body != want {
					t.Errorf("part %d = %q, want the user's %q", i, parts[i].body, want)
				}
			}
			last := parts[len(parts)-1]
			if last.contentType != ContentTypeNodeConfig || !strings.Contains(last.body, "name: prod-east") {
				t.Errorf("last part is not dovetail's NodeConfig: %q %q", last.contentType, last.body)
			}
			n, err := Parse(awsv1.AMIFamilyAL2023, data)
			if err != nil {
				t.Fatal(err)
			}
			want := wantLabels(in)
			maps.Copy(want, tc.extra)
			if !reflect.DeepEqual(n.Labels, want) {
				t.Errorf("labels = %v, want %v", n.Labels, want)
			}
		})
	}
}

func TestAL2023KubeletConfig(t *testing.T) {
	in := baseInput(awsv1.AMIFamilyAL2023)
	in.Kubelet = &awsv1.KubeletConfiguration{
		MaxPods:                 ptr(int32(110)),
		ClusterDNS:              []string{"10.100.0.10"},
		KubeReserved:            map[string]string{"cpu": "100m", "memory": "500Mi"},
		SystemReserved:          map[string]string{"memory": "100Mi"},
		EvictionHard:            map[string]string{"memory.available": "5%"},
		EvictionSoft:            map[string]string{"memory.available": "10%"},
		EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 90e9}},
		CPUCFSQuota:             ptr(false),
	}
	in.InstanceStorePolicy = "RAID0"
	data, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"maxPods: 110", "- 10.100.0.10", "cpu: 100m", "memory: 500Mi", "memory.available: 5%",
		"memory.available: 10%", "memory.available: 1m30s", "cpuCFSQuota: false", "cidr: 10.100.0.0/16",
		"apiVersion: " + NodeConfigAPIVersion, "strategy: RAID0",
	} {
		if !strings.Contains(data, want) {
			t.Errorf("user data lacks %q:\n%s", want, data)
		}
	}
}

func TestBottlerocketMergesUserTOML(t *testing.T) {
	in := baseInput(awsv1.AMIFamilyBottlerocket)
	in.UserData = ptr(`[settings.host-containers.admin]
enabled = true

[settings.kubernetes]
cluster-name = "wrong"
allowed-unsafe-sysctls = ["net.core.somaxconn"]

[settings.kubernetes.node-labels]
"from-user" = "yes"
`)
	in.Kubelet = &awsv1.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "80m"}, ClusterDNS: []string{"10.0.0.10", "10.0.0.11"}}
	data, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`[settings.host-containers.admin]`, `enabled = true`, `allowed-unsafe-sysctls = ["net.core.somaxconn"]`, `cluster-name = "prod-east"`, `cpu = "80m"`, `cluster-dns-ip = ["10.0.0.10", "10.0.0.11"]`} {
		if !strings.Contains(data, want) {
			t.Errorf("user data lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(data, `"wrong"`) {
		t.Errorf("the user's cluster-name survived:\n%s", data)
	}
	n, err := Parse(awsv1.AMIFamilyBottlerocket, data)
	if err != nil {
		t.Fatal(err)
	}
	want := wantLabels(in)
	want["from-user"] = "yes"
	if !reflect.DeepEqual(n.Labels, want) {
		t.Errorf("labels = %v, want %v", n.Labels, want)
	}
}

func TestCustomPassesThrough(t *testing.T) {
	in := baseInput(awsv1.AMIFamilyCustom)
	in.UserData = ptr("anything at all\x00")
	got, err := Render(in)
	if err != nil || got != *in.UserData {
		t.Fatalf("Render = %q, %v; want the user data unchanged", got, err)
	}
	in.UserData = nil
	if got, err := Render(in); err != nil || got != "" {
		t.Fatalf("Render(no user data) = %q, %v; want empty", got, err)
	}
}

func TestRenderErrors(t *testing.T) {
	tests := []struct {
		name     string
		family   string
		userData string
		wantIn   string
	}{
		{name: "AL2023 plain text", family: awsv1.AMIFamilyAL2023, userData: "just words", wantIn: "expected a MIME multipart document"},
		{name: "AL2023 MIME without boundary", family: awsv1.AMIFamilyAL2023, userData: "Content-Type: multipart/mixed\n\nbody", wantIn: "no boundary"},
		{name: "AL2 plain text", family: awsv1.AMIFamilyAL2, userData: "x=1", wantIn: "expected a MIME multipart document"},
		{name: "Bottlerocket bad TOML", family: awsv1.AMIFamilyBottlerocket, userData: "[settings", wantIn: "TOML"},
		{name: "Bottlerocket settings not a table", family: awsv1.AMIFamilyBottlerocket, userData: "settings = 1", wantIn: `"settings" must be a table`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := baseInput(tc.family)
			in.UserData = ptr(tc.userData)
			_, err := Render(in)
			var ue *Error
			if !errors.As(err, &ue) || !errors.Is(err, ErrInvalidUserData) {
				t.Fatalf("Render error = %v, want *Error", err)
			}
			if !strings.Contains(err.Error(), tc.wantIn) || !strings.HasPrefix(err.Error(), "spec.userData: ") {
				t.Errorf("error %q lacks %q or the field path", err, tc.wantIn)
			}
			if fe := ue.FieldError(); fe.Field != "spec.userData" {
				t.Errorf("FieldError().Field = %q", fe.Field)
			}
		})
	}
	if _, err := Render(Input{Family: "Windows2022"}); err == nil {
		t.Error("Render(Windows2022) succeeded; want an unsupported-family error")
	}
}

func TestKubeletMaySet(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"team", true},
		{"karpenter.sh/nodepool", true},
		{"karpenter.k8s.aws/instance-family", true},
		{"node.kubernetes.io/instance-type", true},
		{"node.kubernetes.io/anything", true},
		{"kubelet.kubernetes.io/x", true},
		{"topology.kubernetes.io/zone", true},
		{"kubernetes.io/arch", true},
		{"kubernetes.io/role", false},
		{"node-role.kubernetes.io/worker", false},
		{"example.k8s.io/x", false},
		{"notkubernetes.io/x", true},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			if got := KubeletMaySet(tc.key); got != tc.want {
				t.Errorf("KubeletMaySet(%q) = %v, want %v", tc.key, got, tc.want)
			}
		})
	}
}

// TestAL2023KubeletFreeFormKeys: kubelet keys beyond the typed ones reach
// nodeadm's kubelet configuration with their values as written (strings,
// objects, lists, numbers), beside the typed ones, as the peer passes them.
func TestAL2023KubeletFreeFormKeys(t *testing.T) {
	var k awsv1.KubeletConfiguration
	if err := json.Unmarshal([]byte(`{"maxPods": 42, "cpuManagerPolicy": "static",
		"featureGates": {"InPlacePodVerticalScaling": true}, "allowedUnsafeSysctls": ["net.core.somaxconn"],
		"shutdownGracePeriod": "30s", "serializeImagePulls": false, "registryPullQPS": 10}`), &k); err != nil {
		t.Fatal(err)
	}
	in := baseInput(awsv1.AMIFamilyAL2023)
	in.Kubelet = &k
	data, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := splitUserParts(awsv1.AMIFamilyAL2023, data)
	if err != nil {
		t.Fatal(err)
	}
	var config map[string]any
	for _, p := range parts {
		if strings.HasPrefix(p.contentType, ContentTypeNodeConfig) {
			var nc struct {
				Spec struct {
					Kubelet struct {
						Config map[string]any `json:"config"`
					} `json:"kubelet"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal([]byte(p.body), &nc); err != nil {
				t.Fatal(err)
			}
			config = nc.Spec.Kubelet.Config
		}
	}
	want := map[string]any{
		"maxPods": float64(42), "cpuManagerPolicy": "static",
		"featureGates": map[string]any{"InPlacePodVerticalScaling": true}, "allowedUnsafeSysctls": []any{"net.core.somaxconn"},
		"shutdownGracePeriod": "30s", "serializeImagePulls": false, "registryPullQPS": float64(10),
	}
	for key, w := range want {
		if !reflect.DeepEqual(config[key], w) {
			t.Errorf("kubelet config %s = %#v, want %#v\n%s", key, config[key], w, data)
		}
	}
	// The peer passes them on AL2023 only: Bottlerocket's settings have no
	// place for them.
	in.Family = awsv1.AMIFamilyBottlerocket
	br, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(br, "cpuManagerPolicy") || strings.Contains(br, "cpu-manager-policy") {
		t.Errorf("Bottlerocket user data carries a free-form kubelet key:\n%s", br)
	}
}
