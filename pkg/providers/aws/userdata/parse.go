package userdata

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// Node is what a node's bootstrap learns from its user data.
type Node struct {
	ClusterName       string
	APIServerEndpoint string
	// ClusterCA is the base64-encoded PEM certificate authority.
	ClusterCA string
	// Labels and Taints are what the kubelet registers the Node with.
	Labels map[string]string
	Taints []corev1.Taint
	// MaxPods is the kubelet's pod limit when the user data sets one.
	MaxPods *int32
}

// Parse reads user data of the given family the way the node's bootstrap
// agent does (nodeadm for AL2023, the settings API for Bottlerocket,
// bootstrap.sh for AL2). Custom user data is opaque: Parse returns an empty
// Node. Labels and taints given more than once accumulate; for labels the
// last value wins.
func Parse(family, data string) (*Node, error) {
	n := &Node{Labels: map[string]string{}}
	var err error
	switch family {
	case awsv1.AMIFamilyAL2023:
		err = parseAL2023(n, data)
	case awsv1.AMIFamilyBottlerocket:
		err = parseBottlerocket(n, data)
	case awsv1.AMIFamilyAL2:
		err = parseAL2(n, data)
	case awsv1.AMIFamilyCustom:
	default:
		return nil, fmt.Errorf("userdata: unsupported AMI family %q", family)
	}
	if err != nil {
		return nil, err
	}
	n.Taints = sortedTaints(n.Taints)
	return n, nil
}

func parseAL2023(n *Node, data string) error {
	const family = awsv1.AMIFamilyAL2023
	parts, err := splitUserParts(family, data)
	if err != nil {
		return err
	}
	for i, p := range parts {
		if !strings.HasPrefix(p.contentType, ContentTypeNodeConfig) {
			continue
		}
		var nc nodeConfig
		if err := yaml.Unmarshal([]byte(p.body), &nc); err != nil {
			return newError(family, "NodeConfig in MIME part %d: %v", i+1, err)
		}
		if c := nc.Spec.Cluster; c != nil {
			setIf(&n.ClusterName, c.Name)
			setIf(&n.APIServerEndpoint, c.APIServerEndpoint)
			setIf(&n.ClusterCA, c.CertificateAuthority)
		}
		k := nc.Spec.Kubelet
		if k == nil {
			continue
		}
		if v, ok := k.Config["maxPods"]; ok {
			mp, err := toInt32(v)
			if err != nil {
				return newError(family, "kubelet.config.maxPods in MIME part %d: %v", i+1, err)
			}
			n.MaxPods = &mp
		}
		for _, f := range k.Flags {
			if err := applyKubeletFlag(n, f); err != nil {
				return newError(family, "kubelet flag in MIME part %d: %v", i+1, err)
			}
		}
	}
	return nil
}

func setIf(dst *string, v string) {
	if v != "" {
		*dst = v
	}
}

func toInt32(v any) (int32, error) {
	switch x := v.(type) {
	case float64:
		if x != float64(int32(x)) {
			return 0, fmt.Errorf("%v is not a 32-bit integer", x)
		}
		return int32(x), nil
	case int64:
		if x != int64(int32(x)) {
			return 0, fmt.Errorf("%v is not a 32-bit integer", x)
		}
		return int32(x), nil
	}
	return 0, fmt.Errorf("%v is not a number", v)
}

// applyKubeletFlag applies one "--flag=value" kubelet flag that carries
// labels, taints or max pods; other flags are ignored.
func applyKubeletFlag(n *Node, f string) error {
	name, value, ok := strings.Cut(f, "=")
	if !ok {
		return nil
	}
	switch name {
	case "--node-labels":
		if value == "" {
			return nil
		}
		for _, kv := range strings.Split(value, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("--node-labels entry %q is not key=value", kv)
			}
			n.Labels[k] = v
		}
	case "--register-with-taints":
		if value == "" {
			return nil
		}
		for _, s := range strings.Split(value, ",") {
			t, err := parseTaintFlag(s)
			if err != nil {
				return fmt.Errorf("--register-with-taints: %w", err)
			}
			n.Taints = append(n.Taints, t)
		}
	case "--max-pods":
		mp, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return fmt.Errorf("--max-pods: %w", err)
		}
		m := int32(mp)
		n.MaxPods = &m
	}
	return nil
}

