package controlplane_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// auditedUser is the one user the shared control plane audits.
const auditedUser = "audited"

// TestAuditCountsTheAuditedUsersRequestsByUserAgent: with AuditUsers, the
// API server logs one line per request of those users, and CountAudit
// counts them by user agent; other users' requests are not logged.
func TestAuditCountsTheAuditedUsersRequestsByUserAgent(t *testing.T) {
	path := cp.AuditLogPath()
	if path == "" {
		t.Fatal("AuditLogPath is empty with AuditUsers set")
	}
	_, skip, err := controlplane.CountAudit(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cp.RESTConfigFor(auditedUser, "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cfg.UserAgent = "audit-probe/1.0 (test)"
	audited, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 7
	for range n {
		if _, err := audited.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The admin's requests are not audited.
	for range 5 {
		if _, err := clientset(t).CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := audited.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// The log is written as requests complete; the list's line may trail.
	var got controlplane.AuditCount
	eventually(t, "the audited requests in the log", func(_ context.Context) error {
		var err error
		if got, _, err = controlplane.CountAudit(path, skip); err != nil {
			return err
		}
		if got.ByUserAgent["audit-probe"] != n+1 || got.Total != n+1 || got.ByVerb["get"] != n || got.ByVerb["list"] != 1 {
			return fmt.Errorf("counted %+v, want %d requests of audit-probe (%d get, 1 list) and nothing else", got, n+1, n)
		}
		return nil
	})
}
