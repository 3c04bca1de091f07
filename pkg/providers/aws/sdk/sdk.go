package sdk

import (
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// RetryOptions configure the retryer shared by all clients.
type RetryOptions struct {
	// MaxAttempts per call, the first included.
	MaxAttempts int
	// BaseDelay and MaxBackoff bound the full-jitter exponential backoff.
	BaseDelay, MaxBackoff time.Duration
	// TokenBucket is the retry token bucket's capacity.
	TokenBucket uint
	// ThrottleRetryCost and RetryCost are the tokens a retry after a
	// throttling error, or after another retryable error, takes.
	ThrottleRetryCost, RetryCost uint
	// SuccessIncrement is what a first-attempt success adds to the bucket.
	SuccessIncrement uint
}

// DefaultRetry returns the production retry settings (see the package
// documentation for why).
func DefaultRetry() RetryOptions {
	return RetryOptions{
		MaxAttempts:       10,
		BaseDelay:         200 * time.Millisecond,
		MaxBackoff:        20 * time.Second,
		TokenBucket:       2000,
		ThrottleRetryCost: 1,
		RetryCost:         5,
		SuccessIncrement:  1,
	}
}

func (o RetryOptions) withDefaults() RetryOptions {
	d := DefaultRetry()
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = d.MaxAttempts
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = d.BaseDelay
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	if o.TokenBucket == 0 {
		o.TokenBucket = d.TokenBucket
	}
	if o.ThrottleRetryCost == 0 {
		o.ThrottleRetryCost = d.ThrottleRetryCost
	}
	if o.RetryCost == 0 {
		o.RetryCost = d.RetryCost
	}
	if o.SuccessIncrement == 0 {
		o.SuccessIncrement = d.SuccessIncrement
	}
	return o
}

// jitterBackoff is full-jitter exponential backoff. The jitter is the one
// source of randomness here; it only spreads retries and decides nothing.
type jitterBackoff struct{ base, max time.Duration }

func (b jitterBackoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	ceiling := b.max
	if attempt < 30 {
		if d := b.base << uint(attempt); d > 0 && d < ceiling {
			ceiling = d
		}
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1)), nil
}

// NewRetryer returns a standard retryer with the options' settings.
func NewRetryer(o RetryOptions) aws.Retryer {
	o = o.withDefaults()
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = o.MaxAttempts
		so.MaxBackoff = o.MaxBackoff
		so.Backoff = jitterBackoff{base: o.BaseDelay, max: o.MaxBackoff}
		so.RateLimiter = ratelimit.NewTokenRateLimit(o.TokenBucket)
		so.RetryCost = o.RetryCost
		so.ThrottlingRetryCost = o.ThrottleRetryCost
		so.NoRetryIncrement = o.SuccessIncrement
	})
}

// Clients are the service clients of the provider.
type Clients struct {
	EC2     *ec2.Client
	IAM     *iam.Client
	SSM     *ssm.Client
	SQS     *sqs.Client
	Pricing *pricing.Client
	EKS     *eks.Client
}

// PricingRegion is the region whose Pricing API endpoint serves a region:
// us-east-1 everywhere but China.
func PricingRegion(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "cn-northwest-1"
	}
	return "us-east-1"
}

// NewClients builds every client from cfg with one shared retryer. cfg is
// copied, not modified.
func NewClients(cfg aws.Config, o RetryOptions) *Clients {
	cfg = cfg.Copy()
	retryer := NewRetryer(o)
	cfg.Retryer = func() aws.Retryer { return retryer }
	cfg.RetryMaxAttempts = 0
	cfg.RetryMode = ""
	// Never log requests or responses: they carry signed headers.
	cfg.ClientLogMode = aws.LogRetries
	pricingCfg := cfg.Copy()
	pricingCfg.Region = PricingRegion(cfg.Region)
	return &Clients{
		EC2:     ec2.NewFromConfig(cfg),
		IAM:     iam.NewFromConfig(cfg),
		SSM:     ssm.NewFromConfig(cfg),
		SQS:     sqs.NewFromConfig(cfg),
		Pricing: pricing.NewFromConfig(pricingCfg),
		EKS:     eks.NewFromConfig(cfg),
	}
}
