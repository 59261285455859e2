//go:build unix

package gen

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// cpuTime is the process's user+system CPU time: on a shared, loaded machine the wall clock
// overstates the cost, so the benchmarks also report lines per CPU second.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportRates(b *testing.B, lines int64, cpu0 time.Duration) {
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(lines)/(cpuTime(b)-cpu0).Seconds(), "lines/cpu-s")
}

// BenchmarkRender measures the line renderer alone, reusing one buffer: the CPU cost per line.
func BenchmarkRender(b *testing.B) {
	const perOp = 100_000
	o := DefaultOptions()
	o.Lines = 1 << 40 // never runs out
	o.LinesPerFile = perOp
	g, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 16<<20)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		_, buf = g.NextFile(buf[:0])
		b.SetBytes(int64(len(buf)))
		g.stats.Keys = g.stats.Keys[:0] // the benchmark's endless run must not grow the key list
	}
	reportRates(b, int64(perOp*b.N), cpu0)
}

// BenchmarkGenerate writes 1M lines in 4 objects to the in-memory bucket, end to end.
func BenchmarkGenerate(b *testing.B) {
	const lines = 1_000_000
	o := DefaultOptions()
	o.Lines, o.Files = lines, 4
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	for b.Loop() {
		st, err := Generate(context.Background(), mem.New(), o)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(st.Bytes)
	}
	reportRates(b, int64(lines*b.N), cpu0)
}
