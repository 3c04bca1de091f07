package crds_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dovetail-sh/dovetail/api/crds"
)

// controllerGen is the generator `make generate` runs; keep in step with the
// Makefile and hack/verify-generated.sh.
const controllerGen = "sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0"

// TestGeneratedCRDsUpToDate regenerates the CRDs into a temporary directory
// and amends them (Patch) and compares them with the embedded ones, so a marker changed without
// `make generate` fails here too (without touching the work tree, unlike
// hack/verify-generated.sh).
func TestGeneratedCRDsUpToDate(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command("go", "run", controllerGen, "crd", "paths=./api/...", "output:crd:artifacts:config="+out)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	embedded, err := crds.YAML()
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := filepath.Glob(filepath.Join(out, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh) != len(embedded) {
		t.Errorf("controller-gen wrote %d CRDs, %d are checked in", len(fresh), len(embedded))
	}
	for _, f := range fresh {
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		if want, err = crds.Patch(name, want); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(embedded[name], want) {
			t.Errorf("api/crds/%s is stale: run `make generate`", name)
		}
	}
}
