package ctrlproc_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dovetail-sh/dovetail/config/rbac"
	"github.com/dovetail-sh/dovetail/pkg/awsemu/localaws"
	stack "github.com/dovetail-sh/dovetail/pkg/local"
	"github.com/dovetail-sh/dovetail/pkg/local/ctrlproc"
)

// binary is the dovetail executable built for these tests.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "dovetail-ctrlproc-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "dovetail")
	build := exec.Command("go", "build", "-o", binary, "../../../cmd/dovetail")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dovetail: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// processEnv reads a running process's environment.
func processEnv(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(data), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// listeners returns the local addresses (hex, as /proc/net/tcp and tcp6
// write them) of the sockets listening on port.
func listeners(t *testing.T, port int) []string {
	t.Helper()
	var out []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 4 || fields[3] != "0A" { // LISTEN
				continue
			}
			addr, p, ok := strings.Cut(fields[1], ":")
			if n, err := strconv.ParseInt(p, 16, 32); ok && err == nil && int(n) == port {
				out = append(out, addr)
			}
		}
	}
	return out
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestControllerProcessLifecycle(t *testing.T) {
	aws := localaws.New()
	aws.TimeScale = 0.05
	ctrl := &ctrlproc.Component{Binary: binary, RBAC: rbac.Manifests(), TimeScale: func() float64 { return aws.TimeScale }}
	s, err := stack.Up(t.Context(), stack.Options{Dir: t.TempDir(), Components: []stack.Component{aws, ctrl}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	r := ctrl.Replica(0)
	if r == nil {
		t.Fatal("no replica 0")
	}
	env := processEnv(t, r.PID())
	if env["AWS_ENDPOINT_URL"] != aws.Emulator().Endpoint() || env["CLUSTER_NAME"] != "local" || env["INTERRUPTION_QUEUE"] == "" {
		t.Errorf("the controller's environment does not point at the emulator: endpoint %q cluster %q queue %q",
			env["AWS_ENDPOINT_URL"], env["CLUSTER_NAME"], env["INTERRUPTION_QUEUE"])
	}

	t.Run("runs as its ServiceAccount, not an admin", func(t *testing.T) {
		cfg, err := clientcmd.BuildConfigFromFlags("", env["KUBECONFIG"])
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := review.Status.UserInfo.Username; got != ctrlproc.User {
			t.Errorf("the controller authenticates as %q, want %q", got, ctrlproc.User)
		}
		// The role grants no access to Secrets.
		if _, err := cs.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{}); err == nil {
			t.Error("the controller's identity may list Secrets")
		}
	})

	t.Run("metrics and health listen on loopback only", func(t *testing.T) {
		for _, port := range []int{r.MetricsPort, r.HealthPort} {
			addrs := listeners(t, port)
			if len(addrs) == 0 {
				t.Errorf("nothing listens on port %d", port)
			}
			for _, a := range addrs {
				if a != "0100007F" {
					t.Errorf("port %d listens on %s (hex, /proc/net/tcp*), want 127.0.0.1 only", port, a)
				}
			}
		}
	})

	t.Run("peak memory is readable", func(t *testing.T) {
		rss, err := r.PeakRSS()
		if err != nil || rss < 1<<20 {
			t.Errorf("PeakRSS = %d, %v; want at least 1 MiB", rss, err)
		}
	})

	t.Run("kill and restart", func(t *testing.T) {
		old := r.PID()
		if err := ctrl.Restart(t.Context(), 0); err == nil {
			t.Error("Restart of a running replica succeeded")
		}
		if err := ctrl.Kill(0); err != nil {
			t.Fatal(err)
		}
		select {
		case <-r.Exited():
		default:
			t.Fatal("Kill returned before the process exited")
		}
		if alive(old) {
			t.Fatalf("pid %d is alive after Kill", old)
		}
		if err := ctrl.Restart(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		if now := ctrl.Replica(0).PID(); now == old || !alive(now) {
			t.Errorf("after Restart pid %d (was %d), alive %v", now, old, alive(now))
		}
		log, err := os.ReadFile(ctrl.Replica(0).LogPath)
		if err != nil || strings.Count(string(log), `"msg":"starting"`) < 2 {
			t.Errorf("the log does not hold both starts (err %v)", err)
		}
	})

	t.Run("Close stops every replica", func(t *testing.T) {
		rep := ctrl.Replica(0)
		pid := rep.PID()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-rep.Exited():
		case <-time.After(ctrlproc.StopGrace + 5*time.Second):
			t.Fatal("the replica did not exit")
		}
		if alive(pid) {
			t.Errorf("controller pid %d outlived the stack", pid)
		}
	})
}
