package userdata

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
)

// BootstrapScript is the EKS AL2 bootstrap script the AL2 user data calls.
const BootstrapScript = "/etc/eks/bootstrap.sh"

func renderAL2(in Input) (string, error) {
	var parts []mimePart
	if in.UserData != nil {
		p, err := splitUserParts(awsv1.AMIFamilyAL2, *in.UserData)
		if err != nil {
			return "", err
		}
		parts = p
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log | logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "%s %s --apiserver-endpoint %s --b64-cluster-ca %s",
		BootstrapScript, shellQuote(in.ClusterName), shellQuote(in.ClusterEndpoint), shellQuote(in.ClusterCA))
	if k := in.Kubelet; k != nil && len(k.ClusterDNS) > 0 {
		fmt.Fprintf(&b, " \\\n  --dns-cluster-ip %s", shellQuote(k.ClusterDNS[0]))
	}
	if k := in.Kubelet; k != nil && k.MaxPods != nil {
		b.WriteString(" \\\n  --use-max-pods false")
	}
	if args := al2KubeletArgs(in); len(args) > 0 {
		fmt.Fprintf(&b, " \\\n  --kubelet-extra-args %s", shellQuote(strings.Join(args, " ")))
	}
	b.WriteString("\n")
	parts = append(parts, mimePart{contentType: ContentTypeShellScript, body: b.String()})
	return writeMIME(parts), nil
}

// al2KubeletArgs are the kubelet flags of an AL2 node, in a fixed order.
func al2KubeletArgs(in Input) []string {
	var args []string
	if labels := nodeLabels(in.Labels); len(labels) > 0 {
		args = append(args, "--node-labels="+strings.Join(labels, ","))
	}
	if taints := sortedTaints(in.Taints); len(taints) > 0 {
		fs := make([]string, len(taints))
		for i, t := range taints {
			fs[i] = taintFlag(t)
		}
		args = append(args, "--register-with-taints="+strings.Join(fs, ","))
	}
	k := in.Kubelet
	if k == nil {
		return args
	}
	if k.MaxPods != nil {
		args = append(args, "--max-pods="+strconv.Itoa(int(*k.MaxPods)))
	}
	if k.PodsPerCore != nil {
		args = append(args, "--pods-per-core="+strconv.Itoa(int(*k.PodsPerCore)))
	}
	if len(k.SystemReserved) > 0 {
		args = append(args, "--system-reserved="+sortedPairs(k.SystemReserved, ","))
	}
	if len(k.KubeReserved) > 0 {
		args = append(args, "--kube-reserved="+sortedPairs(k.KubeReserved, ","))
	}
	evictionFlag := func(m map[string]string) string {
		parts := make([]string, 0, len(m))
		for _, sig := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, sig+"<"+m[sig])
		}
		return strings.Join(parts, ",")
	}
	if len(k.EvictionHard) > 0 {
		args = append(args, "--eviction-hard="+evictionFlag(k.EvictionHard))
	}
	if len(k.EvictionSoft) > 0 {
		args = append(args, "--eviction-soft="+evictionFlag(k.EvictionSoft))
	}
	if len(k.EvictionSoftGracePeriod) > 0 {
		g := map[string]string{}
		for sig, d := range k.EvictionSoftGracePeriod {
			g[sig] = durationString(d)
		}
		args = append(args, "--eviction-soft-grace-period="+sortedPairs(g, ","))
	}
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, "--eviction-max-pod-grace-period="+strconv.Itoa(int(*k.EvictionMaxPodGracePeriod)))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, "--image-gc-high-threshold="+strconv.Itoa(int(*k.ImageGCHighThresholdPercent)))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, "--image-gc-low-threshold="+strconv.Itoa(int(*k.ImageGCLowThresholdPercent)))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, "--cpu-cfs-quota="+strconv.FormatBool(*k.CPUCFSQuota))
	}
	return args
}

// shellQuote single-quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellUnquote reads one shell word starting at s[0] (single-quoted,
// double-quoted or bare) and returns it with the rest of s.
func shellUnquote(s string) (word, rest string, err error) {
	var b strings.Builder
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return "", "", fmt.Errorf("unterminated single quote")
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) {
					j++
				}
			}
			if j >= len(s) {
				return "", "", fmt.Errorf("unterminated double quote")
			}
			b.WriteString(strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s[i+1 : j]))
			i = j + 1
		case c == ' ' || c == '\t' || c == '\n':
			return b.String(), s[i:], nil
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			return b.String(), s[i:], nil
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), "", nil
}
