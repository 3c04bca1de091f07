package local_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/cli/local"
)

// TestUpFlags checks how `local up` parses its flags into UpOptions,
// without starting anything.
func TestUpFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		dir     string
		cluster string
		apply   []string
	}{
		{"defaults", nil, ".dovetail/local", "local", nil},
		{"all flags", []string{"--dir", "/srv/x", "--cluster-name", "dev", "--apply", "a.yaml", "--apply", "dir/"}, "/srv/x", "dev", []string{"a.yaml", "dir/"}},
		{"apply keeps commas", []string{"--apply", "a,b.yaml"}, ".dovetail/local", "local", []string{"a,b.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got *local.UpOptions
			cmd := local.NewCmdUp(func(_ context.Context, o *local.UpOptions) error {
				got = o
				return nil
			})
			var stdout, stderr bytes.Buffer
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			cmd.SetArgs(tc.args)
			if err := cmd.ExecuteContext(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("run function not called")
			}
			if got.Dir != tc.dir || got.ClusterName != tc.cluster || strings.Join(got.Apply, "|") != strings.Join(tc.apply, "|") {
				t.Errorf("parsed %+v, want dir %q cluster %q apply %q", got, tc.dir, tc.cluster, tc.apply)
			}
			if got.Stdout != &stdout || got.Stderr != &stderr {
				t.Error("stdout/stderr not wired to the command's streams")
			}
		})
	}
}
