//go:build !linux

package controlplane

import "syscall"

// childAttr puts a child in process group pgid (0: a new group it leads).
// Outside Linux there is no parent-death signal: Close must run for the
// children to stop.
func childAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}
}
