package awsemu_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/dovetail-sh/dovetail/pkg/awsemu"
)

// adminRequest sends one raw request and returns its status and body.
func adminRequest(t *testing.T, e *awsemu.Emulator, method, path, host, auth, body string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.Endpoint()+path, rd)
	if body != "" && !strings.HasPrefix(path, "/_dovetail") {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return do(t, req)
}

// do sends req and returns its status and body.
func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminAPIRequiresTokenAndLoopbackHost(t *testing.T) {
	e := start(t, awsemu.Options{})
	tok := e.AdminToken()
	if len(tok) != 64 {
		t.Fatalf("admin token %q: want 64 hex characters", tok)
	}
	if other := start(t, awsemu.Options{}).AdminToken(); other == tok {
		t.Fatal("two emulators drew the same admin token")
	}
	loopback := strings.TrimPrefix(e.Endpoint(), "http://")
	throttle := `{"fraction":1}`
	cases := []struct {
		name, host, auth string
		status           int
		message          string
	}{
		{"no token", "", "", http.StatusUnauthorized, "no token"},
		{"not bearer", "", "Basic " + tok, http.StatusUnauthorized, "no token"},
		{"wrong token", "", "Bearer " + strings.Repeat("0", 64), http.StatusUnauthorized, "wrong token"},
		{"token prefix", "", "Bearer " + tok[:32], http.StatusUnauthorized, "wrong token"},
		{"rebinding host", "evil.example:" + strings.Split(loopback, ":")[1], "Bearer " + tok, http.StatusForbidden, "DNS rebinding"},
		{"host without port", "127.0.0.1", "Bearer " + tok, http.StatusForbidden, "is not the emulator's address"},
		{"localhost name", "localhost:" + strings.Split(loopback, ":")[1], "Bearer " + tok, http.StatusForbidden, "is not the emulator's address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := adminRequest(t, e, http.MethodPost, "/_dovetail/faults/throttle", c.host, c.auth, throttle)
			if status != c.status {
				t.Fatalf("status %d (%s), want %d", status, body, c.status)
			}
			var ae struct{ Error string }
			if err := json.Unmarshal([]byte(body), &ae); err != nil || !strings.Contains(ae.Error, c.message) {
				t.Errorf("body %q: want a JSON error containing %q", body, c.message)
			}
			if f := e.Faults(); f.ThrottleFraction != 0 {
				t.Errorf("a refused request set the throttle: %+v", f)
			}
		})
	}
	// Every admin path is guarded, reads too, and unknown ones before 404.
	for _, p := range []string{"health", "faults", "instances", "calls", "fleets", "images/publish", "nope"} {
		if status, body := adminRequest(t, e, http.MethodGet, "/_dovetail/"+p, "", "", ""); status != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d %s", p, status, body)
		}
	}
	// With the token and the loopback Host the same request works.
	if status, body := adminRequest(t, e, http.MethodPost, "/_dovetail/faults/throttle", loopback, "Bearer "+tok, `{"fraction":0.5,"seed":3}`); status != http.StatusOK {
		t.Fatalf("authorised request: %d %s", status, body)
	}
	if f := e.Faults(); f.ThrottleFraction != 0.5 {
		t.Errorf("throttle not set: %+v", f)
	}
	e.ClearFaults()

	// The client without a token gets a typed 401; with it, it works.
	ctx := context.Background()
	var se *awsemu.AdminStatusError
	if _, err := (&awsemu.AdminClient{Endpoint: e.Endpoint()}).Health(ctx); !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Errorf("health without a token: %v", err)
	}
	if h, err := e.AdminClient().Health(ctx); err != nil || !h.OK {
		t.Errorf("health with the token: %+v %v", h, err)
	}

	// The AWS API needs no token; the SDK on loopback works.
	if _, err := ec2.NewFromConfig(sdkConfig(e)).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Errorf("DescribeSubnets through the SDK: %v", err)
	}
}

// TestAWSAPIRefusesOtherHosts is issue 34 item 10: every AWS endpoint (the
// query protocols EC2/IAM/Auto Scaling, the JSON protocols SQS/SSM/
// Pricing/EventBridge, EKS REST) refuses a Host that is not a loopback
// address with the emulator's port, so a DNS-rebinding web page cannot
// drive it; loopback names with the port work.
func TestAWSAPIRefusesOtherHosts(t *testing.T) {
	e := start(t, awsemu.Options{})
	port := strings.Split(strings.TrimPrefix(e.Endpoint(), "http://"), ":")[1]
	type call struct {
		name, method, path, target, body string
	}
	calls := []call{
		{"ec2", http.MethodPost, "/", "", "Action=DescribeAvailabilityZones&Version=2016-11-15"},
		{"sqs", http.MethodPost, "/", "AmazonSQS.ListQueues", "{}"},
		{"ssm", http.MethodPost, "/", "AmazonSSM.GetParameter", `{"Name":"/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/recommended/image_id"}`},
		{"eks", http.MethodGet, "/clusters", "", ""},
	}
	send := func(c call, host string) (int, string) {
		req, err := http.NewRequest(c.method, e.Endpoint()+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if c.target != "" {
			req.Header.Set("X-Amz-Target", c.target)
			req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		} else if c.body != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		return do(t, req)
	}
	for _, c := range calls {
		for _, host := range []string{"evil.example:" + port, "emulator.example", "127.0.0.1", "127.0.0.1:1", "localhost.evil.example:" + port, "0.0.0.0:" + port} {
			if status, body := send(c, host); status != http.StatusForbidden || !strings.Contains(body, "DNS rebinding") {
				t.Errorf("%s with Host %q: %d %s, want 403 naming DNS rebinding", c.name, host, status, body)
			}
		}
	}
	if n := len(e.Calls()); n != 0 {
		t.Errorf("refused requests reached the services: %d calls recorded", n)
	}
	for _, c := range calls {
		for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "127.0.0.2:" + port} {
			if status, body := send(c, host); status == http.StatusForbidden {
				t.Errorf("%s with loopback Host %q: refused: %s", c.name, host, body)
			}
		}
	}
}

func TestOptionsRefuseNonLoopbackAndShortTokens(t *testing.T) {
	ctx := context.Background()
	for _, o := range []awsemu.Options{
		{Addr: "0.0.0.0:0"},
		{Addr: "[::]:0"},
		{Addr: "192.0.2.1:0"},
		{Addr: "example.com:0"},
		{Addr: "127.0.0.1"},
		{AdminToken: "short"},
	} {
		e, err := awsemu.Start(ctx, o)
		if err == nil {
			_ = e.Close()
			t.Errorf("Start(%+v) succeeded", o)
			continue
		}
		if !strings.Contains(err.Error(), "awsemu: options:") {
			t.Errorf("Start(%+v): %v does not name the option", o, err)
		}
	}
	e := start(t, awsemu.Options{Addr: "localhost:0", AdminToken: "a-token-of-twenty-chars"})
	if e.AdminToken() != "a-token-of-twenty-chars" {
		t.Errorf("token %q, want the one given", e.AdminToken())
	}
	if _, err := e.AdminClient().Health(ctx); err != nil {
		t.Errorf("health with a given token: %v", err)
	}
}
