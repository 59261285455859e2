package stream

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table/source"
)

// joinBenchLake writes files files of rowsPerFile rows to each side's silver table on a
// file lake: 2,000 keys, times moving forward a minute a file, each click 0-8 s after an
// impression of its key.
func joinBenchLake(b *testing.B, files, rowsPerFile int) objstore.Bucket {
	b.Helper()
	lake, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for f := range files {
		left, right := make([]jrow, 0, rowsPerFile), make([]jrow, 0, rowsPerFile)
		for i := range rowsPerFile {
			key := fmt.Sprintf("ad%d", rng.IntN(2000))
			t := secs(float64(f*60) + rng.Float64()*60)
			left = append(left, jrow{id: fmt.Sprintf("i%d-%d", f, i), key: key, t: t})
			right = append(right, jrow{id: fmt.Sprintf("c%d-%d", f, i), key: key, t: t.Add(time.Duration(rng.IntN(8000)) * time.Millisecond)})
		}
		appendSilver(b, lake, "silver/imp", left)
		appendSilver(b, lake, "silver/clk", right)
	}
	return lake
}

// peakState keeps the largest join state a run's progress reported.
type peakState struct{ rows, bytes int64 }

func (p *peakState) OnProgress(pr *Progress) {
	for _, op := range pr.StateOperators {
		if op.OperatorName == "symmetricHashJoin" && op.NumRowsTotal > p.rows {
			p.rows, p.bytes = op.NumRowsTotal, op.MemoryUsedBytes
		}
	}
}

// BenchmarkJoinHost runs a left outer join (0-10 s, delays 10 s and 20 s) over 8 files of
// 20k rows a side on a file lake, two files a side per batch, into fresh joined and
// quarantine tables: events per second over both sides, CPU time per event and the join
// state's bytes per buffered row at its peak.
func BenchmarkJoinHost(b *testing.B) {
	lake := joinBenchLake(b, 8, 20_000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos()
	var rows int64
	peak := &peakState{}
	for i := range b.N {
		j := joinSpec("left_outer", 0, 10*time.Second, 10*time.Second, 20*time.Second)
		j.Table, j.Quarantine, j.Checkpoint = fmt.Sprintf("run%d/joined", i), fmt.Sprintf("run%d/late", i), fmt.Sprintf("run%d/ck", i)
		j.Limit = source.ReadLimit{MaxFiles: 2}
		j.State.MinDeltasForSnapshot = 10
		rep, err := tryJoin(lake, j, spec.AvailableNow, peak)
		if err != nil {
			b.Fatal(err)
		}
		rows += rep.LeftRows + rep.RightRows
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(rows), "cpu-ns/event")
	if peak.rows > 0 {
		b.ReportMetric(float64(peak.bytes)/float64(peak.rows), "state-B/row")
	}
}
