package awsemu_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// start runs an emulator for the test with fast delays unless opts say
// otherwise.
func start(t testing.TB, opts awsemu.Options) *awsemu.Emulator {
	t.Helper()
	if opts.TimeScale == 0 {
		opts.TimeScale = 0.01
	}
	ctx, cancel := context.WithCancel(context.Background())
	e, err := awsemu.Start(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// sdkConfig points aws-sdk-go-v2 at the emulator with dummy credentials and
// no retries, so tests see every error.
func sdkConfig(e *awsemu.Emulator) aws.Config {
	cfg := e.AWSConfig()
	cfg.RetryMaxAttempts = 1
	return cfg
}

// apiCode returns the AWS error code of an SDK error, "" for nil.
func apiCode(t testing.TB, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an API error", err, err)
	}
	return ae.ErrorCode()
}

// cli runs the AWS CLI against the emulator and decodes its JSON output.
// On failure it returns the CLI's stderr as the error.
func cli(t testing.TB, e *awsemu.Emulator, out any, args ...string) error {
	t.Helper()
	if _, err := exec.LookPath("aws"); err != nil {
		t.Fatalf("the AWS CLI is needed for this test: %v", err)
	}
	full := append([]string{"--endpoint-url", e.Endpoint(), "--region", e.Options().Region, "--output", "json"}, args...)
	cmd := exec.Command("aws", full...)
	cmd.Env = append(os.Environ(),
		"AWS_ACCESS_KEY_ID=AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY=dummy-secret",
		"AWS_MAX_ATTEMPTS=1", "AWS_RETRY_MODE=standard", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_PAGER=",
	)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return errors.New(strings.TrimSpace(stderr.String()))
	}
	if out != nil && strings.TrimSpace(stdout.String()) != "" {
		if err := json.Unmarshal([]byte(stdout.String()), out); err != nil {
			t.Fatalf("decoding aws %v output %q: %v", args, stdout.String(), err)
		}
	}
	return nil
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, timeout, 10*time.Millisecond, what, poll.Bool(cond))
}

// launchTemplate creates a launch template with the newest AL2023 image of
// the architecture and returns its name.
func launchTemplate(t testing.TB, e *awsemu.Emulator, c *ec2.Client, name, arch, userData string) string {
	t.Helper()
	ctx := context.Background()
	img := newestImage(t, c, "amazon-eks-node-al2023-"+arch+"-standard-*")
	data := &ec2types.RequestLaunchTemplateData{ImageId: img.ImageId}
	if userData != "" {
		data.UserData = aws.String(userData)
	}
	_, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	return name
}

func newestImage(t testing.TB, c *ec2.Client, namePattern string) ec2types.Image {
	t.Helper()
	out, err := c.DescribeImages(context.Background(), &ec2.DescribeImagesInput{
		Filters: []ec2types.Filter{{Name: aws.String("name"), Values: []string{namePattern}}},
	})
	if err != nil {
		t.Fatalf("DescribeImages: %v", err)
	}
	if len(out.Images) == 0 {
		t.Fatalf("no image matches %s", namePattern)
	}
	best := out.Images[0]
	for _, img := range out.Images[1:] {
		if aws.ToString(img.CreationDate) > aws.ToString(best.CreationDate) {
			best = img
		}
	}
	return best
}

// boto runs a Python snippet with boto3 clients for the emulator and
// returns the JSON object the snippet leaves in `out`. The snippet can use
// client(service) and code(fn, **kwargs), which returns the error code a
// call fails with (botocore's ClientError.response['Error']['Code']) or
// None.
func boto(t testing.TB, e *awsemu.Emulator, snippet string) map[string]any {
	t.Helper()
	script := `import boto3, botocore, json
from botocore.config import Config
_cfg = Config(retries={'max_attempts': 1, 'mode': 'standard'})
def client(svc):
    return boto3.client(svc, endpoint_url=ENDPOINT, region_name=REGION, aws_access_key_id='AKIDEXAMPLE',
                        aws_secret_access_key='dummy-secret', config=_cfg)
def code(fn, **kw):
    try:
        fn(**kw)
        return None
    except botocore.exceptions.ClientError as err:
        return err.response['Error']['Code']
out = {}
` + snippet + `
print(json.dumps(out, default=str))
`
	cmd := exec.Command("python3", "-c", script)
	cmd.Env = append(os.Environ(), "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
	cmd.Env = append(cmd.Env, "PYTHONDONTWRITEBYTECODE=1")
	script = strings.Replace(script, "ENDPOINT", `"`+e.Endpoint()+`"`, 1)
	script = strings.Replace(script, "REGION", `"`+e.Options().Region+`"`, 1)
	cmd.Args = []string{"python3", "-c", script}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("boto3 snippet failed: %v\n%s", err, stderr.String())
	}
	out := map[string]any{}
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("decoding boto3 output %q: %v", stdout.String(), err)
	}
	return out
}

// cliCode runs the AWS CLI and returns the error code it reports ("" on
// success), parsed from "An error occurred (CODE) when calling ...".
func cliCode(t testing.TB, e *awsemu.Emulator, args ...string) string {
	t.Helper()
	err := cli(t, e, nil, args...)
	if err == nil {
		return ""
	}
	msg := err.Error()
	i := strings.Index(msg, "An error occurred (")
	if i < 0 {
		t.Fatalf("aws %v: unexpected failure: %s", args, msg)
	}
	rest := msg[i+len("An error occurred ("):]
	return rest[:strings.IndexByte(rest, ')')]
}
