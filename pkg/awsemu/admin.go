package awsemu

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/termtext"
)

// adminPrefix is the path prefix of the emulator's admin API. AWS SDK
// requests never use it.
const adminPrefix = "/_dovetail/"

// Admin API (JSON in, JSON out):
//
//	GET  /_dovetail/health              {"ok":true,"endpoint":...,"region":...,"clusterName":...}
//	GET  /_dovetail/faults              Faults
//	POST /_dovetail/faults/ice          ICERule            -> Faults
//	POST /_dovetail/faults/throttle     ThrottleRequest    -> Faults
//	POST /_dovetail/faults/capacity     CapacityRule       -> Faults
//	POST /_dovetail/faults/deny         DenyRequest        -> Faults
//	POST /_dovetail/faults/clear        {}                 -> Faults
//	GET  /_dovetail/fleets              []FleetRequest
//	POST /_dovetail/interrupt           InterruptRequest   -> {"ok":true}
//	GET  /_dovetail/instances           []Instance
//	GET  /_dovetail/calls               []Call
//
// Every admin request must carry "Authorization: Bearer TOKEN" (the
// emulator's AdminToken) and a Host header naming the address the emulator
// listens on (127.0.0.1:PORT), so that a web page cannot reach the API by
// DNS rebinding (its requests carry the page's own host name). Requests
// without the token get 401, with another Host 403; the AWS API itself
// (every other path) checks neither.
//
// Errors are {"error": "..."} with status 400 (bad input), 401 (no or
// wrong token), 403 (wrong Host), 404 (unknown instance or path) or 405
// (wrong method).

// ThrottleRequest is the body of POST /_dovetail/faults/throttle.
type ThrottleRequest struct {
	Fraction float64 `json:"fraction"`
	Seed     int64   `json:"seed"`
}

// DenyRequest is the body of POST /_dovetail/faults/deny.
type DenyRequest struct {
	Action string `json:"action"`
}

// InterruptRequest is the body of POST /_dovetail/interrupt.
type InterruptRequest struct {
	Target string `json:"target"`
	Kind   string `json:"kind"`
}

// Health is the answer of GET /_dovetail/health.
type Health struct {
	OK          bool   `json:"ok"`
	Endpoint    string `json:"endpoint"`
	Region      string `json:"region"`
	ClusterName string `json:"clusterName"`
	QueueURL    string `json:"queueUrl"`
}

type adminError struct {
	Error string `json:"error"`
}

// minAdminToken is the shortest Options.AdminToken accepted.
const minAdminToken = 16

// newAdminToken draws a fresh admin token from crypto/rand.
func newAdminToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("awsemu: drawing the admin token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// checkLoopback refuses a listen address that is not on loopback.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("awsemu: options: Addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("awsemu: options: Addr %q: the emulator listens on loopback only (127.0.0.1, ::1 or localhost)", addr)
	}
	return nil
}

// AdminToken is the token the admin API requires (Options.AdminToken or
// the one drawn at Start).
func (e *Emulator) AdminToken() string { return e.opts.AdminToken }

// AdminClient returns an admin client for this emulator, with its endpoint
// and token.
func (e *Emulator) AdminClient() *AdminClient {
	return &AdminClient{Endpoint: e.endpoint, Token: e.opts.AdminToken}
}

