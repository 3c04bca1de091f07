package userdata

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// nodeConfig is the part of nodeadm's NodeConfig (node.eks.aws) that
// decides what the kubelet registers with.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name              string `json:"name"`
			APIServerEndpoint string `json:"apiServerEndpoint"`
		} `json:"cluster"`
		Kubelet struct {
			Config kubeletConfig `json:"config"`
			Flags  []string      `json:"flags"`
		} `json:"kubelet"`
	} `json:"spec"`
}

// kubeletConfig is the part of a KubeletConfiguration the node booter uses.
type kubeletConfig struct {
	MaxPods            *int64            `json:"maxPods"`
	ClusterDNS         []string          `json:"clusterDNS"`
	KubeReserved       map[string]string `json:"kubeReserved"`
	SystemReserved     map[string]string `json:"systemReserved"`
	EvictionHard       map[string]string `json:"evictionHard"`
	EvictionSoft       map[string]string `json:"evictionSoft"`
	RegisterWithTaints []struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Effect string `json:"effect"`
	} `json:"registerWithTaints"`
}

var yamlLineRe = regexp.MustCompile(`line (\d+)`)

// parseNodeConfig merges every NodeConfig document of text into cfg.
// offset is the number of input lines before text.
func parseNodeConfig(cfg *Config, text string, offset int) error {
	lines := splitLines(text)
	start := 0
	for i := 0; i <= len(lines); i++ {
		if i < len(lines) && strings.TrimSpace(lines[i]) != "---" {
			continue
		}
		doc := strings.Join(lines[start:i], "\n")
		if strings.TrimSpace(doc) != "" {
			if err := parseNodeConfigDoc(cfg, doc, offset+start); err != nil {
				return err
			}
		}
		start = i + 1
	}
	return nil
}

func parseNodeConfigDoc(cfg *Config, doc string, offset int) error {
	first := offset + 1
	for i, l := range splitLines(doc) {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			first = offset + i + 1
			break
		}
	}
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		line := first
		if m := yamlLineRe.FindStringSubmatch(err.Error()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > 0 {
				// The YAML parser may point one past the end of the input.
				line = offset + min(n, len(splitLines(doc)))
			}
		}
		return errorf(FormatNodeadm, line, "%s", strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
	}
	var nc nodeConfig
	if err := json.Unmarshal(j, &nc); err != nil {
		return errorf(FormatNodeadm, first, "NodeConfig: %v", err)
	}
	if !strings.HasPrefix(nc.APIVersion, "node.eks.aws/") || nc.Kind != "NodeConfig" {
		return errorf(FormatNodeadm, first, "a document of kind %q, apiVersion %q is not a node.eks.aws NodeConfig", nc.Kind, nc.APIVersion)
	}
	if n := nc.Spec.Cluster.Name; n != "" {
		cfg.ClusterName = n
	}
	if s := nc.Spec.Cluster.APIServerEndpoint; s != "" {
		cfg.APIServerEndpoint = s
	}
	kc := nc.Spec.Kubelet.Config
	lineOf := func(key string) int { return keyLine(doc, key, offset, first) }
	if kc.MaxPods != nil {
		if *kc.MaxPods < 1 || *kc.MaxPods > 1<<20 {
			return errorf(FormatNodeadm, lineOf("maxPods"), "kubelet config maxPods %d is not a positive pod count", *kc.MaxPods)
		}
		n := int32(*kc.MaxPods)
		cfg.MaxPods = &n
	}
	if len(kc.ClusterDNS) > 0 {
		cfg.ClusterDNS = append([]string(nil), kc.ClusterDNS...)
	}
	for _, r := range []struct {
		key string
		src map[string]string
		dst *map[string]string
		pct bool
	}{
		{"kubeReserved", kc.KubeReserved, &cfg.KubeReserved, false},
		{"systemReserved", kc.SystemReserved, &cfg.SystemReserved, false},
		{"evictionHard", kc.EvictionHard, &cfg.EvictionHard, true},
		{"evictionSoft", kc.EvictionSoft, &cfg.EvictionSoft, true},
	} {
		for k, v := range r.src {
			check := checkQuantity
			if r.pct {
				check = checkThreshold
			}
			if err := check(k, v); err != nil {
				return errorf(FormatNodeadm, lineOf(r.key), "kubelet config %s: %v", r.key, err)
			}
		}
		setAll(r.dst, r.src)
	}
	for _, t := range kc.RegisterWithTaints {
		taint, err := newTaint(t.Key, t.Value, t.Effect)
		if err != nil {
			return errorf(FormatNodeadm, lineOf("registerWithTaints"), "kubelet config registerWithTaints: %v", err)
		}
		cfg.addTaint(taint)
	}
	// Each entry is one or more words of the kubelet's command line; a flag
	// may take its value from the next entry.
	var words []word
	for _, flag := range nc.Spec.Kubelet.Flags {
		line := keyLine(doc, flag, offset, first)
		ws, err := shellWords(flag)
		if err != nil {
			return errorf(FormatNodeadm, line, "kubelet flag %q: %v", flag, err)
		}
		words = append(words, wordsOn(ws, line)...)
	}
	return applyKubeletArgs(cfg, words, FormatNodeadm)
}

// keyLine finds the input line of the first occurrence of s in doc (for
// error messages), or def.
func keyLine(doc, s string, offset, def int) int {
	for i, l := range splitLines(doc) {
		if strings.Contains(l, s) {
			return offset + i + 1
		}
	}
	return def
}
