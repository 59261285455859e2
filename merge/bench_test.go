package merge

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

var benchGoldRows = flag.Int("gold.rows", 120_000, "rows of the gold table in BenchmarkMergeLateRows (the issue's size: -gold.rows=10000000)")

// BenchmarkMergeLateRows merges 1k late rows (one hour of 5-minute windows) into a gold table
// written one file per hour, and reports the bytes rewritten as a fraction of the table.
func BenchmarkMergeLateRows(b *testing.B) {
	ctx := context.Background()
	const types, perHour = 100, 12
	hours := max(*benchGoldRows/(types*perHour), 2)
	goldBatch := func(hour int, count int64) *pq.Batch {
		bt, _ := pq.NewBatch(schema(b))
		for w := 0; w < perHour; w++ {
			start := t0.Add(time.Duration(hour)*time.Hour + time.Duration(w)*5*time.Minute)
			for ty := 0; ty < types; ty++ {
				bt.Columns[0].Children[0].AppendTime(start)
				bt.Columns[0].Children[1].AppendTime(start.Add(5 * time.Minute))
				bt.Columns[0].AppendStruct()
				bt.Columns[1].AppendString(fmt.Sprintf("t%02d", ty))
				bt.Columns[2].AppendInt64(count)
			}
		}
		return bt
	}
	late, _ := pq.NewBatch(schema(b))
	for i := 0; i < 1000; i++ {
		start := t0.Add(time.Duration(hours/2)*time.Hour + time.Duration(i%perHour)*5*time.Minute)
		late.Columns[0].Children[0].AppendTime(start)
		late.Columns[0].Children[1].AppendTime(start.Add(5 * time.Minute))
		late.Columns[0].AppendStruct()
		late.Columns[1].AppendString(fmt.Sprintf("t%02d", i/perHour))
		late.Columns[2].AppendInt64(1)
	}
	var ratio float64
	var read int
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tbl := table.Open(mem.New(), table.Options{})
		if _, err := tbl.Create(ctx, schema(b), nil, nil); err != nil {
			b.Fatal(err)
		}
		var total int64
		for h := 0; h < hours; h++ {
			r, err := tbl.Append(ctx, []*pq.Batch{goldBatch(h, 10)}, table.AppendOptions{})
			if err != nil {
				b.Fatal(err)
			}
			total += r.BytesWritten
		}
		b.StartTimer()
		res, err := Run(ctx, tbl, upsertAdd(late))
		if err != nil {
			b.Fatal(err)
		}
		if res.Updated != 1000 {
			b.Fatalf("updated %d rows", res.Updated)
		}
		ratio = float64(res.BytesRemoved) / float64(total)
		read = res.FilesRead
	}
	b.ReportMetric(ratio, "rewritten/table")
	b.ReportMetric(float64(read), "files-read")
	b.ReportMetric(float64(hours), "files")
}
