package ctrlproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
)

// Identity the controller runs as: the ServiceAccount of config/rbac,
// authenticated with a client certificate from the control plane's CA, so
// RBAC treats it exactly as the in-cluster ServiceAccount.
const (
	ServiceAccountNamespace = "kube-system"
	ServiceAccountName      = "dovetail"
)

// User is the Kubernetes user name of the controller's identity.
var User = "system:serviceaccount:" + ServiceAccountNamespace + ":" + ServiceAccountName

// groups of a ServiceAccount, as the API server assigns them.
var groups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ServiceAccountNamespace}

// ReadyTimeout bounds a replica's start-up.
const ReadyTimeout = 2 * time.Minute

// StopGrace is how long a replica gets to exit after SIGTERM.
const StopGrace = 10 * time.Second

// Component runs `dovetail controller` as child processes of the local
// stack (see the package doc). Set the fields before Start.
type Component struct {
	// Binary is the dovetail executable; the running executable when
	// empty.
	Binary string
	// Replicas is how many controller processes run (1 when zero); with
	// more than one they elect a leader.
	Replicas int
	// None runs no controller at all (`local up --controller-replicas 0`:
	// the stack for another controller): Start and Stop do nothing.
	None bool
	// TimeScale returns the liveness time scale passed to the controller
	// (the emulator's time scale, read at Start); nil means 1.
	TimeScale func() float64
	// Env are extra environment variables of the controller (they win over
	// the component's own, e.g. BATCH_IDLE_DURATION=200ms); an empty value
	// removes the variable (the controller's default applies).
	Env map[string]string
	// Args are extra arguments after `controller`.
	Args []string
	// RBAC are the manifests applied before the first start (the
	// ClusterRole, Role, bindings and ServiceAccount); required unless
	// Kubeconfig is set.
	RBAC []byte
	// Kubeconfig, when set, supplies the controller's identity instead:
	// it returns the path of a kubeconfig (for example one holding a
	// ServiceAccount token whose RBAC someone else installed, such as the
	// Helm chart), and RBAC is not applied.
	Kubeconfig func(ctx context.Context, env stack.Env) (string, error)
	// Lease tunes leader election, which runs only with more than one
	// replica (a single replica runs with --leader-elect=false, so a
	// restart after a crash does not wait for the dead leader's lease).
	// Zero fields take the local defaults: 4 s lease, 3 s renew deadline,
	// 500 ms retry period.
	Lease Lease

	mu       sync.Mutex
	dir      string
	scale    float64
	vars     map[string]string // the component's own environment
	baseEnv  []string
	replicas []*Replica
	progress func(format string, args ...any)
}

var _ stack.Component = (*Component)(nil)

// Name implements stack.Component.
func (c *Component) Name() string { return "controller" }

// Lease is the leader election timing of the replicas.
type Lease struct {
	Duration, RenewDeadline, RetryPeriod time.Duration
}

// Local leader-election defaults: short, so a takeover after a crash
// takes seconds.
const (
	DefaultLeaseDuration      = 4 * time.Second
	DefaultLeaseRenewDeadline = 3 * time.Second
	DefaultLeaseRetryPeriod   = 500 * time.Millisecond
)

// Replica is one controller process.
type Replica struct {
	// Index is the replica's slot (0..Replicas-1).
	Index int
	// MetricsPort and HealthPort are its servers' ports on loopback.
	MetricsPort, HealthPort int
	// LogPath receives its stdout and stderr (appended across restarts).
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// PID is the process id.
func (r *Replica) PID() int { return r.cmd.Process.Pid }

// Exited is closed when the process has exited.
func (r *Replica) Exited() <-chan struct{} { return r.done }

// Err is the process's exit error, once Exited is closed.
func (r *Replica) Err() error { return r.err }

// MetricsURL is where its Prometheus metrics are served.
func (r *Replica) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", r.MetricsPort)
}