// apiHostRefused checks the Host header of an AWS API request: it must
// name a loopback address (an IP literal or localhost) and the emulator's
// port, as every SDK client of the endpoint sends it; another name (a web
// page's own host, re-bound by DNS to 127.0.0.1) is refused. It returns
// the refusal's message, or "".
func (e *Emulator) apiHostRefused(hostport string) string {
	_, port, _ := net.SplitHostPort(e.listener.Addr().String())
	host, p, err := net.SplitHostPort(hostport)
	ok := err == nil && p == port
	if ok && host != "localhost" {
		ip := net.ParseIP(host)
		ok = ip != nil && ip.IsLoopback()
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("awsemu: Host %q is not a loopback address with the emulator's port %s; requests must be sent to the endpoint %s (another Host is refused, against DNS rebinding)",
		termtext.Clip(hostport, 256), port, e.endpoint)
}

// adminAllowed checks an admin request's Host and token. It returns the
// status and message to refuse it with, or 0.
func (e *Emulator) adminAllowed(r *http.Request) (int, string) {
	want := e.listener.Addr().String()
	if r.Host != want {
		return http.StatusForbidden, fmt.Sprintf("admin API: Host %q is not the emulator's address %s; admin requests must be sent to the loopback address it listens on (a different Host is refused, against DNS rebinding)", r.Host, want)
	}
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" {
		return http.StatusUnauthorized, "admin API: no token; send \"Authorization: Bearer TOKEN\" with the token `dovetail local up` writes to DIR/" + "aws-admin-token (in Go: Emulator.AdminToken)"
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(e.opts.AdminToken)) != 1 {
		return http.StatusUnauthorized, "admin API: wrong token (the stack writes a new one to DIR/aws-admin-token each time it starts)"
	}
	return 0, ""
}

