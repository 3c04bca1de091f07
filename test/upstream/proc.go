package main

import (
	"context"
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// Grace periods between SIGTERM and SIGKILL of a process group.
const (
	graceBuild = 5 * time.Second
	graceTest  = 30 * time.Second // ginkgo reports the interrupted spec and runs its cleanup
	graceStack = 60 * time.Second // `local up` stops the controller, emulator and control plane
)

// group is a started command in its own process group.
type group struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startGroup starts cmd as the leader of a new process group (which, on
// Linux, is also sent SIGKILL should the harness die first).
func startGroup(cmd *exec.Cmd) (*group, error) {
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &group{cmd: cmd, done: make(chan struct{})}
	go func() {
		g.err = cmd.Wait()
		close(g.done)
	}()
	return g, nil
}

// stop sends SIGTERM to the whole group, then SIGKILL after grace if the
// leader has not exited, and waits for it. Every member is sent SIGKILL at
// the end, so none outlives the harness's interest in it.
func (g *group) stop(grace time.Duration) {
	pgid := g.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-g.done
}

// wait waits for the leader to exit or ctx to end (then stops the group).
func (g *group) wait(ctx context.Context, grace time.Duration) error {
	select {
	case <-g.done:
		// Members the leader left behind go with it.
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		return g.err
	case <-ctx.Done():
		g.stop(grace)
		return ctx.Err()
	}
}

// runGroup runs cmd in its own process group until it exits or ctx ends.
func runGroup(ctx context.Context, cmd *exec.Cmd, grace time.Duration) error {
	g, err := startGroup(cmd)
	if err != nil {
		return err
	}
	return g.wait(ctx, grace)
}

// exitCode is the exit status of a finished command's error, or -1.
func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err == nil {
		return 0
	}
	return -1
}
