//go:build !linux

package ctrlproc

import "syscall"

// childAttr puts a child in a process group of its own (no parent-death
// signal outside Linux: Stop must run).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
