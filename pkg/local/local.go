package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// Defaults of Options.
const (
	DefaultDir         = ".dovetail/local"
	DefaultClusterName = "local"
)

// Component is a part of the local stack that runs beside the control
// plane (the AWS emulator, the controller, ...). Components start in order
// once the control plane is ready and stop in reverse order before it.
type Component interface {
	// Name identifies the component in progress lines and errors.
	Name() string
	// Start brings the component up and returns once it is ready. It must
	// not block beyond that: long-running work belongs in goroutines or
	// child processes that Stop ends. ctx bounds start-up only.
	Start(ctx context.Context, env Env) error
	// Stop ends everything Start began and waits for it. It is called once,
	// and only after a successful Start.
	Stop(ctx context.Context) error
}

// Env is what a component gets to work with.
type Env struct {
	// Dir is the stack's directory; a component keeps its files in
	// Dir/<its name>.
	Dir string
	// ClusterName is the cluster's name (for tags, discovery, kubeconfig).
	ClusterName string
	// ControlPlane is the running control plane.
	ControlPlane *controlplane.ControlPlane
	// Progress takes human progress lines.
	Progress io.Writer
}

// Options configures Up.
type Options struct {
	// Dir holds all state of the stack; DefaultDir when empty. One stack
	// at a time may use it.
	Dir string
	// ClusterName names the cluster; DefaultClusterName when empty. It
	// must be a DNS label.
	ClusterName string
	// Apply lists manifests to apply once everything is up: files, or
	// directories whose *.yaml, *.yml and *.json files are applied in name
	// order (not recursively, as `kubectl apply -f DIR`).
	Apply []string
	// Components start after the control plane, in order.
	Components []Component
	// Progress takes human progress lines; nil discards them.
	Progress io.Writer
	// AuditUsers turns on the API server's audit log for these users
	// (controlplane.Options.AuditUsers); none when empty.
	AuditUsers []string
	// SchedulerConfig is the file of a KubeSchedulerConfiguration the
	// stack's kube-scheduler runs with (controlplane.Options.SchedulerConfig),
	// e.g. a profile with PodTopologySpread defaultConstraints. With it the
	// stack also shows kube-system/kube-scheduler-dovetail-system, the
	// scheduler's Pod as a kind cluster shows it (SchedulerPod), on the
	// Node SystemNodeName. "" none.
	SchedulerConfig string
}

// withDefaults fills in the defaults.
func (o Options) withDefaults() Options {
	if o.Dir == "" {
		o.Dir = DefaultDir
	}
	if o.ClusterName == "" {
		o.ClusterName = DefaultClusterName
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return o
}

// Validate checks the options without starting anything. Every error is
// the user's to fix and names its field (clusterName, dir, apply[i]).
func (o Options) Validate() field.ErrorList {
	o = o.withDefaults()
	var errs field.ErrorList
	if msgs := validation.IsDNS1123Label(o.ClusterName); len(msgs) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("clusterName"), o.ClusterName, strings.Join(msgs, "; ")))
	}
	if fi, err := os.Stat(o.Dir); err == nil && !fi.IsDir() {
		errs = append(errs, field.Invalid(field.NewPath("dir"), o.Dir, "not a directory"))
	}
	for i, p := range o.Apply {
		if _, err := manifestFiles(p); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("apply").Index(i), p, err.Error()))
		}
	}
	if o.SchedulerConfig != "" {
		data, err := os.ReadFile(o.SchedulerConfig)
		if err == nil {
			_, err = controlplane.SchedulerConfigFor(data, "kubeconfig")
		}
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("schedulerConfig"), o.SchedulerConfig, err.Error()))
		}
	}
	return errs
}

// manifestFiles expands one Apply entry into the files to apply.
func manifestFiles(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such file or directory")
		}
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, errors.New("directory holds no *.yaml, *.yml or *.json file")
	}
	sort.Strings(files)
	return files, nil
}

// Stack is a running local stack.
type Stack struct {
	opts       Options
	dir        string
	lock       *controlplane.DirLock
	cp         *controlplane.ControlPlane
	started    []Component
	kubeconfig string
	closed     bool
}

// Layout of Dir.
const (
	lockFile       = "local.lock"
	kubeconfigFile = "kubeconfig"
	controlPlaneIn = "controlplane"
)

