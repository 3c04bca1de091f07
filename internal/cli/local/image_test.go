package local_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
)

func TestPublishImageCommand(t *testing.T) {
	e, dir := emulatorDir(t)
	const param = "/aws/service/eks/optimized-ami/1.37/amazon-linux-2023/x86_64/standard/recommended/image_id"
	before := e.SSMParameters()[param]

	stdout, stderr, code := runDovetail(t, "local", "publish-image", "--dir", dir, "--alias", "al2023@latest")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	out, err := ssm.NewFromConfig(e.AWSConfig()).GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(param)})
	if err != nil {
		t.Fatal(err)
	}
	now := aws.ToString(out.Parameter.Value)
	if now == before {
		t.Fatalf("%s still %s after publish-image", param, before)
	}
	if want := param + ": " + before + " -> " + now; !strings.Contains(stdout, want) {
		t.Errorf("stdout %q lacks %q", stdout, want)
	}
	if n := strings.Count(stdout, "\n"); n != 5 {
		t.Errorf("printed %d lines, want 5 (one per al2023 parameter)", n)
	}

	stdout, stderr, code = runDovetail(t, "local", "publish-image", "--dir", dir, "--parameter", param)
	if code != 0 || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, now+" -> ") {
		t.Errorf("by parameter: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--alias", "al2023@latest", "--parameter", param}, cmdutil.ExitBadInput, "exactly one"},
		{nil, cmdutil.ExitBadInput, "exactly one"},
		{[]string{"--alias", "al2023@v20251101"}, cmdutil.ExitBadInput, "never moves"},
		{[]string{"--alias", "windows@latest"}, cmdutil.ExitError, "windows"},
		{[]string{"--parameter", "/not/there"}, cmdutil.ExitError, "/not/there"},
	} {
		_, stderr, code := runDovetail(t, append([]string{"local", "publish-image", "--dir", dir}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
