package awsemu

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
)

// Defaults of Options.
const (
	DefaultClusterName       = "local"
	DefaultRegion            = "us-east-1"
	DefaultKubernetesVersion = "1.37"
	DefaultAccountID         = "111122223333"
	DefaultAddr              = "127.0.0.1:0"
	DefaultServiceCIDR       = "10.100.0.0/16"
	// DefaultZones is how many zones the seeded VPC has subnets in when
	// Options.Zones is 0 (every zone of a region with fewer).
	DefaultZones = 3

	// DefaultBootDelay is the base pending->running delay; each instance
	// adds a seeded 0..1 s on top (all x TimeScale).
	DefaultBootDelay = time.Second
	// DefaultShutdownDelay is the shutting-down->terminated delay.
	DefaultShutdownDelay = time.Second
	// DefaultTerminatedRetention is how long a terminated instance stays
	// visible to DescribeInstances (AWS: about an hour).
	DefaultTerminatedRetention = 5 * time.Minute
	// SpotInterruptionNotice is the lead time of a spot interruption
	// warning before the instance is terminated (x TimeScale).
	SpotInterruptionNotice = 2 * time.Minute
)

// Options configure an emulator. The zero value is usable.
type Options struct {
	// ClusterName names the seeded account's cluster: discovery tags, the
	// EKS cluster, the interruption queue. Default "local".
	ClusterName string
	// Region is the only region the emulator serves. Default "us-east-1".
	Region string
	// KubernetesVersion (major.minor) selects the EKS AMI alias SSM
	// parameters and the EKS cluster version. Default "1.37".
	KubernetesVersion string
	// AccountID is the account that owns everything. Default 111122223333.
	AccountID string
	// TimeScale multiplies every emulated delay (boot, shutdown, spot
	// notice, terminated retention). Default 1; 0.01 makes a 2-minute spot
	// notice 1.2 s.
	TimeScale float64
	// Clock is the emulator's time source (instance launch times, delays,
	// SQS visibility and long polls). Default: the real clock.
	Clock clock.Clock
	// Seed seeds every pseudo-random choice (ids, boot jitter, IPs).
	Seed int64
	// Addr is the loopback address to listen on. Default 127.0.0.1:0.
	// Anything but a loopback IP (127.0.0.0/8, ::1) or "localhost" is
	// refused: the emulator takes any credentials.
	Addr string
	// AdminToken is the secret the admin API (/_dovetail/) requires as
	// "Authorization: Bearer TOKEN". Default: 32 random bytes, hex, drawn
	// from crypto/rand (not from Seed). Read it with Emulator.AdminToken.
	AdminToken string
	// Catalog is the EC2 data to serve. Default: the built-in catalog.
	Catalog Catalog
	// Zones is how many of the region's zones (the first ones, by name)
	// the seeded VPC has a subnet in: 1 to the region's zone count. 0 means
	// DefaultZones (3), or every zone of a region with fewer. Up to 3 zones
	// get /18 subnets (10.0.0.0/18, 10.0.64.0/18, 10.0.128.0/18); more get
	// /19s (10.0.0.0/19, 10.0.32.0/19, ...; /20s beyond 8 zones), so they
	// never overlap inside the VPC's 10.0.0.0/16. Options returns the
	// effective count.
	Zones int

	// BootDelay overrides DefaultBootDelay (before TimeScale).
	BootDelay time.Duration
	// ShutdownDelay overrides DefaultShutdownDelay (before TimeScale).
	ShutdownDelay time.Duration
	// TerminatedRetention overrides DefaultTerminatedRetention (before
	// TimeScale).
	TerminatedRetention time.Duration

	// ClusterEndpoint is the API server URL EKS DescribeCluster returns;
	// ClusterCA its PEM certificate authority. Both can be set later with
	// SetCluster.
	ClusterEndpoint string
	ClusterCA       []byte
	// ServiceCIDR is the cluster's service IPv4 CIDR. Default 10.100.0.0/16.
	ServiceCIDR string

	// Log receives one line per failed request and per lifecycle event at
	// V(1). Credentials are never logged. Default: discard.
	Log logr.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.Region == "" {
		o.Region = DefaultRegion
	}
	if o.KubernetesVersion == "" {
		o.KubernetesVersion = DefaultKubernetesVersion
	}
	if o.AccountID == "" {
		o.AccountID = DefaultAccountID
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if o.TimeScale < 0 {
		return o, fmt.Errorf("awsemu: options: TimeScale %v must be positive", o.TimeScale)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Addr == "" {
		o.Addr = DefaultAddr
	}
	if err := checkLoopback(o.Addr); err != nil {
		return o, err
	}
	if o.AdminToken == "" {
		tok, err := newAdminToken()
		if err != nil {
			return o, err
		}
		o.AdminToken = tok
	} else if len(o.AdminToken) < minAdminToken {
		return o, fmt.Errorf("awsemu: options: AdminToken has %d characters, want at least %d", len(o.AdminToken), minAdminToken)
	}
	if o.BootDelay == 0 {
		o.BootDelay = DefaultBootDelay
	}
	if o.ShutdownDelay == 0 {
		o.ShutdownDelay = DefaultShutdownDelay
	}
	if o.TerminatedRetention == 0 {
		o.TerminatedRetention = DefaultTerminatedRetention
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = DefaultServiceCIDR
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return o, nil
}

// Call is one recorded API call.
type Call struct {
	// Service is the service's signing name: ec2, iam, ssm, sqs, pricing, eks.
	Service string `json:"service"`
	// Action is "service:Operation" as IAM policies spell it, e.g.
	// "ec2:CreateFleet".
	Action string `json:"action"`
	// Time is when the call arrived (emulator clock).
	Time time.Time `json:"time"`
	// ErrorCode is the AWS error code answered, "" on success.
	ErrorCode string `json:"errorCode,omitempty"`
}

// Emulator is a running local AWS. All methods are safe for concurrent use.
type Emulator struct {
	opts     Options
	clock    clock.Clock
	log      logr.Logger
	catalog  Catalog
	listener net.Listener
	server   *http.Server
	endpoint string

	closeOnce sync.Once
	closed    chan struct{}
	wake      chan struct{}
	done      chan struct{}

	// nodeGroups are the seeded EKS managed and self-managed node groups.
	nodeGroups nodeGroupStore

	mu sync.Mutex
	// everything below is guarded by mu
	rng     *rand.Rand
	reqSeq  uint64
	calls   []Call
	callGen int // bumped by ResetCalls
	faults  faultState
	// capacity are the capacity rules set (see capacity.go); fleetLog the
	// CreateFleet requests recorded.
	capacity []CapacityRule
	fleetLog []FleetRequest
	acct     *account
	schedule timerHeap
	subs     map[int]*subscriber
	subSeq   int
	// productCache is the Pricing API's product list, built on first use.
	productCache []product
	// typeIndex maps instance type names to the catalog's types.
	typeIndex map[string]*InstanceTypeInfo

	// events are the EventBridge rules (events.go) and accessEntries the
	// EKS access entries (accessentries.go); each has its own lock.
	eventsOnce    sync.Once
	events        *eventsState
	accessOnce    sync.Once
	accessEntries *accessEntryState
}

// Start seeds the account and starts serving on opts.Addr. The emulator
// stops when ctx is done or Close is called.
func Start(ctx context.Context, opts Options) (*Emulator, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cat := opts.Catalog
	if cat == nil {
		cat, err = BuiltinCatalog()
		if err != nil {
			return nil, fmt.Errorf("awsemu: loading the built-in catalog: %w", err)
		}
	}
	if len(cat.Zones(opts.Region)) == 0 {
		return nil, fmt.Errorf("awsemu: options: region %q has no zones in the catalog", opts.Region)
	}
	if opts.Zones, err = zoneCount(opts.Zones, opts.Region, len(cat.Zones(opts.Region))); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("awsemu: listen on %s: %w", opts.Addr, err)
	}
	e := &Emulator{
		opts:     opts,
		clock:    opts.Clock,
		log:      opts.Log,
		catalog:  cat,
		listener: ln,
		endpoint: "http://" + ln.Addr().String(),
		closed:   make(chan struct{}),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x646f7665)),
		subs:     map[int]*subscriber{},
	}
	e.typeIndex = map[string]*InstanceTypeInfo{}
	all := cat.InstanceTypes()
	for i := range all {
		e.typeIndex[all[i].Name] = &all[i]
	}
	e.acct = newAccount(e)
	e.server = &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.server.Serve(ln) }()
	go e.run()
	go func() {
		select {
		case <-ctx.Done():
			_ = e.Close()
		case <-e.closed:
		}
	}()
	return e, nil
}

