package controlplane

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// DirInUseError reports that another live process holds the lock of a
// directory. Check for it with errors.As.
type DirInUseError struct {
	Dir string // the directory
	PID int    // the holder's process id, 0 when it could not be read
}

func (e *DirInUseError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("%s is in use by process %d", e.Dir, e.PID)
	}
	return fmt.Sprintf("%s is in use by another process", e.Dir)
}

// DirLock is an exclusive, advisory lock on a directory, held through
// flock(2) on a file in it. The kernel drops the lock when its holder dies,
// however it dies, so a crashed or killed holder never leaves a stale lock.
// The lock file records the holder's pid for error messages.
type DirLock struct {
	f *os.File
	// PreviousPID is the pid the lock file named when it was taken: a
	// holder that died without cleaning up (0 when there was none).
	PreviousPID int
}

// LockDir takes the lock file at path (created when missing) without
// waiting. When another process holds it, it returns a *DirInUseError
// naming dir and that process.
func LockDir(dir, path string) (*DirLock, error) {
	// O_CLOEXEC (Go's default) keeps children from inheriting the lock.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			b, _ := os.ReadFile(path)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return nil, &DirInUseError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	l := &DirLock{f: f}
	if b, err := os.ReadFile(path); err == nil {
		l.PreviousPID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return l, nil
}

// Unlock releases the lock. It is safe to call more than once.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}
