package awstest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
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
