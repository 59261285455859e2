package table

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// BenchmarkChangesVsScan reads one appended version of 100,000 event rows as its change feed
// (inserts, with the three change columns) and, as the baseline in the same run, as a plain
// scan of the same files: cpu-ns/row of each.
func BenchmarkChangesVsScan(b *testing.B) {
	const rows = 100_000
	ctx := context.Background()
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(ctx, pqtest.MustSchema(b, eventSchema), nil, map[string]string{ChangeFeedProperty: "true"}); err != nil {
		b.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{events(b, "e", 0, rows)}, AppendOptions{}); err != nil {
		b.Fatal(err)
	}
	read := map[string]func() (int, error){
		"scan": func() (int, error) {
			n := 0
			for batch, err := range tbl.Scan(ctx, ScanOptions{}) {
				if err != nil {
					return 0, err
				}
				n += batch.Len()
			}
			return n, nil
		},
		"changes": func() (int, error) {
			n := 0
			for cs, err := range tbl.Changes(ctx, 1, 1) {
				if err != nil {
					return 0, err
				}
				n += cs.Rows.Len()
			}
			return n, nil
		},
	}
	for _, name := range []string{"scan", "changes"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := pqtest.CPUClock()
			for i := 0; i < b.N; i++ {
				n, err := read[name]()
				if err != nil || n != rows {
					b.Fatalf("%d rows, %v", n, err)
				}
			}
			reportCPU(b, cpu, b.N*rows)
		})
	}
}
