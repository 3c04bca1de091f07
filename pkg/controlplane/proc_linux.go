package controlplane

import "syscall"

// childAttr puts a child in process group pgid (0: a new group it leads) and
// has the kernel SIGKILL it when the forking thread, and so this process,
// dies.
func childAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGKILL}
}
