package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options selects what Start runs.
type Options struct {
	// Dir holds certificates, etcd data, logs and kubeconfig files. When
	// empty, Start uses a new temporary directory that Close removes. A
	// given Dir is locked for the life of the control plane, and whatever a
	// previous control plane left in it is discarded: every Start begins
	// with an empty cluster.
	Dir string
	// ControllerManager also runs kube-controller-manager with the
	// controllers a workload needs: Deployments, ReplicaSets, StatefulSets,
	// DaemonSets, Jobs and CronJobs, PDB status (disruption), the garbage
	// collector, namespaces, service accounts and their tokens, node
	// lifecycle (taints of not-ready nodes), taint-based eviction and pod GC.
	// Without it the ServiceAccount admission plugin is off too, since
	// nothing would create the service accounts it insists on.
	ControllerManager bool
	// Scheduler also runs kube-scheduler.
	Scheduler bool
	// SchedulerConfig, when set, is a KubeSchedulerConfiguration (YAML or
	// JSON) kube-scheduler runs with, e.g. with profiles carrying
	// PodTopologySpread defaultConstraints. Its clientConnection.kubeconfig
	// is replaced by the control plane's and leader election is turned off
	// (SchedulerConfigFor); the rest is kube-scheduler's to accept.
	SchedulerConfig []byte
	// Kwok also runs kwok, playing the kubelet of every Node: nodes become
	// Ready and keep their lease, pods bound to them run, deleted pods go.
	Kwok bool
	// SkipCRDs skips installing dovetail's CRDs. By default Start installs
	// them and waits until they are Established.
	SkipCRDs bool
	// Progress receives human progress lines; nil discards them.
	Progress io.Writer
	// ClusterName names the cluster, context and user entries of the
	// kubeconfig files; "dovetail" when empty.
	ClusterName string
	// AuditUsers, when set, turns on kube-apiserver's audit log
	// (AuditLogPath): one JSON line (level Metadata, at ResponseComplete)
	// per request of these users, none for anyone else, so that requests
	// can be counted on the server side, by user agent (CountAudit).
	AuditUsers []string
}

// ControlPlane is a running set of control-plane processes. Its methods are
// safe for concurrent use.
type ControlPlane struct {
	opts     Options
	progress io.Writer
	dir      string
	tempDir  bool
	binDir   string
	lock     *DirLock
	group    group
	pki      *pki

	etcdURL    string
	apiURL     string
	servingCrt string
	servingKey string
	saKey      string
	saPub      string
	admin      *rest.Config
	kubeconfig string

	closing   chan struct{} // closed when Close begins
	exited    chan struct{} // closed when a component dies on its own
	exitOnce  sync.Once
	exitErr   error
	closeOnce sync.Once
	closeErr  error
}

// Layout of Dir.
const (
	lockFile      = ".lock"
	tempDirPrefix = "dovetail-controlplane-"
)

// Tiers of processes: Close stops higher tiers first.
const (
	tierStorage = iota
	tierAPI
	tierClient
)

// Network ranges of the simulated cluster.
const (
	serviceCIDR = "10.96.0.0/16"
	podCIDR     = "10.0.0.0/16"
)

// componentTimeout bounds how long one component may take to become ready
// (generous: the machine may be busy with other work).
const componentTimeout = 2 * time.Minute

// Start starts etcd and kube-apiserver, then, in parallel, the optional
// components and the CRD installation, and returns once everything is
// ready. ctx bounds start-up only; the control plane runs until Close.
// On failure everything started is stopped again and the error names the
// failing component and ends with the tail of its log (see StartError).
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	begin := time.Now()
	c := &ControlPlane{opts: opts, progress: io.Discard, closing: make(chan struct{}), exited: make(chan struct{})}
	if opts.Progress != nil {
		// Components start in parallel: keep their lines whole.
		c.progress = &syncWriter{w: opts.Progress}
	}
	if c.opts.ClusterName == "" {
		c.opts.ClusterName = "dovetail"
	}
	if err := c.start(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	c.watch()
	c.logf("control plane ready in %s (kubeconfig %s)", since(begin), c.kubeconfig)
	return c, nil
}

