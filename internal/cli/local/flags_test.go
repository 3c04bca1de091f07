package local_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/cli/local"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
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

// TestUpControllerReplicasZero: --controller-replicas 0 means no
// controller at all (to run another controller against the stack): the
// controller component starts nothing. A negative count is refused.
func TestUpControllerReplicasZero(t *testing.T) {
	var got *local.UpOptions
	cmd := local.NewCmdUp(func(_ context.Context, o *local.UpOptions) error { got = o; return nil })
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--controller-replicas", "0"})
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ctrl stack.Component
	for _, c := range got.Components {
		if c.Name() == "controller" {
			ctrl = c
		}
	}
	if ctrl == nil {
		t.Fatal("no controller component")
	}
	var progress bytes.Buffer
	if err := ctrl.Start(t.Context(), stack.Env{Dir: t.TempDir(), Progress: &progress}); err != nil {
		t.Fatalf("Start with no controller: %v", err)
	}
	if r, ok := ctrl.(interface{ Replica(int) *ctrlproc.Replica }); !ok || r.Replica(0) != nil {
		t.Errorf("a replica runs (or the component has no replicas): %v", ok)
	}
	if !strings.Contains(progress.String(), "no controller") {
		t.Errorf("Start said %q, want a word that no controller runs", progress.String())
	}
	if err := ctrl.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}

	cmd = local.NewCmdUp(func(context.Context, *local.UpOptions) error { return nil })
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SetArgs([]string{"--controller-replicas", "-1"})
	if err := cmd.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), "--controller-replicas") {
		t.Fatalf("--controller-replicas -1: %v", err)
	}
}

// TestUpControllerDeploymentFlag: --controller-deployment takes
// NAMESPACE/NAME, and needs a controller to stand for.
func TestUpControllerDeploymentFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" for accepted
	}{
		{[]string{"--controller-deployment", "kube-system/karpenter"}, ""},
		{[]string{"--controller-deployment", "karpenter"}, "NAMESPACE/NAME"},
		{[]string{"--controller-deployment", "Kube/karpenter"}, "namespace"},
		{[]string{"--controller-deployment", "kube-system/karpenter", "--controller-replicas", "0"}, "--controller-replicas"},
	} {
		ran := false
		cmd := local.NewCmdUp(func(context.Context, *local.UpOptions) error { ran = true; return nil })
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		err := cmd.ExecuteContext(t.Context())
		switch {
		case tc.want == "" && (err != nil || !ran):
			t.Errorf("%v: %v (ran %v)", tc.args, err, ran)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || ran):
			t.Errorf("%v: got %v (ran %v), want an error naming %q", tc.args, err, ran, tc.want)
		}
	}
}

// TestUpZonesFlag: --zones N reaches the AWS emulator's component; a count
// outside 1..the region's zones is refused as bad input, naming the flag
// and the range, before anything runs.
func TestUpZonesFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		zones int    // the component's Zones when accepted
		want  string // "" for accepted
	}{
		{nil, 0, ""},
		{[]string{"--zones", "4"}, 4, ""},
		{[]string{"--zones", "6"}, 6, ""},
		{[]string{"--zones", "2", "--aws-region", "us-west-1"}, 2, ""},
		{[]string{"--zones", "7"}, 0, "--zones 7 is out of range: region us-east-1 has 6 zones, so --zones must be 1 to 6"},
		{[]string{"--zones", "-2"}, 0, "--zones must be 1 to 6"},
		{[]string{"--zones", "3", "--aws-region", "us-west-1"}, 0, "--zones must be 1 to 2"},
		{[]string{"--zones", "four"}, 0, `invalid argument "four" for "--zones"`},
	} {
		var got *local.UpOptions
		cmd := local.NewCmdUp(func(_ context.Context, o *local.UpOptions) error { got = o; return nil })
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(tc.args)
		err := cmd.ExecuteContext(t.Context())
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) || got != nil {
				t.Errorf("%v: got %v (ran %v), want an error saying %q", tc.args, err, got != nil, tc.want)
			}
			continue
		}
		if err != nil || got == nil {
			t.Errorf("%v: %v (ran %v)", tc.args, err, got != nil)
			continue
		}
		var aws *localaws.Component
		for _, c := range got.Components {
			if a, ok := c.(*localaws.Component); ok {
				aws = a
			}
		}
		if aws == nil || aws.Zones != tc.zones {
			t.Errorf("%v: AWS emulator component %+v, want Zones %d", tc.args, aws, tc.zones)
		}
	}
}
