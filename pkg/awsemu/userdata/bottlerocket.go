package userdata

import (
	"errors"
	"sort"
	"strings"
)

// ParseBottlerocket reads Bottlerocket TOML settings: settings.kubernetes
// cluster-name, api-server, cluster-dns-ip, max-pods, node-labels,
// node-taints ("key" = ["value:Effect", ...]), kube-reserved,
// system-reserved, eviction-hard and eviction-soft.
func ParseBottlerocket(data string) (*Config, error) {
	root, err := parseTOML(data)
	if err != nil {
		var te *tomlError
		if errors.As(err, &te) {
			return nil, errorf(FormatBottlerocket, te.line, "%s", te.msg)
		}
		return nil, errorf(FormatBottlerocket, 0, "%v", err)
	}
	cfg := &Config{Format: FormatBottlerocket}
	settings, ok := root["settings"]
	if !ok {
		return cfg, nil
	}
	st, ok := settings.val.(tomlTable)
	if !ok {
		return nil, errorf(FormatBottlerocket, settings.line, "settings is not a table")
	}
	k8s, ok := st["kubernetes"]
	if !ok {
		return cfg, nil
	}
	kt, ok := k8s.val.(tomlTable)
	if !ok {
		return nil, errorf(FormatBottlerocket, k8s.line, "settings.kubernetes is not a table")
	}
	str := func(key string) (string, error) {
		v, ok := kt[key]
		if !ok {
			return "", nil
		}
		s, ok := v.val.(string)
		if !ok {
			return "", errorf(FormatBottlerocket, v.line, "settings.kubernetes.%s is not a string", key)
		}
		return s, nil
	}
	if cfg.ClusterName, err = str("cluster-name"); err != nil {
		return nil, err
	}
	if cfg.APIServerEndpoint, err = str("api-server"); err != nil {
		return nil, err
	}
	if v, ok := kt["cluster-dns-ip"]; ok {
		switch x := v.val.(type) {
		case string:
			cfg.ClusterDNS = []string{x}
		case []*tomlValue:
			for _, item := range x {
				s, ok := item.val.(string)
				if !ok {
					return nil, errorf(FormatBottlerocket, v.line, "settings.kubernetes.cluster-dns-ip holds a non-string")
				}
				cfg.ClusterDNS = append(cfg.ClusterDNS, s)
			}
		default:
			return nil, errorf(FormatBottlerocket, v.line, "settings.kubernetes.cluster-dns-ip is not a string or a list of strings")
		}
	}
	if v, ok := kt["max-pods"]; ok {
		n, ok := v.val.(int64)
		if !ok || n < 1 || n > 1<<20 {
			return nil, errorf(FormatBottlerocket, v.line, "settings.kubernetes.max-pods %v is not a positive integer", v.val)
		}
		m := int32(n)
		cfg.MaxPods = &m
	}
	labels, err := stringTable(kt, "node-labels")
	if err != nil {
		return nil, err
	}
	for _, k := range sortedMapKeys(labels) {
		if err := validateLabel(k, labels[k].s); err != nil {
			return nil, errorf(FormatBottlerocket, labels[k].line, "settings.kubernetes.node-labels: %v", err)
		}
		setAll(&cfg.Labels, map[string]string{k: labels[k].s})
	}
	if v, ok := kt["node-taints"]; ok {
		tt, ok := v.val.(tomlTable)
		if !ok {
			return nil, errorf(FormatBottlerocket, v.line, "settings.kubernetes.node-taints is not a table")
		}
		for _, key := range sortedMapKeys(tt) {
			tv := tt[key]
			var specs []string
			switch x := tv.val.(type) {
			case string:
				specs = []string{x}
			case []*tomlValue:
				for _, item := range x {
					s, ok := item.val.(string)
					if !ok {
						return nil, errorf(FormatBottlerocket, tv.line, "node-taints %q holds a non-string", key)
					}
					specs = append(specs, s)
				}
			default:
				return nil, errorf(FormatBottlerocket, tv.line, "node-taints %q is not a list of \"value:Effect\" strings", key)
			}
			for _, spec := range specs {
				value, effect, ok := strings.Cut(spec, ":")
				if !ok {
					value, effect = "", spec
				}
				t, err := newTaint(key, value, effect)
				if err != nil {
					return nil, errorf(FormatBottlerocket, tv.line, "settings.kubernetes.node-taints: %v", err)
				}
				cfg.addTaint(t)
			}
		}
	}
	for _, r := range []struct {
		key string
		dst *map[string]string
		pct bool
	}{
		{"kube-reserved", &cfg.KubeReserved, false},
		{"system-reserved", &cfg.SystemReserved, false},
		{"eviction-hard", &cfg.EvictionHard, true},
		{"eviction-soft", &cfg.EvictionSoft, true},
	} {
		m, err := stringTable(kt, r.key)
		if err != nil {
			return nil, err
		}
		for _, k := range sortedMapKeys(m) {
			check := checkQuantity
			if r.pct {
				check = checkThreshold
			}
			if err := check(k, m[k].s); err != nil {
				return nil, errorf(FormatBottlerocket, m[k].line, "settings.kubernetes.%s: %v", r.key, err)
			}
			setAll(r.dst, map[string]string{k: m[k].s})
		}
	}
	return cfg, nil
}

type lineString struct {
	s    string
	line int
}

// stringTable reads settings.kubernetes.KEY as a table of strings.
func stringTable(kt tomlTable, key string) (map[string]lineString, error) {
	v, ok := kt[key]
	if !ok {
		return nil, nil
	}
	t, ok := v.val.(tomlTable)
	if !ok {
		return nil, errorf(FormatBottlerocket, v.line, "settings.kubernetes.%s is not a table", key)
	}
	out := map[string]lineString{}
	for k, item := range t {
		s, ok := item.val.(string)
		if !ok {
			return nil, errorf(FormatBottlerocket, item.line, "settings.kubernetes.%s.%q is not a string", key, k)
		}
		out[k] = lineString{s: s, line: item.line}
	}
	return out, nil
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
