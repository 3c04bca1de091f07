package ctrlproc

import (
	"os/exec"
	"runtime"
	"sync"
)

// Children are forked from one goroutine locked to its OS thread for the
// life of the process: Linux's parent-death signal (Pdeathsig) fires when
// the forking *thread* exits, and the Go runtime ends a thread only when a
// goroutine exits while locked to it. Forking from a thread that lives as
// long as the process means a child dies with the stack's process (even on
// SIGKILL) and never before.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnRequest
)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func spawn(cmd *exec.Cmd) error {
	cmd.SysProcAttr = childAttr()
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked, on purpose
			for req := range spawnReqs {
				req.done <- req.cmd.Start()
			}
		}()
	})
	req := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawnReqs <- req
	return <-req.done
}
