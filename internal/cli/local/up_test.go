package local_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/dovetail-sh/dovetail/internal/cli/cmdutil"
	"github.com/dovetail-sh/dovetail/pkg/controlplane"
)

// dovetail is the binary under test, built by TestMain from cmd/dovetail.
var dovetail string

func TestMain(m *testing.M) {
	tmp, err := os.MkdirTemp("", "dovetail-cli-local-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dovetail = filepath.Join(tmp, "dovetail")
	build := exec.Command("go", "build", "-o", dovetail, "github.com/dovetail-sh/dovetail/cmd/dovetail")
	build.Env = append(os.Environ(), "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building dovetail: %v\n%s", err, out)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

const (
	readyTimeout = 3 * time.Minute  // start-up on a busy machine
	exitTimeout  = 60 * time.Second // shutdown
)

// up is one `dovetail local up` child process.
type up struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *lines
	stderr *lines
	done   chan struct{} // closed once the process has exited
	err    error         // its exit status, after done
}

// lines collects a stream and signals each new line.
type lines struct {
	mu    sync.Mutex
	all   []string
	added chan struct{}
}

func newLines() *lines { return &lines{added: make(chan struct{}, 1)} }

func (l *lines) add(s string) {
	l.mu.Lock()
	l.all = append(l.all, s)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
}

func (l *lines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.all...)
}

func (l *lines) String() string { return strings.Join(l.get(), "\n") }

// startUp runs `dovetail <args>` with its output collected.
func startUp(t *testing.T, args ...string) *up {
	t.Helper()
	u := &up{t: t, cmd: exec.Command(dovetail, args...), stdout: newLines(), stderr: newLines(), done: make(chan struct{})}
	outPipe, err := u.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := u.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var readers sync.WaitGroup
	for _, s := range []struct {
		r    interface{ Read([]byte) (int, error) }
		into *lines
	}{{outPipe, u.stdout}, {errPipe, u.stderr}} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(s.r)
			for sc.Scan() {
				s.into.add(sc.Text())
			}
		}()
	}
	go func() {
		readers.Wait() // Wait must follow the reads of the pipes
		u.err = u.cmd.Wait()
		close(u.done)
	}()
	t.Cleanup(func() {
		select {
		case <-u.done:
		default:
			_ = u.cmd.Process.Kill()
			<-u.done
		}
	})
	return u
}

// waitReady waits for the ready line and returns it with the time it took.
// It also waits for the progress line local up writes just before it:
// stdout and stderr are separate pipes, read in no particular order.
func (u *up) waitReady() (string, time.Duration) {
	u.t.Helper()
	begin := time.Now()
	deadline := time.After(readyTimeout)
	var ready string
	var took time.Duration
	for {
		if ready == "" {
			for _, l := range u.stdout.get() {
				if strings.HasPrefix(l, "ready: ") {
					ready, took = l, time.Since(begin)
				}
			}
		}
		if ready != "" && strings.Contains(u.stderr.String(), "local stack ready in") {
			return ready, took
		}
		select {
		case <-u.stdout.added:
		case <-u.stderr.added:
		case <-u.done:
			u.t.Fatalf("local up exited (%v) before it was ready\nstderr:\n%s", u.err, u.stderr)
		case <-deadline:
			u.t.Fatalf("local up not ready after %s\nstderr:\n%s", readyTimeout, u.stderr)
		}
	}
}

// wait waits for the process to exit and returns its exit code.
func (u *up) wait() int {
	u.t.Helper()
	select {
	case <-u.done:
	case <-time.After(exitTimeout):
		u.t.Fatalf("local up still running %s after it was told to stop\nstderr:\n%s", exitTimeout, u.stderr)
	}
	var exit *exec.ExitError
	if errors.As(u.err, &exit) {
		return exit.ExitCode()
	}
	if u.err != nil {
		u.t.Fatalf("waiting for local up: %v", u.err)
	}
	return 0
}

