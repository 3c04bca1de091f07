package cmdutil_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
)

// TestRESTConfigNamesWhatIsMissing: a missing --kubeconfig, a $KUBECONFIG
// of missing files, no kubeconfig at all, and one that does not parse are
// bad input (exit 2) naming the path.
func TestRESTConfigNamesWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	missing := filepath.Join(dir, "nope")
	t.Setenv("KUBECONFIG", "")
	_, err := cmdutil.RESTConfig(missing, "")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "--kubeconfig "+missing) {
		t.Errorf("missing --kubeconfig: %v", err)
	}
	t.Setenv("KUBECONFIG", missing)
	_, err = cmdutil.RESTConfig("", "")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "$KUBECONFIG="+missing) {
		t.Errorf("missing $KUBECONFIG: %v", err)
	}
	t.Setenv("KUBECONFIG", "")
	_, err = cmdutil.RESTConfig("", "")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), "no kubeconfig") {
		t.Errorf("no kubeconfig: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("{not yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = cmdutil.RESTConfig(bad, "")
	if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), bad) {
		t.Errorf("a kubeconfig that does not parse: %v", err)
	}
}
