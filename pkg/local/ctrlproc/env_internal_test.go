package ctrlproc

import (
	"slices"
	"testing"
)

// TestMergeEnv: the caller's AWS SDK settings and kubeconfig never reach
// the controller (the emulator's are set), AWS_FEATURE_GATES (a
// controller setting) does, Env wins, and an empty value unsets.
func TestMergeEnv(t *testing.T) {
	base := []string{"AWS_PROFILE=prod", "AWS_FEATURE_GATES=RebootForRepair=true", "KUBECONFIG=/elsewhere", "FEATURE_GATES=NodeRepair=true", "HOME=/home/x"}
	got := mergeEnv(base, map[string]string{"FEATURE_GATES": "", "AWS_ENDPOINT_URL": "http://127.0.0.1:1", "LOG_LEVEL": "debug"})
	want := []string{"AWS_FEATURE_GATES=RebootForRepair=true", "HOME=/home/x", "AWS_ENDPOINT_URL=http://127.0.0.1:1", "LOG_LEVEL=debug"}
	if !slices.Equal(got, want) {
		t.Fatalf("mergeEnv = %q, want %q", got, want)
	}
}