// clientFor builds a client from the kubeconfig named by a ready line.
func clientFor(t *testing.T, readyLine string) *kubernetes.Clientset {
	t.Helper()
	path := strings.TrimPrefix(readyLine, "ready: export KUBECONFIG=")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// noProcessesLeft fails unless no process names dir in its arguments:
// neither `local up` itself nor any component it started.
func noProcessesLeft(t *testing.T, dir string, within time.Duration) {
	t.Helper()
	end := time.Now().Add(within)
	for {
		left := controlplane.ProcessesUsing(dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes left behind in %s: %v", dir, describe(left))
		}
		time.Sleep(50 * time.Millisecond) // polling /proc; nothing to wait on
	}
}

func describe(pids []int) []string {
	var out []string
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, fmt.Sprintf("%d %s", pid, bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
	}
	return out
}

func manifestCount(t *testing.T, dir string) int {
	t.Helper()
	var n int
	for _, pattern := range []string{"*.yaml", "*.yml", "*.json"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		n += len(m)
	}
	return n
}

func appliedLines(stderr []string) []string {
	var out []string
	for _, l := range stderr {
		if strings.HasPrefix(l, "applied ") {
			out = append(out, l)
		}
	}
	return out
}

// TestUpStopsCleanlyOnSignal starts `local up`, checks what it prints and
// serves, stops it with a signal and checks that it exits 0 leaving no
// process behind. (TestUpDirHeldThenTakenOver stops its last stack with
// SIGINT the same way.)
func TestUpStopsCleanlyOnSignal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signal syscall.Signal
		apply  string
		check  func(t *testing.T, cs *kubernetes.Clientset)
	}{
		{
			name:   "SIGTERM",
			signal: syscall.SIGTERM,
			apply:  "testdata/manifests",
			check: func(t *testing.T, cs *kubernetes.Clientset) {
				cm, err := cs.CoreV1().ConfigMaps("demo").Get(t.Context(), "greeting", metav1.GetOptions{})
				if err != nil || cm.Data["message"] != "hello from the local stack" {
					t.Errorf("applied ConfigMap: %v %v", cm.Data, err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			u := startUp(t, "local", "up", "--dir", dir, "--apply", tc.apply)
			line, took := u.waitReady()
			t.Logf("start to ready: %s (cached binaries, %d manifests applied)", took.Round(10*time.Millisecond), manifestCount(t, tc.apply))

			if want := "ready: export KUBECONFIG=" + filepath.Join(dir, "kubeconfig"); line != want {
				t.Errorf("ready line %q, want %q", line, want)
			}
			if got, want := len(appliedLines(u.stderr.get())), manifestCount(t, tc.apply); got != want {
				t.Errorf("%d 'applied' progress lines for %d manifests:\n%s", got, want, u.stderr)
			}
			tc.check(t, clientFor(t, line))

			if err := u.cmd.Process.Signal(tc.signal); err != nil {
				t.Fatal(err)
			}
			if code := u.wait(); code != 0 {
				t.Errorf("exit code %d after %v, want 0\nstderr:\n%s", code, tc.signal, u.stderr)
			}
			if out := u.stdout.get(); len(out) != 1 {
				t.Errorf("stdout has %d lines, want just the ready line: %q", len(out), out)
			}
			noProcessesLeft(t, dir, 0)
			if _, err := os.Stat(filepath.Join(dir, "kubeconfig")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("kubeconfig left after stopping (stat: %v)", err)
			}
		})
	}
}

// TestUpDirHeldThenTakenOver checks the directory lock: a second `local up`
// on a live stack's directory is refused with exit code 1 naming the
// holder; kill -9 of the holder takes its components down with it
// (parent-death signal); and a new `local up` then takes the directory over.
func TestUpDirHeldThenTakenOver(t *testing.T) {
	dir := t.TempDir()
	first := startUp(t, "local", "up", "--dir", dir)
	line, took := first.waitReady()
	t.Logf("start to ready: %s", took.Round(10*time.Millisecond))

	t.Run("second instance refused", func(t *testing.T) {
		second := startUp(t, "local", "up", "--dir", dir)
		if code := second.wait(); code != cmdutil.ExitError {
			t.Errorf("second local up exited %d, want %d\nstderr:\n%s", code, cmdutil.ExitError, second.stderr)
		}
		holder := fmt.Sprintf("process %d", first.cmd.Process.Pid)
		if !strings.Contains(second.stderr.String(), holder) {
			t.Errorf("second local up's error does not name the holder (%s):\n%s", holder, second.stderr)
		}
		if len(second.stdout.get()) != 0 {
			t.Errorf("second local up printed on stdout: %q", second.stdout.get())
		}
		if _, err := clientFor(t, line).Discovery().ServerVersion(); err != nil {
			t.Errorf("first stack disturbed by the refused one: %v", err)
		}
	})

	t.Run("kill -9 leaves no component", func(t *testing.T) {
		components := controlplane.ProcessesUsing(filepath.Join(dir, "controlplane"))
		if len(components) < 5 {
			t.Fatalf("expected the five components running, found %v", describe(components))
		}
		if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := first.wait(); code != -1 {
			t.Errorf("killed local up reported exit code %d, want -1 (killed by a signal)", code)
		}
		noProcessesLeft(t, dir, 10*time.Second)
	})

	t.Run("next instance takes over, applies the examples, stops on SIGINT", func(t *testing.T) {
		// The repository's examples are what `make run` applies.
		examples, err := filepath.Abs(filepath.Join("..", "..", "..", "examples"))
		if err != nil {
			t.Fatal(err)
		}
		third := startUp(t, "local", "up", "--dir", dir, "--apply", examples)
		line, took := third.waitReady()
		t.Logf("start to ready after a takeover: %s (%d manifests applied)", took.Round(10*time.Millisecond), manifestCount(t, examples))
		if !strings.Contains(third.stderr.String(), fmt.Sprintf("taking over %s from a stack that stopped without cleaning up (pid %d)", dir, first.cmd.Process.Pid)) {
			t.Errorf("no takeover notice naming pid %d:\n%s", first.cmd.Process.Pid, third.stderr)
		}
		if got, want := len(appliedLines(third.stderr.get())), manifestCount(t, examples); got != want {
			t.Errorf("%d 'applied' progress lines for %d manifests:\n%s", got, want, third.stderr)
		}
		// The examples are NodePools and an EC2NodeClass: the CRDs must be
		// installed for them to exist.
		raw, err := clientFor(t, line).RESTClient().Get().AbsPath("/apis/karpenter.sh/v1/nodepools").DoRaw(t.Context())
		if err != nil || !bytes.Contains(raw, []byte(`"kind":"NodePoolList"`)) {
			t.Errorf("listing NodePools: %v %.200s", err, raw)
		}
		if err := third.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := third.wait(); code != 0 {
			t.Errorf("exit code %d after SIGINT, want 0\nstderr:\n%s", code, third.stderr)
		}
		if out := third.stdout.get(); len(out) != 1 {
			t.Errorf("stdout has %d lines, want just the ready line: %q", len(out), out)
		}
		noProcessesLeft(t, dir, 0)
	})
}

// TestUpBadInput checks that flag and argument errors exit 2 before
// anything starts.
func TestUpBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown flag", []string{"--bogus"}, "unknown flag: --bogus"},
		{"argument", []string{"extra"}, `takes no arguments, got ["extra"]`},
		{"missing manifest", []string{"--apply", "testdata/nope.yaml"}, "--apply testdata/nope.yaml: no such file or directory"},
		{"directory without manifests", []string{"--apply", "."}, "--apply .: directory holds no"},
		{"bad cluster name", []string{"--cluster-name", "Not_A_Label"}, "--cluster-name Not_A_Label:"},
		{"empty dir", []string{"--dir", ""}, "--dir: must not be empty"},
		{"zones beyond the region", []string{"--zones", "7"}, "--zones 7 is out of range: region us-east-1 has 6 zones, so --zones must be 1 to 6"},
		{"zones not a number", []string{"--zones", "four"}, `invalid argument "four" for "--zones"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"local", "up", "--dir", dir}, tc.args...)
			u := startUp(t, args...)
			if code := u.wait(); code != cmdutil.ExitBadInput {
				t.Errorf("exit code %d, want %d\nstderr:\n%s", code, cmdutil.ExitBadInput, u.stderr)
			}
			if !strings.Contains(u.stderr.String(), tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, u.stderr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("bad input still touched %s: %v", dir, entries)
			}
		})
	}
}

// TestUpInterruptedDuringStart signals `local up` while the API server is
// still starting: it must give up, say so, and leave nothing behind.
func TestUpInterruptedDuringStart(t *testing.T) {
	dir := t.TempDir()
	u := startUp(t, "local", "up", "--dir", dir)
	deadline := time.After(readyTimeout)
	for !strings.Contains(u.stderr.String(), "starting kube-apiserver") {
		select {
		case <-u.stderr.added:
		case <-u.done:
			t.Fatalf("local up exited early: %v\n%s", u.err, u.stderr)
		case <-deadline:
			t.Fatalf("local up never started the API server:\n%s", u.stderr)
		}
	}
	if err := u.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := u.wait(); code != cmdutil.ExitError {
		t.Errorf("exit code %d, want %d\nstderr:\n%s", code, cmdutil.ExitError, u.stderr)
	}
	if !strings.Contains(u.stderr.String(), "interrupted") {
		t.Errorf("no word of the interruption:\n%s", u.stderr)
	}
	if len(u.stdout.get()) != 0 {
		t.Errorf("stdout %q, want nothing (never ready)", u.stdout.get())
	}
	noProcessesLeft(t, dir, 0)
}
