package controlplane

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// ProcessesUsing lists the pids of processes, other than this one, whose
// command line mentions dir (as an argument or part of one). Components
// started by this package always name their Dir in their arguments, so
// this finds the leftovers of a control plane whose parent was killed
// before the kernel finished delivering the parent-death signal.
func ProcessesUsing(dir string) []int {
	needle := []byte(filepath.Clean(dir) + string(filepath.Separator))
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue
		}
		// Arguments are NUL separated; a trailing separator lets a bare
		// "dir" argument match as well as "dir/...".
		cmdline = append(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), ' ')
		if bytes.Contains(cmdline, needle) || bytes.Contains(cmdline, append([]byte(filepath.Clean(dir)), ' ')) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killStale SIGKILLs the components a dead control plane left running in
// dir (processes running a binary from binDir whose arguments name dir) and
// waits, bounded, until they are gone. Nothing else is touched: an editor
// or shell that merely mentions dir is not ours.
func killStale(dir, binDir string) {
	if resolved, err := filepath.EvalSymlinks(binDir); err == nil {
		binDir = resolved
	}
	stale := func() []int {
		var ours []int
		for _, pid := range ProcessesUsing(dir) {
			exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
			if err == nil && filepath.Dir(exe) == filepath.Clean(binDir) {
				ours = append(ours, pid)
			}
		}
		return ours
	}
	pids := stale()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(pids) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		pids = stale()
	}
}