// watch notices a component that ends while the control plane should be
// running.
func (c *ControlPlane) watch() {
	c.group.mu.Lock()
	defer c.group.mu.Unlock()
	for _, p := range c.group.members {
		if p.exited() {
			continue
		}
		go func() {
			select {
			case <-c.closing:
			case <-p.done:
				select {
				case <-c.closing:
					return
				default:
				}
				c.exitOnce.Do(func() {
					c.exitErr = &ExitError{Component: p.name, Err: p.waitErr, Log: p.logPath, LogTail: p.logTail(30)}
					close(c.exited)
				})
			}
		}()
	}
}

// Exited is closed when a component ends on its own (it crashed or was
// killed by someone else); Err then says which. Close does not close it.
func (c *ControlPlane) Exited() <-chan struct{} { return c.exited }

// Err returns an *ExitError once Exited is closed, nil before.
func (c *ControlPlane) Err() error {
	select {
	case <-c.exited:
		return c.exitErr
	default:
		return nil
	}
}

// ExitError reports a component that ended while the control plane was
// running.
type ExitError struct {
	Component string
	Err       error // its exit status
	Log       string
	LogTail   string
}

func (e *ExitError) Error() string {
	return fmt.Sprintf("%s exited unexpectedly: %v\n--- last lines of %s ---\n%s", e.Component, e.Err, e.Log, e.LogTail)
}

func (e *ExitError) Unwrap() error { return e.Err }

