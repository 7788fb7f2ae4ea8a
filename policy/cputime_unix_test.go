//go:build unix

package policy

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) the test process has used so
// far, all threads together (GC included). On a machine shared with other
// work it moves much less than wall time, so the benchmarks report it next
// to ns/op.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
