package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one running control-plane component.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	started time.Time
	tier    int // Close stops higher tiers first

	done    chan struct{} // closed once the process has been reaped
	waitErr error         // its exit status; read only after done is closed
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end with SIGTERM, waits up to grace, then kills
// it. It reports whether the process had to be killed.
func (p *process) stop(grace time.Duration) (killed bool) {
	if p.exited() {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return false
	case <-t.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return true
}

// logTail returns the last n lines of the component's log.
func (p *process) logTail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logMentions reports whether the component's log contains s.
func (p *process) logMentions(s string) bool {
	b, err := os.ReadFile(p.logPath)
	return err == nil && bytes.Contains(b, []byte(s))
}

// group tracks the process group all children of one control plane share.
// The group is new (its first member leads it), so it never contains the
// caller's own process or the test runner: signalling it, or a terminal's
// Ctrl-C reaching our own group, cannot hit the wrong processes.
type group struct {
	mu      sync.Mutex
	pgid    int
	members []*process
}

// start launches cmd as a member of the group, logging to logPath.
func (g *group) start(name string, cmd *exec.Cmd, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	fmt.Fprintf(logFile, "### %s %s\n", time.Now().Format(time.RFC3339), strings.Join(cmd.Args, " "))
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Stdin = nil

	g.mu.Lock()
	defer g.mu.Unlock()
	pgid := 0
	for _, m := range g.members {
		if !m.exited() {
			pgid = g.pgid
			break
		}
	}
	cmd.SysProcAttr = childAttr(pgid)
	err = spawn(cmd)
	if err != nil && pgid != 0 {
		// The group may have emptied between the check and the fork; lead a
		// new one instead.
		cmd.SysProcAttr = childAttr(0)
		pgid = 0
		err = spawn(cmd)
	}
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	if pgid == 0 {
		g.pgid = cmd.Process.Pid
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, started: time.Now(), done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	g.members = append(g.members, p)
	return p, nil
}

// Children must die with the process that started them, even when it is
// killed with SIGKILL or crashes (go test's timeout panic): no deferred
// cleanup runs then. Linux offers PR_SET_PDEATHSIG (SysProcAttr.Pdeathsig),
// but it fires when the *thread* that forked the child exits, not the
// process. The Go runtime normally keeps its threads for the life of the
// process; the exception is a goroutine that ends while locked to its
// thread (runtime.LockOSThread without UnlockOSThread), which makes the
// runtime terminate that thread. If a child had been forked from a thread
// that some other goroutine later locked and abandoned, the child would be
// killed for no reason.
//
// So every child is forked from one dedicated goroutine that locks itself
// to its thread and never returns: no other goroutine can run on that
// thread, and the thread lives exactly as long as the process. The cost is
// one parked OS thread.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnRequest)
		go spawner()
	})
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnReqs <- req
	return <-req.done
}

func spawner() {
	runtime.LockOSThread() // never unlocked: see the comment above
	for req := range spawnReqs {
		// Stdout/Stderr are *os.File, so Start forks right here and starts
		// no copying goroutines.
		req.done <- req.cmd.Start()
	}
}

// errPortInUse marks a component that could not bind one of its ports
// (another process took it between our probe and the component's bind).
var errPortInUse = errors.New("port already in use")