// PeakRSS reads the process's peak resident set size (VmHWM in
// /proc/PID/status), in bytes. It works only while the process runs, and
// only on Linux.
func (r *Replica) PeakRSS() (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", r.PID()))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fields := strings.Fields(rest)
			if len(fields) == 2 && fields[1] == "kB" {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, errors.New("no VmHWM line in /proc status")
}

// Start implements stack.Component: it applies the RBAC manifests, writes
// a kubeconfig for the controller's ServiceAccount identity, and starts the
// replicas with the AWS emulator's settings (DIR/aws.env), returning once
// each answers its readiness probe.
func (c *Component) Start(ctx context.Context, env stack.Env) error {
	if c.None {
		if env.Progress != nil {
			fmt.Fprintln(env.Progress, "controller: none started (--controller-replicas 0): no controller runs against this stack")
		}
		return nil
	}
	if len(c.RBAC) == 0 && c.Kubeconfig == nil {
		return errors.New("controller: no RBAC manifests to apply")
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	bin := c.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the dovetail executable: %w", err)
		}
		bin = exe
	}
	c.Binary = bin
	c.dir = filepath.Join(env.Dir, c.Name())
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return err
	}
	c.progress = func(format string, args ...any) {
		if env.Progress != nil {
			fmt.Fprintf(env.Progress, format+"\n", args...)
		}
	}
	var kubeconfig string
	if c.Kubeconfig != nil {
		var err error
		if kubeconfig, err = c.Kubeconfig(ctx, env); err != nil {
			return fmt.Errorf("the controller's kubeconfig: %w", err)
		}
	} else {
		apply := env.ControlPlane.Kubectl(ctx, "apply", "-f", "-")
		apply.Stdin = bytes.NewReader(c.RBAC)
		if out, err := apply.CombinedOutput(); err != nil {
			return fmt.Errorf("applying the controller's RBAC: %w: %s", err, strings.TrimSpace(string(out)))
		}
		var err error
		if kubeconfig, err = env.ControlPlane.KubeconfigFor(User, groups...); err != nil {
			return fmt.Errorf("writing the controller's kubeconfig: %w", err)
		}
	}
	aws, err := localaws.ReadEnv(env.Dir)
	if err != nil {
		return fmt.Errorf("the controller needs the AWS emulator, started before it: %w", err)
	}
	scale := 1.0
	if c.TimeScale != nil {
		scale = min(c.TimeScale(), 1)
	}
	vars := map[string]string{
		"KUBECONFIG":         kubeconfig,
		"CLUSTER_NAME":       env.ClusterName,
		"INTERRUPTION_QUEUE": aws[localaws.VarInterruptionQueue],
		"LOG_LEVEL":          "info",
	}
	c.scale = scale
	for k, v := range aws {
		if strings.HasPrefix(k, "AWS_") {
			vars[k] = v
		}
	}
	c.vars = vars
	c.baseEnv = mergeEnv(os.Environ(), c.withExtraEnv())

	c.replicas = make([]*Replica, c.Replicas)
	errs := make([]error, c.Replicas)
	var wg sync.WaitGroup
	for i := range c.Replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(ctx, i)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Stop(context.Background())
		return err
	}
	return nil
}

// withExtraEnv is the component's environment with Env on top.
func (c *Component) withExtraEnv() map[string]string {
	out := make(map[string]string, len(c.vars)+len(c.Env))
	for k, v := range c.vars {
		out[k] = v
	}
	for k, v := range c.Env {
		out[k] = v
	}
	return out
}

// mergeEnv returns base without the keys of vars (and without other
// KUBECONFIG/AWS settings a caller's shell may carry), plus vars, sorted.
func mergeEnv(base []string, vars map[string]string) []string {
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		// AWS_FEATURE_GATES is the controller's setting, not the SDK's.
		if _, ok := vars[k]; ok || (strings.HasPrefix(k, "AWS_") && k != "AWS_FEATURE_GATES") || k == "KUBECONFIG" {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if vars[k] != "" {
			out = append(out, k+"="+vars[k])
		}
	}
	return out
}

// start runs replica i and waits until it is ready.
func (c *Component) start(ctx context.Context, i int) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	metrics, health := ports[0], ports[1]
	logPath := filepath.Join(c.dir, fmt.Sprintf("replica-%d.log", i))
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	// The metrics and probe servers listen on loopback only: the stack is
	// a developer's machine, not a cluster network.
	args := append([]string{"controller", "--bind-address", "127.0.0.1", "--liveness-time-scale", strconv.FormatFloat(c.scale, 'g', -1, 64)}, c.leaderArgs()...)
	args = append(args, c.Args...)
	cmd := exec.Command(c.Binary, args...)
	cmd.Env = append(append([]string(nil), c.baseEnv...),
		"METRICS_PORT="+strconv.Itoa(metrics), "HEALTH_PROBE_PORT="+strconv.Itoa(health))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := spawn(cmd); err != nil {
		return fmt.Errorf("starting controller replica %d: %w", i, err)
	}
	r := &Replica{Index: i, MetricsPort: metrics, HealthPort: health, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	c.mu.Lock()
	c.replicas[i] = r
	c.mu.Unlock()
	if err := r.waitReady(ctx); err != nil {
		return fmt.Errorf("controller replica %d: %w\n%s", i, err, tail(logPath, 20))
	}
	c.progress("controller replica %d ready (pid %d, metrics %s, log %s)", i, r.PID(), r.MetricsURL(), logPath)
	return nil
}