// Endpoint is the base URL of every service, for AWS_ENDPOINT_URL and the
// SDK's BaseEndpoint: http://127.0.0.1:PORT.
func (e *Emulator) Endpoint() string { return e.endpoint }

// Options returns the effective options (defaults filled in).
func (e *Emulator) Options() Options { return e.opts }

// Close stops serving; pending long polls return. It is idempotent.
func (e *Emulator) Close() error {
	var err error
	e.closeOnce.Do(func() {
		close(e.closed)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = e.server.Shutdown(ctx)
		<-e.done
		e.mu.Lock()
		for id, s := range e.subs {
			s.close()
			delete(e.subs, id)
		}
		e.mu.Unlock()
	})
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Calls returns every API call recorded so far, in arrival order.
func (e *Emulator) Calls() []Call {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Call(nil), e.calls...)
}

// ResetCalls forgets the recorded calls.
func (e *Emulator) ResetCalls() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = nil
	e.callGen++
}

// SetCluster sets what EKS DescribeCluster reports as the API server
// endpoint and its PEM certificate authority.
func (e *Emulator) SetCluster(endpoint string, caPEM []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.opts.ClusterEndpoint = endpoint
	e.opts.ClusterCA = append([]byte(nil), caPEM...)
}

// scaled applies TimeScale to an emulated delay.
func (e *Emulator) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * e.opts.TimeScale)
}

