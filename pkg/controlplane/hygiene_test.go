package controlplane_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dovetail-sh/dovetail/pkg/controlplane"
	"github.com/dovetail-sh/dovetail/pkg/controlplane/controlplanetest"
)

// The test binary re-runs itself as a helper: helperEnv selects the mode and
// helperDirEnv the control plane's directory.
const (
	helperEnv    = "DOVETAIL_CONTROLPLANE_TEST_HELPER"
	helperDirEnv = "DOVETAIL_CONTROLPLANE_TEST_DIR"
	helperReady  = "helper: control plane up"
)

// helperMain is TestMain in a helper process: a control plane of its own
// (etcd and kube-apiserver only, to be quick) in the given directory.
func helperMain(m *testing.M, mode string) int {
	switch mode {
	case "block", "fail":
		return controlplanetest.Main(m, controlplane.Options{Dir: os.Getenv(helperDirEnv), SkipCRDs: true}, &cp)
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", helperEnv, mode)
		return 2
	}
}

// TestChildrenDieWithTestBinary runs this test binary as a helper with a
// control plane, ends the helper's tests the ways a test run ends badly
// (a failing test; go test's -timeout panic and SIGKILL, which skip every
// deferred cleanup), and checks that no component survives it.
func TestChildrenDieWithTestBinary(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "block": // the helper's role: announce the control plane, wait to die
		fmt.Println(helperReady)
		<-t.Context().Done()
		return
	case "fail":
		fmt.Println(helperReady)
		t.Error("failing on purpose")
		return
	}
	for _, tc := range []struct {
		name    string
		mode    string                   // the helper's role
		timeout string                   // the helper's -test.timeout
		kill    func(*os.Process)        // how the parent ends it, nil to let it end
		check   func(*testing.T, string) // on the helper's output
	}{
		{
			name:    "failing test",
			mode:    "fail",
			timeout: "10m",
			check: func(t *testing.T, out string) {
				if !strings.Contains(out, "failing on purpose") || !strings.Contains(out, "control plane stopped") {
					t.Errorf("helper did not fail and then stop its control plane:\n%s", out)
				}
			},
		},
		{
			name:    "go test timeout",
			mode:    "block",
			timeout: "2s",
			check: func(t *testing.T, out string) {
				if !strings.Contains(out, "test timed out") {
					t.Errorf("helper did not time out:\n%s", out)
				}
			},
		},
		{
			name:    "SIGKILL",
			mode:    "block",
			timeout: "10m",
			kill:    func(p *os.Process) { _ = p.Kill() },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithTestBinary$", "-test.timeout="+tc.timeout, "-test.v")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.mode, helperDirEnv+"="+dir)
			out, stdoutDone := startHelper(t, cmd)

			// The helper's components, found by the directory in their
			// arguments (the helper itself only has it in its environment).
			pids := controlplane.ProcessesUsing(dir)
			if tc.mode == "block" {
				names := commands(pids)
				if !contains(names, "etcd") || !contains(names, "kube-apiserver") {
					t.Fatalf("helper's components: %v, want etcd and kube-apiserver", names)
				}
			}
			if tc.kill != nil {
				tc.kill(cmd.Process)
			}
			<-stdoutDone // all output read before Wait closes the pipe
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Success() {
				t.Fatalf("helper ended with %v, want a failure", err)
			}
			if tc.check != nil {
				tc.check(t, out.String())
			}
			waitGone(t, dir, pids)
		})
	}
}

// startHelper starts cmd and waits until it printed helperReady. The
// returned buffer keeps collecting its output; the channel is closed once
// stdout reached its end.
func startHelper(t *testing.T, cmd *exec.Cmd) (*syncBuffer, <-chan struct{}) {
	t.Helper()
	out := &syncBuffer{}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			out.Write(append(sc.Bytes(), '\n'))
			if !signalled && strings.Contains(sc.Text(), helperReady) {
				close(ready)
				signalled = true
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		select {
		case <-ready: // it was ready, then ended at once ("fail" mode)
		default:
			t.Fatalf("helper ended before it was ready:\n%s", out.String())
		}
	case <-time.After(controlplanetest.StartTimeout):
		t.Fatalf("helper never became ready:\n%s", out.String())
	}
	return out, done
}

