package rbac_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/config/rbac"
)

// TestManifestsHoldEveryFile: the embedded stream carries every YAML file
// of the directory, byte for byte.
func TestManifestsHoldEveryFile(t *testing.T) {
	got := rbac.Manifests()
	names, err := filepath.Glob("*.yaml")
	if err != nil || len(names) == 0 {
		t.Fatalf("no YAML files found: %v", err)
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(got, data) {
			t.Errorf("the manifests lack %s", n)
		}
	}
	if docs := strings.Count(string(got), "---\n"); docs != len(names) {
		t.Errorf("%d documents for %d files", docs, len(names))
	}
}