// maxBody bounds request bodies (AWS's own limits are lower).
const maxBody = 16 << 20

// ServeHTTP routes a request to the admin API or to a service by its
// protocol: X-Amz-Target for the JSON protocols, the path for EKS REST,
// the SigV4 credential scope (or the Version parameter) for EC2 vs IAM.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, adminPrefix) {
		e.serveAdmin(w, r)
		return
	}
	if msg := e.apiHostRefused(r.Host); msg != "" {
		e.log.V(1).Info("AWS API request refused", "path", r.URL.Path, "host", r.Host)
		http.Error(w, msg, http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "reading request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &request{
		ctx:       r.Context(),
		httpReq:   r,
		body:      body,
		scopeSvc:  signingService(r.Header.Get("Authorization")),
		requestID: e.newRequestID(),
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		svc, op, ok := strings.Cut(target, ".")
		if !ok {
			writeJSONError(w, req, &apiError{Code: "UnknownOperationException", Message: "malformed X-Amz-Target " + target})
			return
		}
		req.action = op
		switch svc {
		case "AmazonSSM":
			req.service = "ssm"
			e.serveJSON(w, req, "1.1", ssmOps)
		case "AmazonSQS":
			req.service = "sqs"
			e.serveJSON(w, req, "1.0", sqsOps)
		case "AWSPriceListService":
			req.service = "pricing"
			e.serveJSON(w, req, "1.1", pricingOps)
		case "AWSEvents": // events.go
			req.service = "events"
			e.serveJSON(w, req, "1.1", eventsOps)
		default:
			writeJSONError(w, req, &apiError{Code: "UnknownOperationException", Message: "unknown service target " + svc})
		}
		return
	}
	if strings.HasPrefix(r.URL.Path, "/clusters") {
		req.service = "eks"
		e.serveEKS(w, req)
		return
	}
	form, err := parseForm(r, body)
	if err != nil {
		writeEC2Error(w, req, newAPIError("MalformedQueryString", 400, "%v", err))
		return
	}
	req.params = newParams(form)
	req.action = form.Get("Action")
	switch {
	case req.scopeSvc == "autoscaling": // nodegroups.go
		req.service = "autoscaling"
		e.serveAutoScaling(w, req)
	case req.scopeSvc == "iam" || form.Get("Version") == iamVersion:
		req.service = "iam"
		e.serveQuery(w, req)
	case req.scopeSvc == "ec2" || form.Get("Version") == ec2Version || req.scopeSvc == "":
		req.service = "ec2"
		e.serveEC2(w, req)
	default:
		http.Error(w, fmt.Sprintf("awsemu: service %q is not emulated", req.scopeSvc), http.StatusNotFound)
	}
}

