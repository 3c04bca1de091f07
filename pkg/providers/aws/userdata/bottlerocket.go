package userdata

import (
	"bytes"
	"maps"

	"github.com/BurntSushi/toml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

func renderBottlerocket(in Input) (string, error) {
	doc := map[string]any{}
	if in.UserData != nil {
		if _, err := toml.Decode(*in.UserData, &doc); err != nil {
			return "", newError(awsv1.AMIFamilyBottlerocket, "TOML: %v", err)
		}
	}
	settings, err := table(doc, "settings")
	if err != nil {
		return "", err
	}
	k8s, err := table(settings, "kubernetes")
	if err != nil {
		return "", err
	}
	k8s["cluster-name"] = in.ClusterName
	k8s["api-server"] = in.ClusterEndpoint
	k8s["cluster-certificate"] = in.ClusterCA

	labels, err := table(k8s, "node-labels")
	if err != nil {
		return "", err
	}
	for k, v := range in.Labels {
		if KubeletMaySet(k) {
			labels[k] = v
		}
	}
	if len(labels) == 0 {
		delete(k8s, "node-labels")
	}
	taints, err := table(k8s, "node-taints")
	if err != nil {
		return "", err
	}
	// Bottlerocket keys taints by key; each holds "value:Effect" entries.
	ours := map[string][]any{}
	for _, t := range sortedTaints(in.Taints) {
		ours[t.Key] = append(ours[t.Key], t.Value+":"+string(t.Effect))
	}
	for k, vs := range ours {
		taints[k] = vs
	}
	if len(taints) == 0 {
		delete(k8s, "node-taints")
	}
	if kc := in.Kubelet; kc != nil {
		if kc.MaxPods != nil {
			k8s["max-pods"] = int64(*kc.MaxPods)
		}
		switch len(kc.ClusterDNS) {
		case 0:
		case 1:
			k8s["cluster-dns-ip"] = kc.ClusterDNS[0]
		default:
			ips := make([]any, len(kc.ClusterDNS))
			for i, ip := range kc.ClusterDNS {
				ips[i] = ip
			}
			k8s["cluster-dns-ip"] = ips
		}
		for name, m := range map[string]map[string]string{
			"kube-reserved": kc.KubeReserved, "system-reserved": kc.SystemReserved, "eviction-hard": kc.EvictionHard,
		} {
			if len(m) > 0 {
				t := map[string]any{}
				for k, v := range m {
					t[k] = v
				}
				k8s[name] = t
			}
		}
		if kc.ImageGCHighThresholdPercent != nil {
			k8s["image-gc-high-threshold-percent"] = int64(*kc.ImageGCHighThresholdPercent)
		}
		if kc.ImageGCLowThresholdPercent != nil {
			k8s["image-gc-low-threshold-percent"] = int64(*kc.ImageGCLowThresholdPercent)
		}
		if kc.CPUCFSQuota != nil {
			k8s["cpu-cfs-quota-enforced"] = *kc.CPUCFSQuota
		}
	}
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(doc); err != nil {
		return "", newError(awsv1.AMIFamilyBottlerocket, "encoding TOML: %v", err)
	}
	return buf.String(), nil
}

// table returns parent[key] as a table, creating it when absent; a key
// holding something else is an error naming its dotted path.
func table(parent map[string]any, key string) (map[string]any, error) {
	v, ok := parent[key]
	if !ok {
		t := map[string]any{}
		parent[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, newError(awsv1.AMIFamilyBottlerocket, "%q must be a table", key)
	}
	// Copy so the caller's decoded document is never aliased by ours.
	c := maps.Clone(t)
	parent[key] = c
	return c, nil
}
