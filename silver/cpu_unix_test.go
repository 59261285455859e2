//go:build unix

package silver

import "syscall"

// cpuNanos is the process's user+system CPU time: the machine is shared, so benchmarks report
// CPU per event beside wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
