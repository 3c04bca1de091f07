package localaws_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/spf13/pflag"

	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{Kwok: true}, &cp))
}

func TestComponentWritesAWSEnvAndServesTheCluster(t *testing.T) {
	dir := t.TempDir()
	c := localaws.New()
	c.TimeScale = 0.01
	var progress strings.Builder
	ctx := context.Background()
	if err := c.Start(ctx, stack.Env{Dir: dir, ClusterName: "dev", ControlPlane: cp, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = c.Stop(context.Background())
		}
	})
	env, err := localaws.ReadEnv(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"AWS_ENDPOINT_URL": c.Emulator().Endpoint(), "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "dummy", "AWS_SECRET_ACCESS_KEY": "dummy",
		"DOVETAIL_CLUSTER_NAME": "dev", "DOVETAIL_INTERRUPTION_QUEUE": "dev",
	}
	if len(env) != len(want) {
		t.Errorf("aws.env has %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	if !strings.Contains(progress.String(), c.Emulator().Endpoint()) {
		t.Errorf("progress %q does not say where the emulator listens", progress.String())
	}
	// EKS reports the control plane; SQS has the queue named in aws.env.
	cfg := c.Emulator().AWSConfig()
	cfg.BaseEndpoint = aws.String(env["AWS_ENDPOINT_URL"])
	cl, err := eks.NewFromConfig(cfg).DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String("dev")})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(cl.Cluster.Endpoint); got != cp.RESTConfig().Host {
		t.Errorf("EKS endpoint %q, the control plane is %q", got, cp.RESTConfig().Host)
	}
	if cl.Cluster.CertificateAuthority == nil || aws.ToString(cl.Cluster.CertificateAuthority.Data) == "" {
		t.Error("EKS reports no certificate authority")
	}
	if _, err := sqs.NewFromConfig(cfg).GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(env["DOVETAIL_INTERRUPTION_QUEUE"])}); err != nil {
		t.Errorf("interruption queue: %v", err)
	}
	// The admin token is in its own file, readable by the owner only, and
	// not in aws.env.
	tokPath := filepath.Join(dir, localaws.TokenFile)
	st, err := os.Stat(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %04o, want 0600", tokPath, st.Mode().Perm())
	}
	tok, err := localaws.ReadToken(dir)
	if err != nil || tok != c.Emulator().AdminToken() {
		t.Errorf("ReadToken = %q, %v; want the emulator's token", tok, err)
	}
	envText, _ := os.ReadFile(filepath.Join(dir, localaws.EnvFile))
	if strings.Contains(string(envText), c.Emulator().AdminToken()) {
		t.Error("aws.env holds the admin token")
	}
	// The admin client found through aws.env and the token file reaches
	// the same emulator; without the token the emulator refuses, naming
	// the file.
	admin, err := localaws.Admin(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := admin.Health(ctx); err != nil || h.ClusterName != "dev" {
		t.Errorf("health %+v %v", h, err)
	}
	noToken := *admin
	noToken.Token = ""
	if _, err := noToken.Health(ctx); err == nil || !strings.Contains(err.Error(), localaws.TokenFile) || !strings.Contains(err.Error(), "401") {
		t.Errorf("health without the token: %v; want a 401 naming %s", err, localaws.TokenFile)
	}
	// A token file others can read is refused, naming it.
	if err := os.Chmod(tokPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := localaws.Admin(dir); err == nil || !strings.Contains(err.Error(), tokPath) || !strings.Contains(err.Error(), "0644") {
		t.Errorf("Admin with a 0644 token file: %v", err)
	}
	if err := os.Chmod(tokPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if _, err := os.Stat(filepath.Join(dir, localaws.EnvFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("aws.env still there after Stop: %v", err)
	}
	if _, err := os.Stat(tokPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there after Stop: %v", localaws.TokenFile, err)
	}
	if _, err := localaws.Admin(dir); !errors.Is(err, localaws.ErrNoEmulator) {
		t.Errorf("Admin after Stop: %v", err)
	}
	if _, err := admin.Health(ctx); err == nil {
		t.Error("the emulator still answers after Stop")
	}
}

func TestReadEnvErrorsNameFileAndLine(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, localaws.EnvFile), []byte("# ok\nAWS_REGION=us-east-1\nnot a line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := localaws.ReadEnv(dir)
	if err == nil || !strings.Contains(err.Error(), localaws.EnvFile+":3:") {
		t.Errorf("error %v does not name the file and line 3", err)
	}
	if err := os.WriteFile(filepath.Join(dir, localaws.EnvFile), []byte("AWS_REGION=us-east-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := localaws.ReadEnv(dir); err == nil || !strings.Contains(err.Error(), "AWS_ENDPOINT_URL") {
		t.Errorf("missing endpoint: %v", err)
	}
}

// TestComponentZones: --zones reaches the emulator (the VPC has a subnet in
// that many zones) and a value outside 1..the region's zones is refused,
// naming the flag and the range, before anything starts.
func TestComponentZones(t *testing.T) {
	c := localaws.New()
	fs := pflag.NewFlagSet("up", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse([]string{"--zones", "4", "--time-scale", "0.01"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate with --zones 4: %v", err)
	}
	var progress strings.Builder
	ctx := context.Background()
	if err := c.Start(ctx, stack.Env{Dir: t.TempDir(), ClusterName: "dev", ControlPlane: cp, Progress: &progress}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	out, err := ec2.NewFromConfig(c.Emulator().AWSConfig()).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{})
	if err != nil {
		t.Fatal(err)
	}
	zones := map[string]bool{}
	for _, s := range out.Subnets {
		zones[aws.ToString(s.AvailabilityZone)] = true
	}
	if len(out.Subnets) != 4 || len(zones) != 4 {
		t.Errorf("%d subnets in %d zones, want 4 in 4", len(out.Subnets), len(zones))
	}
	if !strings.Contains(progress.String(), "4 zones") {
		t.Errorf("progress %q does not say how many zones", progress.String())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--zones", "7"}, "--zones 7 is out of range: region us-east-1 has 6 zones, so --zones must be 1 to 6"},
		{[]string{"--zones", "-1"}, "--zones -1 is out of range"},
		{[]string{"--zones", "3", "--aws-region", "us-west-1"}, "--zones must be 1 to 2"},
	} {
		bad := localaws.New()
		fs := pflag.NewFlagSet("up", pflag.ContinueOnError)
		bad.AddFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: Validate = %v, want an error saying %q", tc.args, err, tc.want)
		}
		dir := t.TempDir()
		if err := bad.Start(ctx, stack.Env{Dir: dir, ClusterName: "dev", ControlPlane: cp}); err == nil {
			_ = bad.Stop(ctx)
			t.Errorf("%v: Start succeeded", tc.args)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: Start left %v behind", tc.args, entries)
		}
	}
}
