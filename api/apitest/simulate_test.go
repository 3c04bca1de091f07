package apitest

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dovetail-sh/dovetail/pkg/simulate"
)

// TestSimulateAgreesWithTheAPIServer: `dovetail simulate` refuses every
// object the API server refuses in TestInvalidObjectsRefused, naming the
// same field, and accepts every object it accepts in
// TestValidEdgeCasesAccepted (simulate reads manifests without a server).
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
	for _, tc := range invalidCases() {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			err := read(t, tc.base, tc.patch)
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
			if err := read(t, tc.base, tc.patch); err != nil {
				t.Errorf("simulate refused what the API server accepts: %v", err)
			}
		})
	}
}