func parseBottlerocket(n *Node, data string) error {
	const family = awsv1.AMIFamilyBottlerocket
	var doc struct {
		Settings struct {
			Kubernetes map[string]any `toml:"kubernetes"`
		} `toml:"settings"`
	}
	if _, err := toml.Decode(data, &doc); err != nil {
		return newError(family, "TOML: %v", err)
	}
	k := doc.Settings.Kubernetes
	str := func(key string) (string, error) {
		v, ok := k[key]
		if !ok {
			return "", nil
		}
		s, ok := v.(string)
		if !ok {
			return "", newError(family, "settings.kubernetes.%s must be a string", key)
		}
		return s, nil
	}
	var err error
	if n.ClusterName, err = str("cluster-name"); err != nil {
		return err
	}
	if n.APIServerEndpoint, err = str("api-server"); err != nil {
		return err
	}
	if n.ClusterCA, err = str("cluster-certificate"); err != nil {
		return err
	}
	if v, ok := k["max-pods"]; ok {
		mp, err := toInt32(v)
		if err != nil {
			return newError(family, "settings.kubernetes.max-pods: %v", err)
		}
		n.MaxPods = &mp
	}
	if v, ok := k["node-labels"]; ok {
		t, ok := v.(map[string]any)
		if !ok {
			return newError(family, "settings.kubernetes.node-labels must be a table")
		}
		for key, val := range t {
			s, ok := val.(string)
			if !ok {
				return newError(family, "settings.kubernetes.node-labels.%q must be a string", key)
			}
			n.Labels[key] = s
		}
	}
	if v, ok := k["node-taints"]; ok {
		t, ok := v.(map[string]any)
		if !ok {
			return newError(family, "settings.kubernetes.node-taints must be a table")
		}
		for key, val := range t {
			var entries []any
			switch x := val.(type) {
			case string:
				entries = []any{x}
			case []any:
				entries = x
			default:
				return newError(family, "settings.kubernetes.node-taints.%q must be a string or an array of strings", key)
			}
			for _, e := range entries {
				s, ok := e.(string)
				if !ok {
					return newError(family, "settings.kubernetes.node-taints.%q must hold strings", key)
				}
				value, effect, ok := strings.Cut(s, ":")
				if !ok {
					return newError(family, "settings.kubernetes.node-taints.%q entry %q is not value:Effect", key, s)
				}
				if err := validEffect(corev1.TaintEffect(effect)); err != nil {
					return newError(family, "settings.kubernetes.node-taints.%q: %v", key, err)
				}
				n.Taints = append(n.Taints, corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)})
			}
		}
	}
	return nil
}

func parseAL2(n *Node, data string) error {
	const family = awsv1.AMIFamilyAL2
	parts, err := splitUserParts(family, data)
	if err != nil {
		return err
	}
	for i, p := range parts {
		script := strings.ReplaceAll(normalizeNewlines(p.body), "\\\n", " ")
		for _, line := range strings.Split(script, "\n") {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), BootstrapScript)
			if !ok {
				continue
			}
			words, err := shellWords(rest)
			if err != nil {
				return newError(family, "bootstrap command in MIME part %d: %v", i+1, err)
			}
			if err := applyBootstrapArgs(n, words); err != nil {
				return newError(family, "bootstrap command in MIME part %d: %v", i+1, err)
			}
		}
	}
	return nil
}

func applyBootstrapArgs(n *Node, words []string) error {
	for j := 0; j < len(words); j++ {
		w := words[j]
		if !strings.HasPrefix(w, "--") {
			if n.ClusterName == "" {
				n.ClusterName = w
			}
			continue
		}
		if j+1 >= len(words) {
			break
		}
		switch w {
		case "--apiserver-endpoint":
			n.APIServerEndpoint = words[j+1]
		case "--b64-cluster-ca":
			n.ClusterCA = words[j+1]
		case "--kubelet-extra-args":
			flags, err := shellWords(words[j+1])
			if err != nil {
				return fmt.Errorf("--kubelet-extra-args: %w", err)
			}
			for _, f := range flags {
				if err := applyKubeletFlag(n, f); err != nil {
					return err
				}
			}
		}
		j++
	}
	return nil
}

// shellWords splits s into shell words (quotes removed).
func shellWords(s string) ([]string, error) {
	var out []string
	for {
		s = strings.TrimLeft(s, " \t\n")
		if s == "" {
			return out, nil
		}
		w, rest, err := shellUnquote(s)
		if err != nil {
			return nil, err
		}
		if rest == s {
			// A lone line continuation: skip it.
			s = s[1:]
			continue
		}
		out = append(out, w)
		s = rest
	}
}