func (c *ControlPlane) start(ctx context.Context) error {
	binDir, err := ResolveBinDir(ctx, c.progress)
	if err != nil {
		return err
	}
	c.binDir = binDir
	if err := c.prepareDir(); err != nil {
		return err
	}
	if err := c.writeCredentials(); err != nil {
		return err
	}
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}

	// Everything else only needs the API server: start it all at once.
	var steps []func(context.Context) error
	if c.opts.ControllerManager {
		steps = append(steps, c.startControllerManager)
	}
	if c.opts.Scheduler {
		steps = append(steps, c.startScheduler)
	}
	if c.opts.Kwok {
		steps = append(steps, c.startKwok)
	}
	if !c.opts.SkipCRDs {
		steps = append(steps, c.installCRDs)
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = step(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if c.opts.ControllerManager {
		// Pods are refused until their namespace's "default" service
		// account exists; wait until kube-controller-manager made it.
		if err := c.waitDefaultServiceAccount(ctx); err != nil {
			return err
		}
	}
	return nil
}

// prepareDir creates (or takes over and empties) the working directory and
// locks it.
func (c *ControlPlane) prepareDir() error {
	if c.opts.Dir == "" {
		sweepTempDirs(c.binDir)
		d, err := os.MkdirTemp("", tempDirPrefix)
		if err != nil {
			return err
		}
		c.dir, c.tempDir = d, true
	} else {
		d, err := filepath.Abs(c.opts.Dir)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		c.dir = d
	}
	lock, err := LockDir(c.dir, filepath.Join(c.dir, lockFile))
	if err != nil {
		return err
	}
	c.lock = lock
	// A previous control plane in this directory is dead (we hold its
	// lock), but the kernel may still be delivering the death signal to its
	// children.
	killStale(c.dir, c.binDir)
	for _, sub := range []string{"etcd", "pki", "logs", "config", "kubeconfigs", "kubeconfig", "kubectl-cache"} {
		if err := os.RemoveAll(filepath.Join(c.dir, sub)); err != nil {
			return fmt.Errorf("cleaning %s: %w", c.dir, err)
		}
	}
	for _, sub := range []string{"etcd", "logs", "config", "kubeconfigs"} {
		if err := os.MkdirAll(filepath.Join(c.dir, sub), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// sweepTempDirs removes the temporary directories of control planes whose
// process died without Close (kill -9, test timeout): their lock is free.
func sweepTempDirs(binDir string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, d := range dirs {
		lockPath := filepath.Join(d, lockFile)
		if _, err := os.Stat(lockPath); err != nil {
			// Not locked yet: either just being created by another process,
			// or abandoned long ago.
			if fi, err := os.Stat(d); err != nil || time.Since(fi.ModTime()) < 10*time.Minute {
				continue
			}
		}
		l, err := LockDir(d, lockPath)
		if err != nil {
			continue
		}
		killStale(d, binDir)
		_ = os.RemoveAll(d)
		_ = l.Unlock()
	}
}

// writeCredentials creates the CA, the serving certificate, the
// service-account keys and the admin kubeconfig.
func (c *ControlPlane) writeCredentials() error {
	p, err := newPKI(filepath.Join(c.dir, "pki"))
	if err != nil {
		return err
	}
	c.pki = p
	c.servingCrt, c.servingKey, err = p.servingCert("serving", net.IPv4(10, 96, 0, 1))
	if err != nil {
		return err
	}
	c.saKey, c.saPub, err = p.serviceAccountKeys()
	return err
}

// startEtcd runs a single-member etcd with fsync off: the data is
// throw-away, and fsync is most of etcd's write latency.
func (c *ControlPlane) startEtcd(ctx context.Context) error {
	_, err := c.launch(ctx, component{
		name:  "etcd",
		tier:  tierStorage,
		ports: 3,
		args: func(p []int) []string {
			client := fmt.Sprintf("http://127.0.0.1:%d", p[0])
			peer := fmt.Sprintf("http://127.0.0.1:%d", p[1])
			return []string{
				"--name=dovetail",
				"--data-dir=" + filepath.Join(c.dir, "etcd"),
				"--listen-client-urls=" + client,
				"--advertise-client-urls=" + client,
				"--listen-peer-urls=" + peer,
				"--initial-advertise-peer-urls=" + peer,
				"--initial-cluster=dovetail=" + peer,
				"--initial-cluster-state=new",
				fmt.Sprintf("--listen-metrics-urls=http://127.0.0.1:%d", p[2]),
				"--unsafe-no-fsync=true",
				// One member elects itself; short ticks make that quick.
				"--heartbeat-interval=10",
				"--election-timeout=100",
				"--log-level=warn",
			}
		},
		ready: func(ctx context.Context, p []int) error {
			return probe(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/health", p[0]), `"health":"true"`)
		},
		onReady: func(p []int) { c.etcdURL = fmt.Sprintf("http://127.0.0.1:%d", p[0]) },
	})
	return err
}

// The admission plugins the API server runs. The rest of the default set
// (pod security, storage classes, certificates, runtime classes, ...) is
// off: nothing in a simulated cluster needs it and it slows start-up.
// MutatingAdmissionPolicy runs the disruption controller's placement gate
// (docs/disruption.md), as it does on a real v1.36+ cluster.
var admissionPlugins = []string{
	"NamespaceLifecycle", "TaintNodesByCondition", "Priority", "DefaultTolerationSeconds",
	"ResourceQuota", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook", "ValidatingAdmissionPolicy",
	"MutatingAdmissionPolicy",
}

var disabledAdmissionPlugins = []string{
	"LimitRanger", "PodSecurity", "DefaultStorageClass", "StorageObjectInUseProtection",
	"PodGroupProtection", "PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval",
	"CertificateSigning", "ClusterTrustBundleAttest", "CertificateSubjectRestriction",
	"DefaultIngressClass", "PodTopologyLabels", "NodeDeclaredFeatureValidator", "PodResizeValidator",
}

func (c *ControlPlane) startAPIServer(ctx context.Context) error {
	if err := c.writeAuditPolicy(); err != nil {
		return err
	}
	enabled := append([]string(nil), admissionPlugins...)
	disabled := append([]string(nil), disabledAdmissionPlugins...)
	if c.opts.ControllerManager {
		// Only kube-controller-manager creates the service accounts this
		// plugin insists on.
		enabled = append(enabled, "ServiceAccount")
	} else {
		disabled = append(disabled, "ServiceAccount")
	}
	_, err := c.launch(ctx, component{
		name:  "kube-apiserver",
		tier:  tierAPI,
		ports: 1,
		args: func(p []int) []string {
			return append([]string{
				"--etcd-servers=" + c.etcdURL,
				"--bind-address=127.0.0.1",
				"--advertise-address=127.0.0.1",
				// Nothing in the cluster dials the API through the kubernetes
				// service, and its endpoint may not be a loopback address.
				"--endpoint-reconciler-type=none",
				"--secure-port=" + strconv.Itoa(p[0]),
				"--tls-cert-file=" + c.servingCrt,
				"--tls-private-key-file=" + c.servingKey,
				"--client-ca-file=" + c.pki.caFile(),
				"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
				"--service-account-key-file=" + c.saPub,
				"--service-account-signing-key-file=" + c.saKey,
				"--service-cluster-ip-range=" + serviceCIDR,
				"--authorization-mode=RBAC",
				"--enable-admission-plugins=" + strings.Join(enabled, ","),
				"--disable-admission-plugins=" + strings.Join(disabled, ","),
				"--allow-privileged=true",
				"--enable-priority-and-fairness=false",
				"--max-requests-inflight=2000",
				"--max-mutating-requests-inflight=1000",
				"--profiling=false",
				"--cert-dir=" + filepath.Join(c.dir, "pki"),
			}, c.auditArgs()...)
		},
		ready: func(ctx context.Context, p []int) error {
			url := fmt.Sprintf("https://127.0.0.1:%d", p[0])
			cfg := c.adminConfigFor(url)
			client, err := rest.HTTPClientFor(cfg)
			if err != nil {
				return err
			}
			return probe(ctx, client, url+"/readyz", "ok")
		},
		onReady: func(p []int) { c.apiURL = fmt.Sprintf("https://127.0.0.1:%d", p[0]) },
	})
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := c.pki.clientCert("dovetail-admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	c.admin = c.restConfig(certPEM, keyPEM)
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	return c.writeKubeconfig(c.kubeconfig, "admin", certPEM, keyPEM)
}

// componentKubeconfig writes a kubeconfig for a component identity.
func (c *ControlPlane) componentKubeconfig(name, user string, groups ...string) (string, error) {
	certPEM, keyPEM, err := c.pki.clientCert(user, groups)
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.dir, "kubeconfigs", name+".kubeconfig")
	return path, c.writeKubeconfig(path, user, certPEM, keyPEM)
}

// The controllers kube-controller-manager runs (see Options.ControllerManager).
var controllers = []string{
	"deployment-controller", "replicaset-controller", "statefulset-controller", "daemonset-controller",
	"job-controller", "cronjob-controller", "ttl-after-finished-controller", "disruption-controller",
	"garbage-collector-controller", "namespace-controller", "serviceaccount-controller",
	"serviceaccount-token-controller", "root-ca-certificate-publisher-controller",
	"clusterrole-aggregation-controller", "node-lifecycle-controller", "taint-eviction-controller",
	"pod-garbage-collector-controller", "resourcequota-controller",
}

func (c *ControlPlane) startControllerManager(ctx context.Context) error {
	// The controller manager's own identity is cluster-admin: it saves
	// creating a service account per controller at start-up, and the
	// controllers' permissions are not what dovetail tests.
	kc, err := c.componentKubeconfig("kube-controller-manager", "system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	_, err = c.launch(ctx, component{
		name:  "kube-controller-manager",
		tier:  tierClient,
		ports: 1,
		args: func(p []int) []string {
			return []string{
				"--kubeconfig=" + kc,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(p[0]),
				"--tls-cert-file=" + c.servingCrt,
				"--tls-private-key-file=" + c.servingKey,
				"--leader-elect=false",
				"--controllers=" + strings.Join(controllers, ","),
				"--service-account-private-key-file=" + c.saKey,
				"--root-ca-file=" + c.pki.caFile(),
				"--use-service-account-credentials=false",
				"--kube-api-qps=500",
				"--kube-api-burst=1000",
				"--profiling=false",
			}
		},
		ready: func(ctx context.Context, p []int) error {
			return probe(ctx, c.tlsProbeClient(), fmt.Sprintf("https://127.0.0.1:%d/healthz", p[0]), "ok")
		},
	})
	return err
}

func (c *ControlPlane) startScheduler(ctx context.Context) error {
	kc, err := c.componentKubeconfig("kube-scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	cfg := filepath.Join(c.dir, "config", "kube-scheduler.yaml")
	data, err := SchedulerConfigFor(c.opts.SchedulerConfig, kc)
	if err != nil {
		return err
	}
	if err := os.WriteFile(cfg, data, 0o644); err != nil {
		return err
	}
	_, err = c.launch(ctx, component{
		name:  "kube-scheduler",
		tier:  tierClient,
		ports: 1,
		args: func(p []int) []string {
			return []string{
				"--config=" + cfg,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(p[0]),
				"--tls-cert-file=" + c.servingCrt,
				"--tls-private-key-file=" + c.servingKey,
			}
		},
		ready: func(ctx context.Context, p []int) error {
			return probe(ctx, c.tlsProbeClient(), fmt.Sprintf("https://127.0.0.1:%d/healthz", p[0]), "ok")
		},
	})
	return err
}

func (c *ControlPlane) startKwok(ctx context.Context) error {
	// kwok acts for every kubelet at once, so it gets cluster-admin rather
	// than the per-node identities the Node authorizer would want.
	kc, err := c.componentKubeconfig("kwok", "kwok-controller", "system:masters")
	if err != nil {
		return err
	}
	cfg := filepath.Join(c.dir, "config", "kwok.yaml")
	if err := os.WriteFile(cfg, []byte(kwokStages), 0o644); err != nil {
		return err
	}
	_, err = c.launch(ctx, component{
		name:  "kwok",
		tier:  tierClient,
		ports: 1,
		args: func(p []int) []string {
			return []string{
				"--kubeconfig=" + kc,
				"--config=" + cfg,
				"--manage-all-nodes=true",
				"--node-lease-duration-seconds=40",
				"--cidr=" + podCIDR,
				"--node-ip=10.255.0.1",
				fmt.Sprintf("--server-address=127.0.0.1:%d", p[0]),
			}
		},
		ready: func(ctx context.Context, p []int) error {
			return probe(ctx, http.DefaultClient, fmt.Sprintf("http://127.0.0.1:%d/healthz", p[0]), "ok")
		},
	})
	return err
}

func (c *ControlPlane) waitDefaultServiceAccount(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	begin := time.Now()
	return poll(ctx, componentTimeout, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err == nil {
			c.logf("default service account present after %s", since(begin))
		}
		return err == nil, err
	}, "the default service account (made by kube-controller-manager)")
}

// component describes how to run and probe one process.
type component struct {
	name    string
	tier    int
	ports   int                                // how many free ports args needs
	args    func(ports []int) []string         // command-line arguments
	ready   func(context.Context, []int) error // nil once the component is ready
	onReady func(ports []int)                  // records addresses once ready
}

// maxAttempts bounds restarts after losing a port race.
const maxAttempts = 4

// launch starts a component on fresh ports and waits until it is ready. When
// it dies because another process grabbed one of its ports in the meantime,
// it starts it again on new ports.
func (c *ControlPlane) launch(ctx context.Context, comp component) (*process, error) {
	logPath := filepath.Join(c.dir, "logs", comp.name+".log")
	for attempt := 1; ; attempt++ {
		ports, err := freePorts(comp.ports)
		if err != nil {
			return nil, err
		}
		begin := time.Now()
		c.logf("starting %s", comp.name)
		cmd := exec.Command(filepath.Join(c.binDir, comp.name), comp.args(ports)...)
		p, err := c.group.start(comp.name, cmd, logPath)
		if err != nil {
			return nil, err
		}
		p.tier = comp.tier
		err = c.waitReady(ctx, p, func(ctx context.Context) error { return comp.ready(ctx, ports) })
		if err == nil {
			if comp.onReady != nil {
				comp.onReady(ports)
			}
			c.logf("%s ready in %s", comp.name, since(begin))
			return p, nil
		}
		p.stop(5 * time.Second)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("starting %s: interrupted: %w", comp.name, context.Cause(ctx))
		}
		if errors.Is(err, errPortInUse) && attempt < maxAttempts {
			c.logf("%s lost a port to another process; retrying on new ports", comp.name)
			continue
		}
		return nil, &StartError{Component: comp.name, Err: err, Log: logPath, LogTail: p.logTail(30)}
	}
}

// waitReady polls check until it succeeds, the process exits, or the
// deadline passes.
func (c *ControlPlane) waitReady(ctx context.Context, p *process, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, componentTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if p.exited() {
			if p.logMentions("address already in use") {
				return errPortInUse
			}
			return fmt.Errorf("exited before becoming ready: %v", p.waitErr)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last = check(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %s: %v (last probe: %v)", since(p.started), ctx.Err(), last)
		case <-p.done:
		case <-tick.C:
		}
	}
}

// StartError reports a component that failed to start. Log is its log
// file; LogTail its last lines.
type StartError struct {
	Component string
	Err       error
	Log       string
	LogTail   string
}

func (e *StartError) Error() string {
	return fmt.Sprintf("starting %s: %v\n--- last lines of %s ---\n%s", e.Component, e.Err, e.Log, e.LogTail)
}

func (e *StartError) Unwrap() error { return e.Err }

// probe GETs url and succeeds on a 200 whose body contains want.
func probe(ctx context.Context, client *http.Client, url, want string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	return nil
}

// tlsProbeClient trusts the control plane's CA and presents no identity
// (health endpoints are open to anonymous requests).
func (c *ControlPlane) tlsProbeClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.caPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// poll calls cond until it reports done, returns an error, or timeout
// passes.
func poll(ctx context.Context, timeout time.Duration, cond func(context.Context) (bool, error), what string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// listenFree binds a free loopback port; tests replace it to provoke a port
// clash.
var listenFree = func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

// freePorts returns n distinct free loopback ports. They are only probed:
// another process may take one before the component binds it, which launch
// detects and recovers from.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := listenFree()
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (c *ControlPlane) adminConfigFor(host string) *rest.Config {
	return &rest.Config{Host: host, TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM}}
}

func (c *ControlPlane) restConfig(certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: c.apiURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.pki.caPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		// The default of 5 queries per second throttles tests badly.
		QPS:   1000,
		Burst: 2000,
	}
}

// writeKubeconfig writes a kubeconfig with inline credentials.
func (c *ControlPlane) writeKubeconfig(path, user string, certPEM, keyPEM []byte) error {
	name := c.opts.ClusterName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: c.apiURL, CertificateAuthorityData: c.pki.caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

// RESTConfig returns a fresh copy of the admin (system:masters) client
// configuration.
func (c *ControlPlane) RESTConfig() *rest.Config { return rest.CopyConfig(c.admin) }

// KubeconfigPath returns the admin kubeconfig file (Dir/kubeconfig).
func (c *ControlPlane) KubeconfigPath() string { return c.kubeconfig }

// Dir returns the control plane's working directory.
func (c *ControlPlane) Dir() string { return c.dir }

// LogPath returns the log file of a component ("etcd", "kube-apiserver",
// "kube-controller-manager", "kube-scheduler", "kwok").
func (c *ControlPlane) LogPath(component string) string {
	return filepath.Join(c.dir, "logs", component+".log")
}

// BinDir returns the directory of the control-plane binaries.
func (c *ControlPlane) BinDir() string { return c.binDir }

// Kubectl returns the pinned kubectl, set up to talk to this control plane
// as admin, ready to run. Its discovery cache lives in Dir, not in the
// user's home. A later --kubeconfig argument overrides the admin one. The
// command is an ordinary child of the caller, who runs and waits for it.
func (c *ControlPlane) Kubectl(ctx context.Context, args ...string) *exec.Cmd {
	pre := []string{"--kubeconfig=" + c.kubeconfig, "--cache-dir=" + filepath.Join(c.dir, "kubectl-cache")}
	return exec.CommandContext(ctx, filepath.Join(c.binDir, "kubectl"), append(pre, args...)...)
}

// RESTConfigFor returns a client configuration that authenticates as user
// in groups, with a client certificate signed by the control plane's CA.
// The identity has no permissions beyond what RBAC grants user and groups
// (system:authenticated always applies).
func (c *ControlPlane) RESTConfigFor(user string, groups ...string) (*rest.Config, error) {
	if user == "" {
		return nil, errors.New("controlplane: RESTConfigFor: empty user name")
	}
	certPEM, keyPEM, err := c.pki.clientCert(user, groups)
	if err != nil {
		return nil, err
	}
	return c.restConfig(certPEM, keyPEM), nil
}

// KubeconfigFor writes a kubeconfig that authenticates as user in groups
// (see RESTConfigFor) and returns its path, under Dir/kubeconfigs.
func (c *ControlPlane) KubeconfigFor(user string, groups ...string) (string, error) {
	if user == "" {
		return "", errors.New("controlplane: KubeconfigFor: empty user name")
	}
	certPEM, keyPEM, err := c.pki.clientCert(user, groups)
	if err != nil {
		return "", err
	}
	h := fnv.New32a()
	for _, g := range groups {
		h.Write([]byte(g + "\n"))
	}
	path := filepath.Join(c.dir, "kubeconfigs", fmt.Sprintf("user-%s-%08x.kubeconfig", fileSafe(user), h.Sum32()))
	return path, c.writeKubeconfig(path, user, certPEM, keyPEM)
}

func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
			return r
		}
		return '_'
	}, s)
}

