//go:build unix

package gold

import (
	"syscall"
	"testing"
)

// cpuNanos is this process's user+system CPU time. The build machine is shared, so wall-clock
// ns/op overstates the cost; CPU time per event is what the §9 budget is about.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func reportCPU(b *testing.B, start int64, events int) {
	b.ReportMetric(float64(cpuNanos()-start)/float64(events), "cpu-ns/event")
}
