package controller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	karpv1 "github.com/dovetail-sh/dovetail/api/karpenter/v1"
	"github.com/dovetail-sh/dovetail/internal/cli/controller"
	"github.com/dovetail-sh/dovetail/internal/peermodule"
	"github.com/dovetail-sh/dovetail/internal/testutil/helmbin"
	"github.com/dovetail-sh/dovetail/internal/testutil/poll"
	"github.com/dovetail-sh/dovetail/pkg/controllers/controllerstest"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
	"github.com/dovetail-sh/dovetail/pkg/operator"
)

var cp *controlplane.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(controlplanetest.Main(m, controlplane.Options{}, &cp))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRunManagesNodeClaimsUntilCancelled runs the command's Run with the
// kubeconfig of the test cluster and the fake cloud: it launches a
// NodeClaim, and returns cleanly when its context ends (SIGTERM).
func TestRunManagesNodeClaimsUntilCancelled(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := startRun(ctx, env, &stdout, &stderr, "--cluster-name", "test")

	nc := controllerstest.NodeClaim("cli", "team-a")
	env.Create(nc)
	env.Eventually("the command's controller to launch the NodeClaim", func() (bool, error) {
		err := env.Get(nc)
		return nc.IsTrue(karpv1.ConditionTypeLaunched), err
	})
	stopRun(t, cancel, done)
	if !strings.Contains(stderr.String(), `"msg":"starting"`) {
		t.Errorf("no start line in the JSON log:\n%s", stderr.String())
	}
}

// TestPeerChartDefaultEnvBecomesReady renders the peer's v1.15 chart
// (fetched through the Go module proxy) with its own values plus a cluster
// name, gives `dovetail controller` exactly the environment of the
// rendered Deployment (the downward-API variables resolved as the kubelet
// would for a container without resources), and waits for /readyz. Only
// the ports move to free ones (flags, which win over METRICS_PORT and
// HEALTH_PROBE_PORT), so parallel tests do not collide.
func TestPeerChartDefaultEnvBecomesReady(t *testing.T) {
	env := controllerstest.New(t, cp.RESTConfig())
	peerEnv := renderPeerChartEnv(t)
	// The command reads every variable the peer's chart sets.
	help := helpText(t)
	for name := range peerEnv {
		if !strings.Contains(help, "[$"+name) {
			t.Errorf("the peer's chart sets %s, which dovetail controller does not read", name)
		}
	}
	for _, must := range []string{"FEATURE_GATES", "AWS_FEATURE_GATES", "IGNORE_DRA_REQUESTS", "VM_MEMORY_OVERHEAD_PERCENT", "RESERVED_ENIS", "AMI_REFRESH_INTERVAL"} {
		if _, ok := peerEnv[must]; !ok {
			t.Errorf("the peer's rendered Deployment has no %s: the rendering or its parsing is wrong", must)
		}
	}
	for k, v := range peerEnv {
		t.Setenv(k, v)
	}
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) }) // MEMORY_LIMIT sets it

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := startRun(ctx, env, &stdout, &stderr)

	// LOG_OUTPUT_PATHS=stdout: the start line, with the probe address, is
	// on stdout.
	var probes string
	poll.Until(t, controllerstest.Timeout, 50*time.Millisecond, "the start line on stdout", func() (bool, error) {
		select {
		case err := <-done:
			t.Fatalf("controller exited: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		default:
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			var l struct{ Msg, Probes string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "starting" {
				probes = l.Probes
				return true, nil
			}
		}
		return false, nil
	})
	poll.Until(t, controllerstest.Timeout, 100*time.Millisecond, "/readyz to answer 200", func() (bool, error) {
		resp, err := http.Get("http://" + probes + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("status %d", resp.StatusCode)
		}
		return true, nil
	})
	nodeMemory := helmbin.NodeMemory
	if got, want := debug.SetMemoryLimit(-1), int64(float64(nodeMemory)*0.9); got != want {
		t.Errorf("soft memory limit %d, want 90%% of MEMORY_LIMIT (%s)", got, peerEnv["MEMORY_LIMIT"])
	}
	stopRun(t, cancel, done)
}

// renderPeerChartEnv renders the peer's chart and returns its controller
// container's environment (helmbin.DeploymentEnv: no resources, a node
// with helmbin.NodeMemory allocatable).
func renderPeerChartEnv(t *testing.T) map[string]string {
	t.Helper()
	helm, err := helmbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	chart, err := peermodule.UnpackChart(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "kube-system"
	c := exec.Command(helm, "template", "karpenter", chart, "--namespace", ns, "--set", "settings.clusterName=test")
	c.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var errOut bytes.Buffer
	c.Stderr = &errOut
	out, err := c.Output()
	if err != nil {
		t.Fatalf("helm template of the peer's chart: %v\n%s", err, errOut.String())
	}
	env, err := helmbin.DeploymentEnv(out, ns)
	if err != nil {
		t.Fatalf("the peer's chart: %v", err)
	}
	return env
}

// TestKubernetesMinVersion: KUBERNETES_MIN_VERSION above the API server's
// version stops the controller before it starts, naming the setting.
func TestKubernetesMinVersion(t *testing.T) {
	t.Setenv("KUBERNETES_MIN_VERSION", "99.0.0")
	cmd := controller.NewCmdController(func(ctx context.Context, o *controller.Options) error {
		o.Cloud = func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
			t.Error("the controller started against an API server older than KUBERNETES_MIN_VERSION")
			return operator.Cloud{}, fmt.Errorf("must not start")
		}
		return controller.Run(ctx, o)
	})
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs([]string{"--kubeconfig", cp.KubeconfigPath(), "--cluster-name", "test", "--metrics-port", "-1", "--health-probe-port", "-1", "--leader-elect=false"})
	err := cmd.ExecuteContext(t.Context())
	if err == nil || !strings.Contains(err.Error(), "KUBERNETES_MIN_VERSION") || !strings.Contains(err.Error(), "older than the minimum 99.0.0") {
		t.Fatalf("error %v, want the API server refused as older than 99.0.0", err)
	}
}

// startRun runs the command's Run until ctx ends, with the fake cloud, the
// test cluster's kubeconfig, free ports on loopback, the env's own lease,
// and args; its result arrives on the returned channel.
func startRun(ctx context.Context, env *controllerstest.Env, stdout, stderr *lockedBuffer, args ...string) <-chan error {
	done := make(chan error, 1)
	cmd := controller.NewCmdController(func(_ context.Context, o *controller.Options) error {
		o.Cloud = func(context.Context, manager.Manager, events.EventRecorder) (operator.Cloud, error) {
			return operator.Cloud{Provider: env.Cloud}, nil
		}
		return controller.Run(ctx, o)
	})
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetArgs(append([]string{"--kubeconfig", cp.KubeconfigPath(), "--metrics-port", "0", "--health-probe-port", "0",
		"--bind-address", "127.0.0.1", "--leader-election-name", env.Prefix}, args...))
	go func() { done <- cmd.Execute() }()
	return done
}

// stopRun cancels a startRun and waits for a clean exit.
func stopRun(t *testing.T, cancel context.CancelFunc, done <-chan error) {
	t.Helper()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("controller exited with %v", err)
		}
	case <-time.After(controllerstest.Timeout):
		t.Fatal("controller did not stop")
	}
}