// Close stops every component (SIGTERM, then SIGKILL after a grace period),
// newest tier first, releases Dir and removes it if it was temporary. It is
// safe to call more than once.
func (c *ControlPlane) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *ControlPlane) close() error {
	begin := time.Now()
	close(c.closing)
	c.group.mu.Lock()
	members := append([]*process(nil), c.group.members...)
	c.group.mu.Unlock()
	running := 0
	for _, p := range members {
		if !p.exited() {
			running++
		}
	}
	for _, tier := range []int{tierClient, tierAPI, tierStorage} {
		var wg sync.WaitGroup
		for _, p := range members {
			if p.tier != tier || p.exited() {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.stop(10 * time.Second) {
					c.logf("%s did not stop within 10s; killed it", p.name)
				}
			}()
		}
		wg.Wait()
	}
	if running > 0 {
		c.logf("control plane stopped in %s", since(begin))
	}
	err := c.lock.Unlock()
	if c.tempDir {
		if rmErr := os.RemoveAll(c.dir); rmErr != nil {
			err = errors.Join(err, rmErr)
		}
	}
	return err
}

// syncWriter serialises writes to a shared writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (c *ControlPlane) logf(format string, args ...any) {
	fmt.Fprintf(c.progress, format+"\n", args...)
}

func since(t time.Time) time.Duration {
	d := time.Since(t)
	if d < 10*time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
