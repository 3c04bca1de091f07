package apitest

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestSimulateAgreesWithTheAPIServer: `dovetail simulate` refuses every
// object the API server refuses in TestInvalidObjectsRefused, naming the
// same field, and accepts every object it accepts in
// TestValidEdgeCasesAccepted (simulate reads manifests without a server).
// NodeOverlays and CapacityBuffers are read and held to the same rule.
// (A kind simulate does not read is refused by kind.)
func TestSimulateAgreesWithTheAPIServer(t *testing.T) {
	read := func(t *testing.T, base, patch string) error {
		t.Helper()
		obj := object(t, base, "x", patch)
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		return (&simulate.Manifests{}).Read("x.yaml", data)
	}
	unread := func(base string) string {
		kind := object(t, base, "x", "").GetKind()
		if slices.Contains(simulate.Kinds(), kind) {
			return ""
		}
		return kind
	}
	for _, tc := range invalidCases() {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			err := read(t, tc.base, tc.patch)
			if kind := unread(tc.base); kind != "" {
				if err == nil || !strings.Contains(err.Error(), `Unsupported value: "`+kind+`"`) {
					t.Errorf("simulate does not refuse %s by its kind: %v", kind, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("simulate accepted what the API server refuses (%s)", tc.field)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error does not name %s: %v", tc.field, err)
			}
		})
	}
	for _, tc := range validCases() {
		t.Run("accepted/"+tc.name, func(t *testing.T) {
			err := read(t, tc.base, tc.patch)
			if kind := unread(tc.base); kind != "" {
				if err == nil || !strings.Contains(err.Error(), `Unsupported value: "`+kind+`"`) {
					t.Errorf("simulate does not refuse %s by its kind: %v", kind, err)
				}
				return
			}
			if err != nil {
				t.Errorf("simulate refused what the API server accepts: %v", err)
			}
		})
	}
}
