package userdata

import (
	"fmt"
	"strings"
)

// shellWords splits a command line the way a POSIX shell would for the
// quoting user data uses: 'single', "double" (with \" \\ \$ \` escapes),
// backslash escapes outside quotes, whitespace between words. Expansions
// ($VAR) are kept as written.
func shellWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
					inWord = true
				}
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// bootstrapFlagsWithValues are bootstrap.sh options that take a value.
var bootstrapFlagsWithValues = map[string]bool{
	"apiserver-endpoint": true, "b64-cluster-ca": true, "dns-cluster-ip": true, "use-max-pods": true,
	"kubelet-extra-args": true, "container-runtime": true, "ip-family": true, "service-ipv4-cidr": true,
	"service-ipv6-cidr": true, "pause-container-account": true, "pause-container-version": true,
	"aws-api-retry-attempts": true, "docker-config-json": true, "enable-docker-bridge": true,
	"enable-local-outpost": true, "cluster-id": true, "local-disks": true,
}

// parseBootstrap finds the /etc/eks/bootstrap.sh call of an AL2 script and
// reads its kubelet settings. found is false when the script does not call
// bootstrap.sh. offset is the number of input lines before script.
func parseBootstrap(script string, offset int) (cfg *Config, found bool, err error) {
	lines := splitLines(script)
	for i := 0; i < len(lines); i++ {
		first := i
		cmd := lines[i]
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + lines[i]
		}
		if t := strings.TrimSpace(cmd); t == "" || strings.HasPrefix(t, "#") || !strings.Contains(cmd, "bootstrap.sh") {
			continue
		}
		line := offset + first + 1
		words, werr := shellWords(cmd)
		if werr != nil {
			return nil, false, errorf(FormatBootstrap, line, "%v", werr)
		}
		at := -1
		for j, w := range words {
			if strings.HasSuffix(w, "bootstrap.sh") {
				at = j
				break
			}
		}
		if at < 0 {
			continue // bootstrap.sh mentioned, not called
		}
		cfg, err := bootstrapArgs(words[at+1:], line)
		return cfg, true, err
	}
	return nil, false, nil
}

func bootstrapArgs(args []string, line int) (*Config, error) {
	cfg := &Config{Format: FormatBootstrap}
	useMaxPods := true
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == ";" || a == "&&" || a == "||" || a == "|" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			if cfg.ClusterName == "" {
				cfg.ClusterName = strings.TrimSuffix(a, ";")
			}
			if strings.HasSuffix(a, ";") {
				break
			}
			continue
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		if !hasValue && (bootstrapFlagsWithValues[name] || i+1 < len(args) && !strings.HasPrefix(args[i+1], "--")) {
			if i+1 >= len(args) {
				return nil, errorf(FormatBootstrap, line, "bootstrap.sh option --%s has no value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "apiserver-endpoint":
			cfg.APIServerEndpoint = value
		case "dns-cluster-ip":
			cfg.ClusterDNS = []string{value}
		case "use-max-pods":
			switch value {
			case "true":
				useMaxPods = true
			case "false":
				useMaxPods = false
			default:
				return nil, errorf(FormatBootstrap, line, "--use-max-pods %q is not true or false", value)
			}
		case "kubelet-extra-args":
			words, err := shellWords(value)
			if err != nil {
				return nil, errorf(FormatBootstrap, line, "--kubelet-extra-args: %v", err)
			}
			if err := applyKubeletArgs(cfg, wordsOn(words, line), FormatBootstrap); err != nil {
				return nil, err
			}
		}
	}
	if cfg.ClusterName == "" {
		return nil, errorf(FormatBootstrap, line, "bootstrap.sh is called without a cluster name")
	}
	if !useMaxPods && cfg.MaxPods == nil {
		n := int32(110) // the kubelet's own default when bootstrap.sh does not set it
		cfg.MaxPods = &n
	}
	return cfg, nil
}
