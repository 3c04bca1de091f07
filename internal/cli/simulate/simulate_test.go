package simulate_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/internal/cli/simulate"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    *simulate.Options
		badWant string // substring of a bad-input error
	}{
		{name: "defaults", args: []string{"-f", "a.yaml"},
			want: &simulate.Options{Files: []string{"a.yaml"}, InstanceTypes: "builtin", Region: "us-east-1", Output: "table"}},
		{name: "everything", args: []string{"-f", "a.yaml", "--filename", "dir", "-f", "-", "--instance-types", "cat.json", "--region", "eu-west-1", "--zones", "eu-west-1a,eu-west-1b", "-o", "yaml"},
			want: &simulate.Options{Files: []string{"a.yaml", "dir", "-"}, InstanceTypes: "cat.json", Region: "eu-west-1", Zones: []string{"eu-west-1a", "eu-west-1b"}, Output: "yaml"}},
		{name: "disruption", args: []string{"-f", "c.yaml", "--disruption", "--now", "2026-12-01T10:00:00Z", "-o", "json", "--spot-to-spot-consolidation"},
			want: &simulate.Options{Files: []string{"c.yaml"}, InstanceTypes: "builtin", Region: "us-east-1", Output: "json", Disruption: true, At: "2026-12-01T10:00:00Z", SpotToSpot: true}},
		{name: "savings threshold", args: []string{"-f", "c.yaml", "--disruption", "--consolidation-min-savings", "0.05", "--consolidation-min-savings-per-pod", "0.01"},
			want: &simulate.Options{Files: []string{"c.yaml"}, InstanceTypes: "builtin", Region: "us-east-1", Output: "table", Disruption: true, MinSavings: 0.05, MinSavingsPerPod: 0.01}},
		{name: "savings threshold without disruption", args: []string{"-f", "c.yaml", "--consolidation-min-savings", "0.05"}, badWant: "--consolidation-min-savings applies only with --disruption"},
		{name: "negative savings threshold", args: []string{"-f", "c.yaml", "--disruption", "--consolidation-min-savings-per-pod", "-1"}, badWant: "--consolidation-min-savings-per-pod: -1: must be a non-negative"},
		{name: "bad now", args: []string{"-f", "c.yaml", "--disruption", "--now", "10:00"}, badWant: "--now"},
		{name: "now without disruption", args: []string{"-f", "c.yaml", "--now", "2026-12-01T10:00:00Z"}, badWant: "only with --disruption"},
		{name: "spot-to-spot without disruption", args: []string{"-f", "c.yaml", "--spot-to-spot-consolidation"}, badWant: "only with --disruption"},
		{name: "no input", args: nil, badWant: "no input"},
		{name: "bad output", args: []string{"-f", "a.yaml", "-o", "xml"}, badWant: `"json", "table", "yaml"`},
		{name: "positional argument", args: []string{"a.yaml"}, badWant: "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got *simulate.Options
			cmd := simulate.NewCmd(func(_ context.Context, o *simulate.Options) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.badWant != "" {
				if cmdutil.ExitCode(err) != cmdutil.ExitBadInput || !strings.Contains(err.Error(), tc.badWant) {
					t.Fatalf("err = %v (exit %d), want bad input with %q", err, cmdutil.ExitCode(err), tc.badWant)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual([]any{got.Files, got.InstanceTypes, got.Region, got.Zones, got.Output, got.Disruption, got.At, got.SpotToSpot, got.MinSavings, got.MinSavingsPerPod},
				[]any{tc.want.Files, tc.want.InstanceTypes, tc.want.Region, tc.want.Zones, tc.want.Output, tc.want.Disruption, tc.want.At, tc.want.SpotToSpot, tc.want.MinSavings, tc.want.MinSavingsPerPod}) {
				t.Errorf("options = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRunBadInputs(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		stdin string
		extra func(*simulate.Options)
		want  string
	}{
		{name: "missing file", files: []string{"testdata/nope.yaml"}, want: "testdata/nope.yaml"},
		{name: "empty directory", files: []string{"testdata/empty"}, want: "no *.yaml"},
		{name: "stdin twice", files: []string{"-", "-"}, want: "only once"},
		{name: "bad document", files: []string{"-"}, stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: x}}}]}\n",
			want: "-:1 (document 1, Pod \"p\"): spec.containers[0].resources.requests[cpu]"},
		{name: "unknown region", files: []string{"-"}, stdin: "", extra: func(o *simulate.Options) { o.Region = "mars-1" }, want: "--region"},
		{name: "unknown zone", files: []string{"-"}, extra: func(o *simulate.Options) { o.Zones = []string{"us-east-1a", "eu-west-1a"} }, want: `--zones: "eu-west-1a"`},
		{name: "empty zone (--zones ,)", files: []string{"-"}, extra: func(o *simulate.Options) { o.Zones = []string{"", ""} }, want: "--zones: an empty zone name"},
		{name: "unknown zone of a catalog file", files: []string{"-"}, stdin: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n",
			extra: func(o *simulate.Options) {
				o.InstanceTypes = "../../../pkg/simulate/testdata/golden/catalog.json"
				o.Zones = []string{"z1", "z9"}
			}, want: `--zones: "z9" is not a zone of`},
		{name: "missing catalog file", files: []string{"-"}, extra: func(o *simulate.Options) { o.InstanceTypes = "testdata/nope.json" }, want: "--instance-types"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := simulate.NewCmd(func(ctx context.Context, o *simulate.Options) error {
				o.Stdin = strings.NewReader(tc.stdin)
				if tc.extra != nil {
					tc.extra(o)
				}
				return simulate.Run(ctx, o)
			})
			args := []string{}
			for _, f := range tc.files {
				args = append(args, "-f", f)
			}
			cmd.SetArgs(args)
			cmd.SetOut(&stdout)
			cmd.SetErr(&stderr)
			err := cmd.Execute()
			var bad *cmdutil.BadInputError
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want bad input containing %q", err, tc.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout on bad input: %q", stdout.String())
			}
		})
	}
}
