//go:build unix

package join

import "syscall"

// cpuNanos is this process's user+system CPU time: the machine is shared, so the benchmarks
// report CPU time beside wall time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
