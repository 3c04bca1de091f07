package charts_test

import (
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/api/crds"
)

// TestChartsRenderEveryCRD: `helm template` of dovetail-crd, and of
// dovetail with --include-crds, renders every CRD of api/crds (the five the
// peer's chart installs, NodeOverlay and CapacityBuffer included).
func TestChartsRenderEveryCRD(t *testing.T) {
	objs, err := crds.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 5 {
		t.Errorf("api/crds has %d CRDs, want the peer's 5", len(objs))
	}
	for _, args := range [][]string{
		{"template", "dovetail-crd", "./dovetail-crd"},
		{"template", "dovetail", "./dovetail", "--include-crds", "--set", "settings.clusterName=prod"},
	} {
		out, stderr, err := runHelmSplit(t, args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		for _, crd := range objs {
			if !strings.Contains(out, "\n  name: "+crd.Name+"\n") {
				t.Errorf("helm %s does not render CRD %s", strings.Join(args, " "), crd.Name)
			}
		}
	}
}
