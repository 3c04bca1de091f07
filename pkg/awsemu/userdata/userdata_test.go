package userdata_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dovetail-sh/dovetail/pkg/awsemu/userdata"
)

const al2023MIME = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "node agents configured" > /etc/node-agents.done

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: local
    apiServerEndpoint: https://127.0.0.1:6443
    certificateAuthority: LS0t
    cidr: 10.100.0.0/16
  kubelet:
    config:
      maxPods: 58
      clusterDNS:
      - 10.100.0.10
      kubeReserved:
        cpu: 80m
        memory: 893Mi
        ephemeral-storage: 1Gi
      evictionHard:
        memory.available: 5%
      registerWithTaints:
      - key: dedicated
        value: gpu
        effect: NoSchedule
    flags:
    - --node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=b"
    - --register-with-taints=karpenter.sh/unregistered:NoExecute,node.cilium.io/agent-not-ready=true:NoExecute

--//--
`

const bottlerocketTOML = `[settings]
[settings.kubernetes]
api-server = 'https://127.0.0.1:6443'
cluster-name = 'local'
cluster-dns-ip = '10.100.0.10'
max-pods = 110
[settings.kubernetes.node-labels]
'karpenter.sh/capacity-type' = 'on-demand'
"karpenter.sh/nodepool" = "bottlerocket" # a comment
[settings.kubernetes.node-taints]
'karpenter.sh/unregistered' = [':NoExecute']
dedicated = [
  "gpu:NoSchedule",
  "gpu:NoExecute",
]
[settings.kubernetes.kube-reserved]
cpu = "70m"
[settings.kubernetes.eviction-hard]
"memory.available" = "10%"
`

const al2Script = `#!/bin/bash -xe
exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1
/etc/eks/bootstrap.sh 'local' --apiserver-endpoint 'https://127.0.0.1:6443' --b64-cluster-ca 'LS0t' \
--container-runtime containerd \
--dns-cluster-ip '10.100.0.10' \
--use-max-pods false \
--kubelet-extra-args '--node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=al2" --register-with-taints="karpenter.sh/unregistered=:NoExecute" --max-pods=29 --system-reserved=cpu=100m,memory=100Mi --eviction-hard=memory.available<200Mi'
`

func ptr32(n int32) *int32 { return &n }

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want userdata.Config
	}{
		{
			name: "AL2023 nodeadm in MIME",
			in:   al2023MIME,
			want: userdata.Config{
				Format: userdata.FormatNodeadm, ClusterName: "local", APIServerEndpoint: "https://127.0.0.1:6443",
				ClusterDNS: []string{"10.100.0.10"},
				Labels:     map[string]string{"karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "default", "team": "b"},
				Taints: []corev1.Taint{
					{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
					{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
					{Key: "node.cilium.io/agent-not-ready", Value: "true", Effect: corev1.TaintEffectNoExecute},
				},
				MaxPods:      ptr32(58),
				KubeReserved: map[string]string{"cpu": "80m", "memory": "893Mi", "ephemeral-storage": "1Gi"},
				EvictionHard: map[string]string{"memory.available": "5%"},
			},
		},
		{
			name: "bare NodeConfig, two documents merged",
			in: "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--node-labels=a=1\"]\n" +
				"---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 20\n    flags: [\"--node-labels=b=2\", \"--max-pods\", \"30\"]\n",
			want: userdata.Config{Format: userdata.FormatNodeadm, Labels: map[string]string{"a": "1", "b": "2"}, MaxPods: ptr32(30)},
		},
		{
			name: "Bottlerocket TOML",
			in:   bottlerocketTOML,
			want: userdata.Config{
				Format: userdata.FormatBottlerocket, ClusterName: "local", APIServerEndpoint: "https://127.0.0.1:6443",
				ClusterDNS: []string{"10.100.0.10"}, MaxPods: ptr32(110),
				Labels: map[string]string{"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "bottlerocket"},
				Taints: []corev1.Taint{
					{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
					{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
					{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
				},
				KubeReserved: map[string]string{"cpu": "70m"},
				EvictionHard: map[string]string{"memory.available": "10%"},
			},
		},
		{
			name: "Bottlerocket dotted keys and inline tables",
			in:   "settings.kubernetes.max-pods = 17\nsettings.kubernetes.node-labels = { \"x.io/y\" = \"z\" }\n",
			want: userdata.Config{Format: userdata.FormatBottlerocket, MaxPods: ptr32(17), Labels: map[string]string{"x.io/y": "z"}},
		},
		{
			name: "AL2 bootstrap.sh",
			in:   al2Script,
			want: userdata.Config{
				Format: userdata.FormatBootstrap, ClusterName: "local", APIServerEndpoint: "https://127.0.0.1:6443",
				ClusterDNS: []string{"10.100.0.10"}, MaxPods: ptr32(29),
				Labels:         map[string]string{"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "al2"},
				Taints:         []corev1.Taint{{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}},
				SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi"},
				EvictionHard:   map[string]string{"memory.available": "200Mi"},
			},
		},
		{
			name: "AL2 in MIME, --use-max-pods false without --max-pods",
			in:   "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/x-shellscript\n\n#!/bin/bash\n/etc/eks/bootstrap.sh c1 --use-max-pods false\n--B--\n",
			want: userdata.Config{Format: userdata.FormatBootstrap, ClusterName: "c1", MaxPods: ptr32(110)},
		},
		{
			name: "plain script",
			in:   "#!/bin/bash\necho hello\n",
			want: userdata.Config{Format: userdata.FormatScript},
		},
		{
			name: "nothing",
			in:   "  \n",
			want: userdata.Config{Format: userdata.FormatEmpty},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := userdata.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestParseErrorsNameFormatAndLine(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		format userdata.Format
		line   int
		substr string
	}{
		{"YAML syntax in a MIME part", strings.Replace(al2023MIME, "      maxPods: 58", "      maxPods: [58", 1), userdata.FormatNodeadm, 23, ""},
		{"bad taint effect in kubelet config", strings.Replace(al2023MIME, "effect: NoSchedule", "effect: Sometimes", 1), userdata.FormatNodeadm, 32, "Sometimes"},
		{"bad label in a flag", strings.Replace(al2023MIME, "team=b", "team=b c", 1), userdata.FormatNodeadm, 37, "team"},
		{"not a NodeConfig", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfigs\n", userdata.FormatNodeadm, 1, "NodeConfigs"},
		{"MIME without closing boundary", strings.TrimSuffix(strings.TrimSpace(al2023MIME), "--//--"), "MIME", 40, "closing boundary"},
		{"Bottlerocket max-pods a string", "[settings.kubernetes]\nmax-pods = \"many\"\n", userdata.FormatBottlerocket, 2, "max-pods"},
		{"Bottlerocket unterminated string", "[settings.kubernetes]\ncluster-name = 'local\n", userdata.FormatBottlerocket, 2, "string"},
		{"Bottlerocket bad taint", "[settings.kubernetes.node-taints]\nx = ['y:Never']\n", userdata.FormatBottlerocket, 2, "Never"},
		{"Bottlerocket duplicate table", "[settings]\n[a]\n[a]\n", userdata.FormatBottlerocket, 3, "twice"},
		{"AL2 unterminated quote", "#!/bin/bash\n\n/etc/eks/bootstrap.sh local --kubelet-extra-args '--max-pods=3\n", userdata.FormatBootstrap, 3, "quote"},
		{"AL2 bad max pods", "#!/bin/bash\n/etc/eks/bootstrap.sh local --kubelet-extra-args '--max-pods=zero'\n", userdata.FormatBootstrap, 2, "max-pods"},
		{"AL2 no cluster", "#!/bin/bash\n/etc/eks/bootstrap.sh --use-max-pods false\n", userdata.FormatBootstrap, 2, "cluster name"},
		{"unknown", "hello there", "unknown", 1, "neither"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := userdata.Parse(tc.in)
			var pe *userdata.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *userdata.Error", err)
			}
			if pe.Format != tc.format || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.substr) {
				t.Errorf("got %v (format %q line %d), want format %q line %d mentioning %q", err, pe.Format, pe.Line, tc.format, tc.line, tc.substr)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("line %d", tc.line)) {
				t.Errorf("message %q does not name the line", err)
			}
		})
	}
	_, err := userdata.Parse("hello there")
	if !errors.Is(err, userdata.ErrUnrecognized) {
		t.Errorf("unknown input: %v does not wrap ErrUnrecognized", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		al2023MIME, bottlerocketTOML, al2Script, "", "#!/bin/bash\n", "[settings.kubernetes]\nmax-pods = 3\n",
		"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {kubelet: {flags: ['--node-labels=a=b']}}\n",
		"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=x\n\n--x\n\n--x--\n",
		"a = { b = [1, 2.5, true, \"\\u00e9\", '''x\ny'''] }\n[[t]]\n[[t]]\n",
		"/etc/eks/bootstrap.sh c --kubelet-extra-args \"--register-with-taints=a=b:NoSchedule\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := userdata.Parse(in)
		if err != nil {
			var pe *userdata.Error
			if !errors.As(err, &pe) || pe.Format == "" || pe.Line < 0 {
				t.Fatalf("error %v (%T) does not name a format and line", err, err)
			}
			if n := strings.Count(in, "\n") + 1; pe.Line > n {
				t.Fatalf("error on line %d of a %d-line input: %v", pe.Line, n, err)
			}
			return
		}
		if cfg == nil || cfg.Format == "" {
			t.Fatalf("success without a format: %+v", cfg)
		}
		for _, taint := range cfg.Taints {
			switch taint.Effect {
			case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			default:
				t.Fatalf("accepted taint effect %q", taint.Effect)
			}
		}
		if cfg.MaxPods != nil && *cfg.MaxPods < 1 {
			t.Fatalf("accepted max pods %d", *cfg.MaxPods)
		}
	})
}

func ExampleParse() {
	cfg, err := userdata.Parse("[settings.kubernetes]\nmax-pods = 42\n[settings.kubernetes.node-labels]\n'karpenter.sh/nodepool' = 'default'\n")
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Format, *cfg.MaxPods, cfg.Labels)
	_, err = userdata.Parse("[settings.kubernetes]\nmax-pods = 'lots'\n")
	fmt.Println(err)
	// Output:
	// bottlerocket 42 map[karpenter.sh/nodepool:default]
	// userdata: bottlerocket: line 2: settings.kubernetes.max-pods lots is not a positive integer
}
