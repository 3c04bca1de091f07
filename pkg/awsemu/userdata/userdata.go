package userdata

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Format is the kind of user data a node was launched with.
type Format string

// Formats Parse recognises.
const (
	// FormatNodeadm is AL2023's nodeadm NodeConfig (YAML), usually inside a
	// MIME multipart document.
	FormatNodeadm Format = "nodeadm"
	// FormatBottlerocket is Bottlerocket's TOML settings.
	FormatBottlerocket Format = "bottlerocket"
	// FormatBootstrap is an AL2 shell script that calls
	// /etc/eks/bootstrap.sh.
	FormatBootstrap Format = "bootstrap.sh"
	// FormatScript is a shell script (or MIME document) that configures no
	// kubelet: the node keeps every default.
	FormatScript Format = "script"
	// FormatEmpty is no user data at all.
	FormatEmpty Format = "empty"
)

// Config is what a node's kubelet takes from its user data. Unset fields
// mean "the default": nil MaxPods is the AMI's own pod limit, nil maps
// leave the defaults alone.
type Config struct {
	Format      Format
	ClusterName string
	// APIServerEndpoint and ClusterDNS are reported when present; the node
	// booter does not need them.
	APIServerEndpoint string
	ClusterDNS        []string
	// Labels are the node labels the kubelet registers with
	// (--node-labels, settings.kubernetes.node-labels).
	Labels map[string]string
	// Taints are the taints the kubelet registers with
	// (--register-with-taints, registerWithTaints,
	// settings.kubernetes.node-taints), in the order given.
	Taints  []corev1.Taint
	MaxPods *int32
	// KubeReserved, SystemReserved, EvictionHard and EvictionSoft map a
	// resource or eviction signal to its quantity as written ("100m", "5%").
	KubeReserved, SystemReserved map[string]string
	EvictionHard, EvictionSoft   map[string]string
}

// Error is a parse failure: the format being read, the 1-based line of
// the input where the problem is (0 when it concerns the whole input) and
// what is wrong.
type Error struct {
	Format Format
	Line   int
	Msg    string
	// Err is a sentinel the error unwraps to (ErrUnrecognized), or nil.
	Err error
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("userdata: %s: line %d: %s", e.Format, e.Line, e.Msg)
	}
	return fmt.Sprintf("userdata: %s: %s", e.Format, e.Msg)
}

// ErrUnrecognized is what an *Error for input of no known format unwraps
// to. Match every parse failure with errors.As against *Error.
var ErrUnrecognized = errors.New("user data is neither a MIME document, a nodeadm NodeConfig, Bottlerocket TOML nor a shell script")

func errorf(f Format, line int, format string, args ...any) *Error {
	return &Error{Format: f, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// Parse detects the format of user data and reads the kubelet settings from
// it. Bad input gives an *Error naming the format and line; Parse never
// panics.
func Parse(data string) (*Config, error) {
	trimmed := strings.TrimSpace(data)
	switch {
	case trimmed == "":
		return &Config{Format: FormatEmpty}, nil
	case isMIME(trimmed):
		return parseMIME(data)
	case strings.HasPrefix(trimmed, "#!"):
		return parseScript(data, 0)
	case looksLikeNodeConfig(trimmed):
		cfg := &Config{Format: FormatNodeadm}
		if err := parseNodeConfig(cfg, data, 0); err != nil {
			return nil, err
		}
		return cfg, nil
	case looksLikeTOML(trimmed):
		return ParseBottlerocket(data)
	}
	return nil, &Error{Format: "unknown", Line: 1, Msg: ErrUnrecognized.Error(), Err: ErrUnrecognized}
}

func looksLikeNodeConfig(s string) bool {
	return strings.Contains(s, "node.eks.aws/") && strings.Contains(s, "NodeConfig")
}

func looksLikeTOML(s string) bool {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		return strings.HasPrefix(line, "[") || strings.HasPrefix(line, "settings.")
	}
	return false
}

// parseScript reads a shell script: an AL2 bootstrap.sh call if there is
// one, else a plain script. offset is the line number before the script.
func parseScript(script string, offset int) (*Config, error) {
	cfg, found, err := parseBootstrap(script, offset)
	if err != nil {
		return nil, err
	}
	if !found {
		return &Config{Format: FormatScript}, nil
	}
	return cfg, nil
}

func (c *Config) addTaint(t corev1.Taint) {
	for i, old := range c.Taints {
		if old.Key == t.Key && old.Effect == t.Effect {
			c.Taints[i] = t
			return
		}
	}
	c.Taints = append(c.Taints, t)
}

func setAll(dst *map[string]string, src map[string]string) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = map[string]string{}
	}
	for k, v := range src {
		(*dst)[k] = v
	}
}
