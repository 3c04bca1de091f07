package userdata

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// applyKubeletFlag applies one kubelet command-line flag (name without the
// dashes) to cfg. Unknown flags are ignored, as they do not change what the
// node registers with.
func applyKubeletFlag(cfg *Config, name, value string, f Format, line int) error {
	switch name {
	case "node-labels":
		labels, err := parseLabelList(value)
		if err != nil {
			return errorf(f, line, "--node-labels: %v", err)
		}
		setAll(&cfg.Labels, labels)
	case "register-with-taints":
		taints, err := parseTaintList(value)
		if err != nil {
			return errorf(f, line, "--register-with-taints: %v", err)
		}
		for _, t := range taints {
			cfg.addTaint(t)
		}
	case "max-pods":
		n, err := parseMaxPods(value)
		if err != nil {
			return errorf(f, line, "--max-pods: %v", err)
		}
		cfg.MaxPods = &n
	case "kube-reserved", "system-reserved":
		m, err := parseResourceList(value)
		if err != nil {
			return errorf(f, line, "--%s: %v", name, err)
		}
		if name == "kube-reserved" {
			setAll(&cfg.KubeReserved, m)
		} else {
			setAll(&cfg.SystemReserved, m)
		}
	case "eviction-hard", "eviction-soft":
		m, err := parseEvictionList(value)
		if err != nil {
			return errorf(f, line, "--%s: %v", name, err)
		}
		if name == "eviction-hard" {
			setAll(&cfg.EvictionHard, m)
		} else {
			setAll(&cfg.EvictionSoft, m)
		}
	case "cluster-dns":
		cfg.ClusterDNS = append(cfg.ClusterDNS, strings.Split(value, ",")...)
	}
	return nil
}

// kubeletFlagsTakingValues are the flags applyKubeletFlag reads; written
// "--flag value" they take the next word.
var kubeletFlagsTakingValues = map[string]bool{
	"node-labels": true, "register-with-taints": true, "max-pods": true, "kube-reserved": true,
	"system-reserved": true, "eviction-hard": true, "eviction-soft": true, "cluster-dns": true,
}

// word is one command-line word and the input line it is on.
type word struct {
	s    string
	line int
}

func wordsOn(ws []string, line int) []word {
	out := make([]word, len(ws))
	for i, w := range ws {
		out[i] = word{w, line}
	}
	return out
}

// applyKubeletArgs applies a list of words such as
// ["--node-labels=a=b", "--max-pods", "20"].
func applyKubeletArgs(cfg *Config, words []word, f Format) error {
	for i := 0; i < len(words); i++ {
		w := words[i].s
		if !strings.HasPrefix(w, "-") {
			continue
		}
		name := strings.TrimLeft(w, "-")
		value, hasValue := "", false
		if n, v, ok := strings.Cut(name, "="); ok {
			name, value, hasValue = n, v, true
		}
		if !kubeletFlagsTakingValues[name] {
			continue
		}
		line := words[i].line
		if !hasValue {
			if i+1 >= len(words) {
				return errorf(f, line, "--%s has no value", name)
			}
			i++
			value = words[i].s
		}
		if err := applyKubeletFlag(cfg, name, unquote(value), f, line); err != nil {
			return err
		}
	}
	return nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

func validateLabel(k, v string) error {
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
		return fmt.Errorf("label %s value %q: %s", k, v, strings.Join(errs, "; "))
	}
	return nil
}

// parseLabelList reads "k=v,k2=v2".
func parseLabelList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not key=value", item)
		}
		if err := validateLabel(k, v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func parseEffect(s string) (corev1.TaintEffect, error) {
	switch e := corev1.TaintEffect(s); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return e, nil
	}
	return "", fmt.Errorf("taint effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s)
}

func newTaint(key, value, effect string) (corev1.Taint, error) {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return corev1.Taint{}, fmt.Errorf("taint key %q: %s", key, strings.Join(errs, "; "))
	}
	if value != "" {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return corev1.Taint{}, fmt.Errorf("taint %s value %q: %s", key, value, strings.Join(errs, "; "))
		}
	}
	e, err := parseEffect(effect)
	if err != nil {
		return corev1.Taint{}, err
	}
	return corev1.Taint{Key: key, Value: value, Effect: e}, nil
}

// parseTaintList reads the kubelet's "k=v:Effect,k2:Effect" form.
func parseTaintList(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kv, effect, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("taint %q has no :Effect", item)
		}
		k, v, _ := strings.Cut(kv, "=")
		t, err := newTaint(k, v, effect)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func parseMaxPods(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%q is not a positive integer", s)
	}
	return int32(n), nil
}

func checkQuantity(name, v string) error {
	if _, err := resource.ParseQuantity(v); err != nil {
		return fmt.Errorf("%s=%q: %v", name, v, err)
	}
	return nil
}

// parseResourceList reads "cpu=100m,memory=1Gi".
func parseResourceList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not resource=quantity", item)
		}
		if err := checkQuantity(k, v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// parseEvictionList reads "memory.available<100Mi,nodefs.available<10%".
func parseEvictionList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "<")
		if !ok {
			return nil, fmt.Errorf("%q is not signal<threshold", item)
		}
		if err := checkThreshold(k, v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func checkThreshold(k, v string) error {
	if p, ok := strings.CutSuffix(v, "%"); ok {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f < 0 || f > 100 {
			return fmt.Errorf("%s=%q is not a percentage", k, v)
		}
		return nil
	}
	return checkQuantity(k, v)
}
