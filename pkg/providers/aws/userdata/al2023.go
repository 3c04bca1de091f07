package userdata

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// NodeConfigAPIVersion is the nodeadm API dovetail writes.
const NodeConfigAPIVersion = "node.eks.aws/v1alpha1"

// nodeConfig is the part of nodeadm's NodeConfig that dovetail writes and
// reads.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  *clusterDetails  `json:"cluster,omitempty"`
	Instance *instanceOptions `json:"instance,omitempty"`
	Kubelet  *kubeletOptions  `json:"kubelet,omitempty"`
}

type instanceOptions struct {
	LocalStorage *localStorageOptions `json:"localStorage,omitempty"`
}

type localStorageOptions struct {
	Strategy string `json:"strategy,omitempty"`
}

type clusterDetails struct {
	Name                 string `json:"name,omitempty"`
	APIServerEndpoint    string `json:"apiServerEndpoint,omitempty"`
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	CIDR                 string `json:"cidr,omitempty"`
}

type kubeletOptions struct {
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

func renderAL2023(in Input) (string, error) {
	var parts []mimePart
	if in.UserData != nil {
		p, err := splitUserParts(awsv1.AMIFamilyAL2023, *in.UserData)
		if err != nil {
			return "", err
		}
		parts = p
	}
	nc := nodeConfig{
		APIVersion: NodeConfigAPIVersion,
		Kind:       "NodeConfig",
		Spec: nodeConfigSpec{
			Cluster: &clusterDetails{
				Name:                 in.ClusterName,
				APIServerEndpoint:    in.ClusterEndpoint,
				CertificateAuthority: in.ClusterCA,
				CIDR:                 in.ServiceCIDR,
			},
			Kubelet: &kubeletOptions{Config: kubeletConfigMap(in.Kubelet)},
		},
	}
	if in.InstanceStorePolicy == string(awsv1.InstanceStorePolicyRAID0) {
		nc.Spec.Instance = &instanceOptions{LocalStorage: &localStorageOptions{Strategy: "RAID0"}}
	}
	if labels := nodeLabels(in.Labels); len(labels) > 0 {
		nc.Spec.Kubelet.Flags = append(nc.Spec.Kubelet.Flags, "--node-labels="+strings.Join(labels, ","))
	}
	if taints := sortedTaints(in.Taints); len(taints) > 0 {
		fs := make([]string, len(taints))
		for i, t := range taints {
			fs[i] = taintFlag(t)
		}
		nc.Spec.Kubelet.Flags = append(nc.Spec.Kubelet.Flags, "--register-with-taints="+strings.Join(fs, ","))
	}
	if len(nc.Spec.Kubelet.Config) == 0 && len(nc.Spec.Kubelet.Flags) == 0 {
		nc.Spec.Kubelet = nil
	}
	body, err := yaml.Marshal(nc)
	if err != nil {
		return "", err
	}
	parts = append(parts, mimePart{contentType: ContentTypeNodeConfig, body: string(body)})
	return writeMIME(parts), nil
}

// kubeletConfigMap is the KubeletConfiguration fragment for spec.kubelet, in
// the kubelet's own field names (maxPods, kubeReserved, ...), with the
// class's other kubelet keys (UnknownValues) as they were written.
func kubeletConfigMap(k *awsv1.KubeletConfiguration) map[string]any {
	if k == nil {
		return nil
	}
	m := map[string]any{}
	// Keys beyond the typed ones pass through as written, as the peer
	// passes its free-form kubelet configuration to nodeadm.
	for key, raw := range k.UnknownValues {
		if json.Valid([]byte(raw)) {
			m[key] = json.RawMessage(raw)
		}
	}
	if k.MaxPods != nil {
		m["maxPods"] = *k.MaxPods
	}
	if k.PodsPerCore != nil {
		m["podsPerCore"] = *k.PodsPerCore
	}
	if len(k.ClusterDNS) > 0 {
		m["clusterDNS"] = slices.Clone(k.ClusterDNS)
	}
	for name, v := range map[string]map[string]string{
		"kubeReserved": k.KubeReserved, "systemReserved": k.SystemReserved,
		"evictionHard": k.EvictionHard, "evictionSoft": k.EvictionSoft,
	} {
		if len(v) > 0 {
			m[name] = maps.Clone(v)
		}
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		g := map[string]string{}
		for sig, d := range k.EvictionSoftGracePeriod {
			g[sig] = durationString(d)
		}
		m["evictionSoftGracePeriod"] = g
	}
	if k.EvictionMaxPodGracePeriod != nil {
		m["evictionMaxPodGracePeriod"] = *k.EvictionMaxPodGracePeriod
	}
	if k.ImageGCHighThresholdPercent != nil {
		m["imageGCHighThresholdPercent"] = *k.ImageGCHighThresholdPercent
	}
	if k.ImageGCLowThresholdPercent != nil {
		m["imageGCLowThresholdPercent"] = *k.ImageGCLowThresholdPercent
	}
	if k.CPUCFSQuota != nil {
		m["cpuCFSQuota"] = *k.CPUCFSQuota
	}
	return m
}