// request is one decoded API request.
type request struct {
	ctx       context.Context
	httpReq   *http.Request
	service   string
	action    string
	scopeSvc  string
	body      []byte
	params    params
	requestID string
	// callIdx and callGen locate this request's entry in Emulator.calls.
	callIdx, callGen int
}

// signingService extracts the service name from a SigV4 Authorization
// header's credential scope (Credential=AKID/DATE/REGION/SERVICE/aws4_request).
// Nothing else of the header is looked at or kept.
func signingService(auth string) string {
	_, rest, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, ", "); i >= 0 {
		rest = rest[:i]
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 5 {
		return ""
	}
	return parts[len(parts)-2]
}

func parseForm(r *http.Request, body []byte) (url.Values, error) {
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range r.URL.Query() {
		v[k] = append(v[k], vs...)
	}
	return v, nil
}

// begin records the call, applies throttling and advances instance states.
// A non-nil error is the throttling error to answer with.
func (e *Emulator) begin(req *request) *apiError {
	e.advance()
	e.mu.Lock()
	defer e.mu.Unlock()
	req.callIdx, req.callGen = len(e.calls), e.callGen
	e.calls = append(e.calls, Call{
		Service: req.service,
		Action:  req.service + ":" + req.action,
		Time:    e.clock.Now(),
	})
	if e.faults.throttled() {
		return throttleError(req.service)
	}
	if action := req.service + ":" + req.action; e.faults.denied[action] {
		return deniedError(req.service, action)
	}
	return nil
}

// finish records the outcome of the last call of this request.
func (e *Emulator) finish(req *request, aerr *apiError) {
	if aerr == nil {
		return
	}
	e.log.V(1).Info("request failed", "action", req.service+":"+req.action, "code", aerr.Code, "message", aerr.Message)
	e.mu.Lock()
	defer e.mu.Unlock()
	if req.callGen != e.callGen || req.callIdx >= len(e.calls) {
		return // ResetCalls ran in between
	}
	c := &e.calls[req.callIdx]
	c.ErrorCode = aerr.Code
	if aerr.QueryCode != "" {
		c.ErrorCode = aerr.QueryCode
	}
}

func throttleError(service string) *apiError {
	switch service {
	case "ec2":
		return newAPIError("RequestLimitExceeded", http.StatusServiceUnavailable, "Request limit exceeded.")
	case "iam":
		return newAPIError("Throttling", http.StatusBadRequest, "Rate exceeded")
	case "sqs":
		return &apiError{Code: "RequestThrottled", QueryCode: "RequestThrottled", Status: 400, Message: "Rate exceeded"}
	case "eks":
		return newAPIError("ThrottlingException", http.StatusTooManyRequests, "Rate exceeded")
	default:
		return newAPIError("ThrottlingException", http.StatusBadRequest, "Rate exceeded")
	}
}

func (e *Emulator) newRequestID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.reqSeq++
	return uuidFrom(uint64(e.opts.Seed)^0x9e3779b97f4a7c15, e.reqSeq)
}

// uuidFrom formats a deterministic version-4-shaped UUID.
func uuidFrom(a, b uint64) string {
	x := splitmix(a ^ splitmix(b))
	y := splitmix(x ^ b)
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x",
		uint32(x>>32), uint16(x>>16), uint16(x)&0x0fff, (uint16(y>>48)&0x3fff)|0x8000, y&0xffffffffffff)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// newID returns "prefix-0" followed by 16 seeded hex digits, the shape of
// EC2 ids (i-0123..., lt-0123...). Callers hold mu.
func (e *Emulator) newID(prefix string) string {
	return fmt.Sprintf("%s-0%016x", prefix, e.rng.Uint64())
}

// run is the timer loop: it applies due instance transitions.
func (e *Emulator) run() {
	defer close(e.done)
	for {
		next, ok := e.advance()
		var timer clock.Timer
		var fire <-chan time.Time
		if ok {
			timer = e.clock.NewTimer(next.Sub(e.clock.Now()))
			fire = timer.C()
		}
		select {
		case <-e.closed:
			if timer != nil {
				timer.Stop()
			}
			return
		case <-e.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// poke wakes the timer loop after a new transition was scheduled.
func (e *Emulator) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
