package awsemu

import (
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// HTTPClient returns an http.Client for SDK clients that talk to the
// emulator. It hides the request body's io.WriterTo from net/http, which
// avoids a race in aws-sdk-go-v2 (aws/aws-sdk-go-v2#2737): the SDK closes
// the request body as soon as response headers arrive, and if net/http is
// still checking the body for extra bytes through WriteTo it gets io.EOF as
// an error and closes the connection under the response being read ("use of
// closed network connection"). A server on loopback answers fast enough to
// hit that window often; the SDK retries it, but tests that turn retries off
// would see it. With Read instead of WriteTo, a closed body reads as a
// clean EOF.
func HTTPClient() *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: readOnlyBodyTransport{base: base}, Timeout: 2 * time.Minute}
}

type readOnlyBodyTransport struct{ base http.RoundTripper }

type readOnlyBody struct{ io.ReadCloser }

func (t readOnlyBodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return t.base.RoundTrip(r)
	}
	r2 := r.Clone(r.Context())
	r2.Body = readOnlyBody{r.Body}
	return t.base.RoundTrip(r2)
}

// AWSConfig returns an aws.Config for the emulator: its region and
// endpoint, dummy static credentials and HTTPClient. Callers may change
// anything (e.g. RetryMaxAttempts) before creating clients.
func (e *Emulator) AWSConfig() aws.Config {
	return aws.Config{
		Region:       e.opts.Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIAEMULATOR", "emulator-secret", ""),
		BaseEndpoint: aws.String(e.endpoint),
		HTTPClient:   HTTPClient(),
	}
}
