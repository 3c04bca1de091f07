// Package sdk builds the aws-sdk-go-v2 clients the AWS provider uses, with
// one retry policy for all of them.
//
// # Retries
//
// Every client uses the SDK's standard retryer with these settings
// (DefaultRetry; all can be changed through RetryOptions):
//
//	MaxAttempts       10 attempts per call (1 + 9 retries)
//	Backoff           full jitter: a random delay in
//	                  [0, min(MaxBackoff, BaseDelay·2^attempt)),
//	                  BaseDelay 200ms, MaxBackoff 20s
//	retry token bucket 2,000 tokens; a retry after throttling costs 1,
//	                  after another transient error 5; a call that
//	                  succeeds first time adds 1, a retry that succeeds
//	                  refunds its cost
//
// Why these numbers: the token bucket exists to stop retry storms when a
// service is down, not to give up under throttling. With a throttle rate
// f, a call's retries that themselves fail cost on average f²/(1−f)
// tokens, while first-time successes add 1−f per call: for f = 0.3 that is
// 0.13 spent for 0.7 earned, so the bucket fills rather than drains
// (the SDK default of 5 per throttled retry and 500 tokens runs dry after
// a few hundred calls at 30% throttling). Ten attempts make a call fail
// under 30% random throttling with probability 0.3^10 ≈ 6·10⁻⁶.
//
// # Credentials
//
// Credentials come from the aws.Config the caller resolved and are never
// logged: SDK request/response logging stays off (only retry notices are
// logged, which carry no headers).
package sdk
