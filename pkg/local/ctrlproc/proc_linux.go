package ctrlproc

import "syscall"

// childAttr puts a child in a process group of its own and has the kernel
// SIGKILL it when the forking thread (see spawn) dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
