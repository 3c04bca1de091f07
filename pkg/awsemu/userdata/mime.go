package userdata

import (
	"encoding/base64"
	"mime"
	"strings"
)

const formatMIME Format = "MIME"

func isMIME(s string) bool {
	head := strings.ToLower(s)
	if i := strings.Index(head, "\n\n"); i >= 0 {
		head = head[:i]
	}
	return strings.HasPrefix(head, "mime-version:") || strings.HasPrefix(head, "content-type: multipart/")
}

// part is one body part of a MIME multipart document: its content type and
// content, and the line number (0-based) its content starts after.
type part struct {
	contentType string
	content     string
	offset      int
}

// splitLines splits on \n, dropping a trailing \r from each line.
func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// readHeaders reads header lines from lines[i:] up to the blank line and
// returns the lower-cased headers and the index after the blank line.
func readHeaders(lines []string, i int) (map[string]string, int) {
	h := map[string]string{}
	last := ""
	for ; i < len(lines); i++ {
		l := lines[i]
		if strings.TrimSpace(l) == "" {
			return h, i + 1
		}
		if (l[0] == ' ' || l[0] == '\t') && last != "" {
			h[last] += " " + strings.TrimSpace(l)
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		last = strings.ToLower(strings.TrimSpace(k))
		h[last] = strings.TrimSpace(v)
	}
	return h, i
}

// splitMIME splits a multipart document into its parts, keeping line
// numbers for error messages.
func splitMIME(data string) ([]part, error) {
	lines := splitLines(data)
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	headers, body := readHeaders(lines, i)
	ct := headers["content-type"]
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, errorf(formatMIME, i+1, "Content-Type %q: %v", ct, err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		return []part{{contentType: mt, content: strings.Join(lines[body:], "\n"), offset: body}}, nil
	}
	boundary := params["boundary"]
	if boundary == "" {
		return nil, errorf(formatMIME, i+1, "multipart Content-Type has no boundary")
	}
	delim, closing := "--"+boundary, "--"+boundary+"--"
	var parts []part
	start := -1
	closed := false
	flush := func(end int) error {
		if start < 0 {
			return nil
		}
		h, content := readHeaders(lines, start)
		pct := h["content-type"]
		if pct == "" {
			pct = "text/plain"
		}
		pmt, _, err := mime.ParseMediaType(pct)
		if err != nil {
			return errorf(formatMIME, start+1, "part Content-Type %q: %v", pct, err)
		}
		if content > end {
			content = end
		}
		text := strings.Join(lines[content:end], "\n")
		if strings.EqualFold(h["content-transfer-encoding"], "base64") {
			b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(text), ""))
			if err != nil {
				return errorf(formatMIME, content+1, "base64 part: %v", err)
			}
			text = string(b)
		}
		parts = append(parts, part{contentType: pmt, content: text, offset: content})
		return nil
	}
	for j := body; j < len(lines); j++ {
		l := strings.TrimRight(lines[j], " \t")
		switch l {
		case delim:
			if err := flush(j); err != nil {
				return nil, err
			}
			start = j + 1
		case closing:
			if err := flush(j); err != nil {
				return nil, err
			}
			start = -1
			closed = true
		}
		if closed {
			break
		}
	}
	if !closed {
		return nil, errorf(formatMIME, len(lines), "missing the closing boundary %s", closing)
	}
	return parts, nil
}

// parseMIME reads every part: nodeadm NodeConfigs are merged in order, a
// shell script's bootstrap.sh call is read, other parts are ignored.
func parseMIME(data string) (*Config, error) {
	parts, err := splitMIME(data)
	if err != nil {
		return nil, err
	}
	cfg := &Config{Format: FormatScript}
	for _, p := range parts {
		switch p.contentType {
		case "application/node.eks.aws":
			cfg.Format = FormatNodeadm
			if err := parseNodeConfig(cfg, p.content, p.offset); err != nil {
				return nil, err
			}
		case "text/x-shellscript":
			sc, found, err := parseBootstrap(p.content, p.offset)
			if err != nil {
				return nil, err
			}
			if found {
				sc.ClusterDNS = append(cfg.ClusterDNS, sc.ClusterDNS...)
				cfg = mergeInto(cfg, sc)
			}
		}
	}
	return cfg, nil
}

// mergeInto applies src's settings over dst and takes src's format.
func mergeInto(dst, src *Config) *Config {
	dst.Format = src.Format
	if src.ClusterName != "" {
		dst.ClusterName = src.ClusterName
	}
	if src.APIServerEndpoint != "" {
		dst.APIServerEndpoint = src.APIServerEndpoint
	}
	dst.ClusterDNS = src.ClusterDNS
	setAll(&dst.Labels, src.Labels)
	for _, t := range src.Taints {
		dst.addTaint(t)
	}
	if src.MaxPods != nil {
		dst.MaxPods = src.MaxPods
	}
	setAll(&dst.KubeReserved, src.KubeReserved)
	setAll(&dst.SystemReserved, src.SystemReserved)
	setAll(&dst.EvictionHard, src.EvictionHard)
	setAll(&dst.EvictionSoft, src.EvictionSoft)
	return dst
}