// Up starts the stack: it locks Dir (a *controlplane.DirInUseError when a
// live stack holds it; a directory left by a killed stack is taken over),
// starts the control plane with every component and dovetail's CRDs,
// writes Dir/kubeconfig, starts the Components and applies the manifests.
// On failure it stops whatever it started.
func Up(ctx context.Context, opts Options) (*Stack, error) {
	opts = opts.withDefaults()
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &Stack{opts: opts, dir: dir}
	if err := s.up(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Stack) up(ctx context.Context) error {
	lock, err := controlplane.LockDir(s.dir, filepath.Join(s.dir, lockFile))
	if err != nil {
		return err
	}
	s.lock = lock
	if lock.PreviousPID != 0 && lock.PreviousPID != os.Getpid() {
		s.logf("taking over %s from a stack that stopped without cleaning up (pid %d)", s.dir, lock.PreviousPID)
	}
	_ = os.Remove(filepath.Join(s.dir, kubeconfigFile))

	var schedulerConfig []byte
	if s.opts.SchedulerConfig != "" {
		if schedulerConfig, err = os.ReadFile(s.opts.SchedulerConfig); err != nil {
			return err
		}
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{
		SchedulerConfig:   schedulerConfig,
		Dir:               filepath.Join(s.dir, controlPlaneIn),
		ControllerManager: true,
		Scheduler:         true,
		Kwok:              true,
		Progress:          s.opts.Progress,
		ClusterName:       s.opts.ClusterName,
		AuditUsers:        s.opts.AuditUsers,
	})
	if err != nil {
		return err
	}
	s.cp = cp
	if err := ensureClusterDNS(ctx, cp); err != nil {
		return err
	}
	if len(schedulerConfig) > 0 {
		cs, err := kubernetes.NewForConfig(cp.RESTConfig())
		if err != nil {
			return err
		}
		if err := ensureSchedulerPod(ctx, cs); err != nil {
			return err
		}
	}

	env := Env{Dir: s.dir, ClusterName: s.opts.ClusterName, ControlPlane: cp, Progress: s.opts.Progress}
	for _, c := range s.opts.Components {
		begin := time.Now()
		s.logf("starting %s", c.Name())
		if err := c.Start(ctx, env); err != nil {
			return fmt.Errorf("starting %s: %w", c.Name(), err)
		}
		s.started = append(s.started, c)
		s.logf("%s ready in %s", c.Name(), time.Since(begin).Round(10*time.Millisecond))
	}

	for _, p := range s.opts.Apply {
		files, err := manifestFiles(p)
		if err != nil {
			return fmt.Errorf("applying %s: %w", p, err)
		}
		for _, f := range files {
			if err := s.apply(ctx, f); err != nil {
				return err
			}
		}
	}

	// The kubeconfig appears last, so that its presence means "ready".
	data, err := os.ReadFile(cp.KubeconfigPath())
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, kubeconfigFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	s.kubeconfig = path
	return nil
}

// ClusterDNSIP is the ClusterIP of the local stack's kube-system/kube-dns
// Service: the tenth address of the control plane's service range, as
// EKS and kubeadm place it. Nodes take their cluster DNS address from it.
const ClusterDNSIP = "10.96.0.10"

// ensureClusterDNS creates the kube-system/kube-dns Service (no pods back
// it: the local nodes are kwok's), from which the controller takes the
// cluster DNS address it writes into node user data.
func ensureClusterDNS(ctx context.Context, cp *controlplane.ControlPlane) error {
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		return err
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns",
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: ClusterDNSIP,
			Selector:  map[string]string{"k8s-app": "kube-dns"},
			Ports: []corev1.ServicePort{
				{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
	if _, err := cs.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the kube-system/kube-dns Service: %w", err)
	}
	return nil
}

// apply runs kubectl apply on one file and reports it in one line.
func (s *Stack) apply(ctx context.Context, file string) error {
	cmd := s.cp.Kubectl(ctx, "apply", "-f", file)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return &ApplyError{File: file, Err: err, Output: strings.TrimSpace(out.String())}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	s.logf("applied %s: %s", file, strings.Join(lines, "; "))
	return nil
}

// ApplyError reports a manifest kubectl could not apply.
type ApplyError struct {
	File   string
	Err    error
	Output string // what kubectl said
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("applying %s: %v: %s", e.File, e.Err, e.Output)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// KubeconfigPath returns the absolute path of Dir/kubeconfig (admin).
func (s *Stack) KubeconfigPath() string { return s.kubeconfig }

// Dir returns the stack's absolute directory.
func (s *Stack) Dir() string { return s.dir }

// ControlPlane returns the running control plane.
func (s *Stack) ControlPlane() *controlplane.ControlPlane { return s.cp }

// Failed is closed when part of the stack dies on its own; Err says why.
func (s *Stack) Failed() <-chan struct{} { return s.cp.Exited() }

// Err reports why Failed was closed, nil before.
func (s *Stack) Err() error { return s.cp.Err() }

// Close stops the components in reverse order, then the control plane,
// removes Dir/kubeconfig and releases Dir. It is safe to call more than
// once.
func (s *Stack) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := len(s.started) - 1; i >= 0; i-- {
		c := s.started[i]
		if err := c.Stop(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", c.Name(), err))
		}
	}
	if s.cp != nil {
		errs = append(errs, s.cp.Close())
	}
	if s.kubeconfig != "" {
		_ = os.Remove(s.kubeconfig)
	}
	errs = append(errs, s.lock.Unlock())
	return errors.Join(errs...)
}

// Run starts the stack, calls ready once it is up, and keeps it running
// until ctx is done (nil error) or part of it dies (its error); then it
// stops everything.
func Run(ctx context.Context, opts Options, ready func(*Stack)) error {
	s, err := Up(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted before the stack was ready: %w", err)
		}
		return err
	}
	if ready != nil {
		ready(s)
	}
	var failed error
	select {
	case <-ctx.Done():
		s.logf("stopping")
	case <-s.Failed():
		failed = s.Err()
		s.logf("stopping: %v", failed)
	}
	return errors.Join(failed, s.Close())
}

func (s *Stack) logf(format string, args ...any) {
	fmt.Fprintf(s.opts.Progress, format+"\n", args...)
}
