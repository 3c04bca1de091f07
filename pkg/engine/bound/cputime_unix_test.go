//go:build unix

package bound

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used (user + system). The
// benchmarks report it per operation next to wall time, because the machine
// they run on is shared and wall time there measures the neighbours too.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