// waitGone fails the test unless every process in pids (and any other
// process naming dir) is gone within a few seconds.
func waitGone(t *testing.T, dir string, pids []int) {
	t.Helper()
	end := time.Now().Add(15 * time.Second)
	for {
		var left []int
		for _, pid := range pids {
			if alive(pid) {
				left = append(left, pid)
			}
		}
		left = append(left, controlplane.ProcessesUsing(dir)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("processes left behind: %v %v", left, commands(left))
		}
		time.Sleep(50 * time.Millisecond) // polling /proc; nothing to wait on
	}
}

// alive reports whether pid is a live process (zombies count as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

// commands returns the command names of pids.
func commands(pids []int) []string {
	var names []string
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
		if err == nil {
			names = append(names, strings.TrimSpace(string(b)))
		}
	}
	return names
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDirInUse checks that a second control plane refuses a directory a
// live one holds, naming the holder.
func TestDirInUse(t *testing.T) {
	_, err := controlplane.Start(t.Context(), controlplane.Options{Dir: cp.Dir(), SkipCRDs: true})
	var inUse *controlplane.DirInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("Start on a held directory: %v, want a DirInUseError", err)
	}
	if inUse.PID != os.Getpid() || inUse.Dir != cp.Dir() {
		t.Errorf("DirInUseError = %+v, want dir %s held by pid %d", inUse, cp.Dir(), os.Getpid())
	}
	// The refused Start must not have disturbed the running control plane.
	if _, err := clientset(t).Discovery().ServerVersion(); err != nil {
		t.Errorf("control plane broken after a refused Start: %v", err)
	}
}

// TestExitedAndClose runs a second, minimal control plane in a temporary
// directory, kills its API server behind its back, and checks that the
// death is reported and that Close still cleans up everything.
func TestExitedAndClose(t *testing.T) {
	// Two temporary directories of other control planes: one abandoned
	// (its lock is free), one live (held). Start sweeps only the first.
	abandoned, err := os.MkdirTemp("", "dovetail-controlplane-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(abandoned)
	if err := os.WriteFile(filepath.Join(abandoned, ".lock"), []byte("999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := os.MkdirTemp("", "dovetail-controlplane-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(live)
	held, err := controlplane.LockDir(live, filepath.Join(live, ".lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()

	c, err := controlplane.Start(t.Context(), controlplane.Options{SkipCRDs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := os.Stat(abandoned); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("abandoned temporary directory %s not swept (stat: %v)", abandoned, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live control plane's directory was swept: %v", err)
	}
	if c.Err() != nil {
		t.Fatalf("Err() = %v before anything died", c.Err())
	}
	pids := controlplane.ProcessesUsing(c.Dir())
	var apiserver int
	for i, name := range commands(pids) {
		if name == "kube-apiserver" {
			apiserver = pids[i]
		}
	}
	if apiserver == 0 {
		t.Fatalf("no kube-apiserver among %v (%v)", pids, commands(pids))
	}
	if err := syscall.Kill(apiserver, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	case <-time.After(deadline):
		t.Fatal("Exited not closed after the API server was killed")
	}
	var exit *controlplane.ExitError
	if !errors.As(c.Err(), &exit) || exit.Component != "kube-apiserver" {
		t.Fatalf("Err() = %v, want an ExitError for kube-apiserver", c.Err())
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := controlplane.ProcessesUsing(c.Dir()); len(left) > 0 {
		t.Errorf("processes left after Close: %v %v", left, commands(left))
	}
	if _, err := os.Stat(c.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary directory %s still there after Close (stat: %v)", c.Dir(), err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
