//go:build unix

package stream

import "syscall"

// cpuNanos is this process's user+system CPU time: the build machine is shared, so wall-clock
// time overstates the cost; CPU time per event is what the DESIGN.md §9 budget is about.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
