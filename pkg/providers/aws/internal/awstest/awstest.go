package awstest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/dovetail-sh/dovetail/api/aws/v1"
	"github.com/dovetail-sh/dovetail/pkg/awsemu"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/instance"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/launchtemplate"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/nodeclass"
	"github.com/dovetail-sh/dovetail/pkg/providers/aws/sdk"
)

// Dummy credentials, distinctive so tests can assert they never reach a
// log.
const (
	AccessKeyID     = "AKIADOVETAILTEST0001"
	SecretAccessKey = "dovetail/test/secret/NEVER-LOG-ME-0123456789"
	SessionToken    = "dovetail-test-session-token-NEVER-LOG-ME"
)

// ClusterName is the emulator's cluster in these tests.
const ClusterName = "test-cluster"

// Start starts an emulator for the test (closed at cleanup) and returns it
// with an aws.Config for it.
func Start(t testing.TB, opts awsemu.Options) (*awsemu.Emulator, aws.Config) {
	t.Helper()
	if opts.ClusterName == "" {
		opts.ClusterName = ClusterName
	}
	if opts.TimeScale == 0 {
		opts.TimeScale = 0.01
	}
	if opts.ClusterEndpoint == "" {
		opts.ClusterEndpoint = "https://" + opts.ClusterName + ".example.invalid"
		opts.ClusterCA = []byte("-----BEGIN CERTIFICATE-----\nTUlJQ0VS\n-----END CERTIFICATE-----\n")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e, err := awsemu.Start(ctx, opts)
	if err != nil {
		cancel()
		t.Fatalf("starting the AWS emulator: %v", err)
	}
	t.Cleanup(func() {
		_ = e.Close()
		cancel()
	})
	return e, Config(e)
}

// Config returns an aws.Config for the emulator with the dummy
// credentials.
func Config(e *awsemu.Emulator) aws.Config {
	return aws.Config{
		Region:       e.Options().Region,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, SessionToken),
		BaseEndpoint: aws.String(e.Endpoint()),
	}
}

// Retry is a retry policy with short delays for tests.
func Retry() sdk.RetryOptions {
	o := sdk.DefaultRetry()
	o.BaseDelay = time.Millisecond
	o.MaxBackoff = 20 * time.Millisecond
	return o
}

// Clients builds the provider's clients for the emulator with Retry().
func Clients(e *awsemu.Emulator) *sdk.Clients {
	return sdk.NewClients(Config(e), Retry())
}

// Launch starts n on-demand m5.large instances through the provider's own
// packages and returns their ids.
func Launch(t *testing.T, e *awsemu.Emulator, n int) []string {
	t.Helper()
	ctx := context.Background()
	c := Clients(e)
	r := &nodeclass.Resolver{EC2: c.EC2, SSM: c.SSM, IAM: c.IAM, ClusterName: ClusterName, Region: e.Options().Region, KubernetesVersion: e.Options().KubernetesVersion}
	disc := map[string]string{"karpenter.sh/discovery": ClusterName}
	nc, err := r.Resolve(ctx, &awsv1.EC2NodeClass{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: awsv1.EC2NodeClassSpec{
		SubnetSelectorTerms: []awsv1.SubnetSelectorTerm{{Tags: disc}}, SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{Tags: disc}},
		AMISelectorTerms: []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}}, Role: "KarpenterNodeRole-" + ClusterName,
	}})
	if err != nil || !nc.IsTrue(awsv1.ConditionTypeReady) {
		t.Fatalf("resolving: %v %+v", err, nc.Status.Conditions)
	}
	tpl, err := launchtemplate.NewProvider(c.EC2, ClusterName).Ensure(ctx, launchtemplate.Content{
		ImageID: nc.Status.AMIs[0].ID, SecurityGroupIDs: []string{nc.Status.SecurityGroups[0].ID}, InstanceProfile: nc.Status.InstanceProfile,
		HTTPEndpoint: "enabled", HTTPProtocolIPv6: "disabled", HTTPPutResponseHopLimit: 1, HTTPTokens: "required",
	})
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	p := instance.New(bctx, instance.Options{EC2: c.EC2})
	var ids []string
	for range n {
		res, err := p.Launch(ctx, &instance.LaunchRequest{CapacityType: "on-demand", Tags: map[string]string{"kubernetes.io/cluster/" + ClusterName: "owned"},
			Configs: []instance.LaunchConfig{{LaunchTemplateName: tpl.Name, Overrides: []instance.Override{
				{InstanceType: "m5.large", SubnetID: nc.Status.Subnets[0].ID, Zone: nc.Status.Subnets[0].Zone}}}}})
		if err != nil || res.Instance == nil {
			t.Fatalf("launch: %v %+v", err, res)
		}
		ids = append(ids, res.Instance.ID)
	}
	return ids
}
