package controlplane

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// AuditLogPath is the audit log kube-apiserver writes when
// Options.AuditUsers is set ("" otherwise).
func (c *ControlPlane) AuditLogPath() string {
	if len(c.opts.AuditUsers) == 0 {
		return ""
	}
	return filepath.Join(c.dir, "logs", "audit.log")
}

func (c *ControlPlane) auditPolicyPath() string {
	return filepath.Join(c.dir, "config", "audit-policy.yaml")
}

// writeAuditPolicy writes the policy of Options.AuditUsers: Metadata for
// their requests, nothing else, one event per request (ResponseComplete).
func (c *ControlPlane) writeAuditPolicy() error {
	if len(c.opts.AuditUsers) == 0 {
		return nil
	}
	users, err := json.Marshal(c.opts.AuditUsers) // a JSON array is a YAML flow sequence
	if err != nil {
		return err
	}
	policy := fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
  - level: Metadata
    users: %s
  - level: None
`, users)
	if err := os.MkdirAll(filepath.Dir(c.auditPolicyPath()), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.auditPolicyPath(), []byte(policy), 0o644)
}

func (c *ControlPlane) auditArgs() []string {
	if len(c.opts.AuditUsers) == 0 {
		return nil
	}
	return []string{
		"--audit-policy-file=" + c.auditPolicyPath(),
		"--audit-log-path=" + c.AuditLogPath(),
		"--audit-log-format=json",
		"--audit-log-mode=blocking",
		"--audit-log-maxsize=0", // no rotation: the counts cover the whole log
	}
}

// AuditCount is what CountAudit found.
type AuditCount struct {
	// ByUserAgent counts requests by user agent (its product name, the
	// part before the first '/' or space: "dovetail" for the controller's
	// "dovetail/<version> ..." or "dovetail").
	ByUserAgent map[string]int
	// ByVerb counts requests by verb (get, list, watch, create, patch...).
	ByVerb map[string]int
	Total  int
}

// CountAudit counts the audit log's requests (one line each) from line
// skip on (skip: the lines counted before, so that a caller can count a
// window); it returns the counts and the number of lines read in all.
func CountAudit(path string, skip int) (AuditCount, int, error) {
	out := AuditCount{ByUserAgent: map[string]int{}, ByVerb: map[string]int{}}
	f, err := os.Open(path)
	if err != nil {
		return out, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		if n <= skip {
			continue
		}
		var ev struct {
			Verb      string `json:"verb"`
			UserAgent string `json:"userAgent"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return out, n, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		agent := ev.UserAgent
		if i := strings.IndexAny(agent, "/ "); i >= 0 {
			agent = agent[:i]
		}
		out.ByUserAgent[agent]++
		out.ByVerb[ev.Verb]++
		out.Total++
	}
	return out, n, sc.Err()
}