func (e *Emulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, adminPrefix)
	reply := func(status int, v any) {
		b, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
	}
	fail := func(status int, format string, args ...any) {
		reply(status, adminError{Error: fmt.Sprintf(format, args...)})
	}
	if status, msg := e.adminAllowed(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="dovetail-emulator-admin"`)
		}
		e.log.V(1).Info("admin request refused", "path", r.URL.Path, "status", status, "host", r.Host)
		fail(status, "%s", msg)
		return
	}
	method := func(m string) bool {
		if r.Method != m {
			fail(http.StatusMethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, m)
			return false
		}
		return true
	}
	decode := func(v any) bool {
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			fail(http.StatusBadRequest, "decoding the request body: %v", err)
			return false
		}
		return true
	}
	switch path {
	case "health":
		if method(http.MethodGet) {
			q, _ := e.QueueURL(e.opts.ClusterName)
			reply(http.StatusOK, Health{OK: true, Endpoint: e.endpoint, Region: e.opts.Region, ClusterName: e.opts.ClusterName, QueueURL: q})
		}
	case "faults":
		if method(http.MethodGet) {
			reply(http.StatusOK, e.Faults())
		}
	case "faults/ice":
		var rule ICERule
		if method(http.MethodPost) && decode(&rule) {
			if rule.CapacityType != "" && rule.CapacityType != "spot" && rule.CapacityType != "on-demand" {
				fail(http.StatusBadRequest, "capacityType %q: valid values are spot, on-demand (or empty for both)", rule.CapacityType)
				return
			}
			if rule.After < 0 {
				fail(http.StatusBadRequest, "after %d: must not be negative", rule.After)
				return
			}
			e.LimitCapacity(rule.InstanceType, rule.Zone, rule.CapacityType, rule.After)
			reply(http.StatusOK, e.Faults())
		}
	case "faults/throttle":
		var tr ThrottleRequest
		if method(http.MethodPost) && decode(&tr) {
			if tr.Fraction < 0 || tr.Fraction > 1 {
				fail(http.StatusBadRequest, "fraction %v: must be between 0 and 1", tr.Fraction)
				return
			}
			e.SetThrottle(tr.Fraction, tr.Seed)
			reply(http.StatusOK, e.Faults())
		}
	case "faults/capacity":
		var rule CapacityRule
		if method(http.MethodPost) && decode(&rule) {
			if err := e.SetCapacity(rule); err != nil {
				fail(http.StatusBadRequest, "%v", err)
				return
			}
			reply(http.StatusOK, e.Faults())
		}
	case "faults/deny":
		var dr DenyRequest
		if method(http.MethodPost) && decode(&dr) {
			if err := e.DenyAction(dr.Action); err != nil {
				fail(http.StatusBadRequest, "%v", err)
				return
			}
			reply(http.StatusOK, e.Faults())
		}
	case "faults/event":
		var er ScheduleEventRequest
		if method(http.MethodPost) && decode(&er) {
			var in time.Duration
			if er.In != "" {
				d, err := time.ParseDuration(er.In)
				if err != nil {
					fail(http.StatusBadRequest, "in %q: %v", er.In, err)
					return
				}
				in = d
			}
			if _, err := e.ScheduleEvent(er.Target, er.Code, in); err != nil {
				fail(adminTargetStatus(err), "%v", err)
				return
			}
			reply(http.StatusOK, e.Faults())
		}
	case "faults/status-check":
		var sr StatusCheckRequest
		if method(http.MethodPost) && decode(&sr) {
			if err := e.SetStatusCheck(sr.Target, sr.Check, sr.Status); err != nil {
				fail(adminTargetStatus(err), "%v", err)
				return
			}
			reply(http.StatusOK, e.Faults())
		}
	case "faults/node":
		var nr NodeFaultRequest
		if method(http.MethodPost) && decode(&nr) {
			if err := e.SetNodeFault(nr.Target, nr.Fault); err != nil {
				fail(adminTargetStatus(err), "%v", err)
				return
			}
			reply(http.StatusOK, e.Faults())
		}
	case "fleets":
		if method(http.MethodGet) {
			reply(http.StatusOK, e.FleetRequests())
		}
	case "faults/clear":
		if method(http.MethodPost) {
			e.ClearFaults()
			reply(http.StatusOK, e.Faults())
		}
	case "interrupt":
		var ir InterruptRequest
		if method(http.MethodPost) && decode(&ir) {
			if err := e.Interrupt(ir.Target, ir.Kind); err != nil {
				fail(adminTargetStatus(err), "%v", err)
				return
			}
			reply(http.StatusOK, map[string]bool{"ok": true})
		}
	case "instances":
		if method(http.MethodGet) {
			reply(http.StatusOK, e.Instances())
		}
	case "calls":
		if method(http.MethodGet) {
			reply(http.StatusOK, e.Calls())
		}
	case "images/publish": // see images.go
		e.adminPublishImage(w, r)
	default:
		fail(http.StatusNotFound, "unknown admin path %s", r.URL.Path)
	}
}

// adminTargetStatus is the admin API's status for an error about an
// instance: 404 for an unknown one, 400 otherwise.
func adminTargetStatus(err error) int {
	if errors.Is(err, ErrUnknownTarget) {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

// AdminClient talks to a running emulator's admin API (for `dovetail local
// fault|interrupt`).
type AdminClient struct {
	// Endpoint is the emulator's base URL (AWS_ENDPOINT_URL).
	Endpoint string
	// Token is the emulator's admin token (Emulator.AdminToken; the local
	// stack's DIR/aws-admin-token). Without it every call fails with 401.
	Token string
	// HTTP is the client to use; nil means one with a 30 s timeout.
	HTTP *http.Client
}

// ErrAdmin wraps errors the admin API reports.
var ErrAdmin = errors.New("awsemu admin")

// AdminStatusError is an error answer of the admin API.
type AdminStatusError struct {
	Status  int
	Message string
}

func (e *AdminStatusError) Error() string {
	return fmt.Sprintf("%v: %s (HTTP %d)", ErrAdmin, e.Message, e.Status)
}

func (e *AdminStatusError) Unwrap() error { return ErrAdmin }

func (c *AdminClient) do(ctx context.Context, method, path string, in, out any) error {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Endpoint, "/")+adminPrefix+path, body)
	if err != nil {
		return fmt.Errorf("awsemu admin: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("awsemu admin: reaching the emulator at %s: %w", c.Endpoint, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("awsemu admin: reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var ae adminError
		if json.Unmarshal(b, &ae) != nil || ae.Error == "" {
			ae.Error = strings.TrimSpace(string(b))
		}
		return &AdminStatusError{Status: resp.StatusCode, Message: ae.Error}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("awsemu admin: decoding the answer of %s: %w", path, err)
		}
	}
	return nil
}