// leaderArgs are the leader election flags for the replica count.
func (c *Component) leaderArgs() []string {
	if c.Replicas <= 1 {
		return []string{"--leader-elect=false"}
	}
	l := c.Lease
	if l.Duration <= 0 {
		l.Duration = DefaultLeaseDuration
	}
	if l.RenewDeadline <= 0 {
		l.RenewDeadline = DefaultLeaseRenewDeadline
	}
	if l.RetryPeriod <= 0 {
		l.RetryPeriod = DefaultLeaseRetryPeriod
	}
	return []string{"--leader-elect=true",
		"--leader-election-lease-duration", l.Duration.String(),
		"--leader-election-renew-deadline", l.RenewDeadline.String(),
		"--leader-election-retry-period", l.RetryPeriod.String()}
}

func (r *Replica) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	url := fmt.Sprintf("http://127.0.0.1:%d/readyz", r.HealthPort)
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-r.done:
			return fmt.Errorf("exited before it was ready: %v", r.err)
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %w", ReadyTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// Replica returns replica i (nil before Start).
func (c *Component) Replica(i int) *Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i < 0 || i >= len(c.replicas) {
		return nil
	}
	return c.replicas[i]
}

// Kill sends SIGKILL to replica i's process group and waits for it to
// exit (a crash, as far as the cluster can tell).
func (c *Component) Kill(i int) error {
	r := c.Replica(i)
	if r == nil {
		return fmt.Errorf("no controller replica %d", i)
	}
	_ = syscall.Kill(-r.PID(), syscall.SIGKILL)
	<-r.done
	return nil
}

// Restart starts a fresh process in slot i (whose process must have
// exited, e.g. after Kill) and waits until it is ready.
func (c *Component) Restart(ctx context.Context, i int) error {
	r := c.Replica(i)
	if r == nil {
		return fmt.Errorf("no controller replica %d", i)
	}
	select {
	case <-r.done:
	default:
		return fmt.Errorf("controller replica %d (pid %d) is still running", i, r.PID())
	}
	return c.start(ctx, i)
}

// Reconfigure stops every replica, lets change adjust the component
// (Replicas, Env, Args, Lease), and starts the replicas again, waiting
// until each is ready. The RBAC and identity are not re-applied.
func (c *Component) Reconfigure(ctx context.Context, change func(*Component)) error {
	if err := c.Stop(ctx); err != nil {
		return err
	}
	if change != nil {
		change(c)
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	c.baseEnv = mergeEnv(os.Environ(), c.withExtraEnv())
	c.mu.Lock()
	c.replicas = make([]*Replica, c.Replicas)
	c.mu.Unlock()
	errs := make([]error, c.Replicas)
	var wg sync.WaitGroup
	for i := range c.Replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(ctx, i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Stop implements stack.Component: SIGTERM to every replica, SIGKILL
// after StopGrace.
func (c *Component) Stop(ctx context.Context) error {
	c.mu.Lock()
	rs := append([]*Replica(nil), c.replicas...)
	c.mu.Unlock()
	for _, r := range rs {
		if r != nil {
			_ = syscall.Kill(-r.PID(), syscall.SIGTERM)
		}
	}
	var errs []error
	deadline := time.Now().Add(StopGrace)
	for _, r := range rs {
		if r == nil {
			continue
		}
		t := time.NewTimer(max(time.Until(deadline), 0))
		select {
		case <-r.done:
		case <-t.C:
			_ = syscall.Kill(-r.PID(), syscall.SIGKILL)
			<-r.done
			errs = append(errs, fmt.Errorf("controller replica %d did not stop within %s; killed", r.Index, StopGrace))
		case <-ctx.Done():
			_ = syscall.Kill(-r.PID(), syscall.SIGKILL)
			<-r.done
		}
		t.Stop()
	}
	return errors.Join(errs...)
}

// freePorts returns n distinct free loopback ports: each is held until
// all are picked (picked one at a time, two could be the same port, and
// the controller refuses a health port equal to its metrics port).
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