// Health checks that the emulator answers.
func (c *AdminClient) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, http.MethodGet, "health", nil, &h)
	return h, err
}

// InjectICE adds an insufficient-capacity rule.
func (c *AdminClient) InjectICE(ctx context.Context, rule ICERule) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/ice", rule, &f)
	return f, err
}

// SetThrottle throttles a fraction of API calls.
func (c *AdminClient) SetThrottle(ctx context.Context, fraction float64, seed int64) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/throttle", ThrottleRequest{Fraction: fraction, Seed: seed}, &f)
	return f, err
}

// SetCapacity adds a spare-capacity rule.
func (c *AdminClient) SetCapacity(ctx context.Context, rule CapacityRule) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/capacity", rule, &f)
	return f, err
}

// DenyAction makes an action fail as not authorized.
func (c *AdminClient) DenyAction(ctx context.Context, action string) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/deny", DenyRequest{Action: action}, &f)
	return f, err
}

// FleetRequests lists the recorded CreateFleet requests.
func (c *AdminClient) FleetRequests(ctx context.Context) ([]FleetRequest, error) {
	var out []FleetRequest
	err := c.do(ctx, http.MethodGet, "fleets", nil, &out)
	return out, err
}

// ClearFaults removes every injected fault.
func (c *AdminClient) ClearFaults(ctx context.Context) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/clear", struct{}{}, &f)
	return f, err
}

// Faults reads the injected faults.
func (c *AdminClient) Faults(ctx context.Context) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodGet, "faults", nil, &f)
	return f, err
}

// ScheduleEvent schedules an event for an instance (see
// Emulator.ScheduleEvent); in 0 means DefaultEventLead.
func (c *AdminClient) ScheduleEvent(ctx context.Context, target, code string, in time.Duration) (Faults, error) {
	req := ScheduleEventRequest{Target: target, Code: code}
	if in != 0 {
		req.In = in.String()
	}
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/event", req, &f)
	return f, err
}

// SetStatusCheck sets an instance's system or instance status check (see
// Emulator.SetStatusCheck).
func (c *AdminClient) SetStatusCheck(ctx context.Context, target, check, status string) (Faults, error) {
	var f Faults
	err := c.do(ctx, http.MethodPost, "faults/status-check", StatusCheckRequest{Target: target, Check: check, Status: status}, &f)
	return f, err
}

// NodeFaultRequest is the body of POST faults/node: the fault of the
// target instance's node, nil to clear it.
type NodeFaultRequest struct {
	Target string     `json:"target"`
	Fault  *NodeFault `json:"fault,omitempty"`
}

// SetNodeFault sets (nil: clears) the condition an instance's node
// reports (see Emulator.SetNodeFault).
func (c *AdminClient) SetNodeFault(ctx context.Context, target string, f *NodeFault) (Faults, error) {
	var out Faults
	err := c.do(ctx, http.MethodPost, "faults/node", NodeFaultRequest{Target: target, Fault: f}, &out)
	return out, err
}

// Interrupt sends an interruption (see Emulator.Interrupt).
func (c *AdminClient) Interrupt(ctx context.Context, target, kind string) error {
	return c.do(ctx, http.MethodPost, "interrupt", InterruptRequest{Target: target, Kind: kind}, nil)
}

// Instances lists the emulated instances.
func (c *AdminClient) Instances(ctx context.Context) ([]Instance, error) {
	var out []Instance
	err := c.do(ctx, http.MethodGet, "instances", nil, &out)
	return out, err
}

// Calls lists the recorded API calls.
func (c *AdminClient) Calls(ctx context.Context) ([]Call, error) {
	var out []Call
	err := c.do(ctx, http.MethodGet, "calls", nil, &out)
	return out, err
}
