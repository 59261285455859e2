package table

import (
	"fmt"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/sqlexpr"
)

// A projection of partition columns only leaves no data column to decode: the row count of
// each row group must then come from the file, not from a batch of zero columns (an empty
// batch taken for a row group of zero rows). Oracle: the fixtures' EXPECTED.md.
func TestDecodersScanPartitionColumnsOnly(t *testing.T) {
	// delta-rs/delta-0.8.0-partitioned: 7 rows (value, year, month, day).
	_, rows, _ := scanFixture(t, "delta-rs/delta-0.8.0-partitioned", -1, []string{"year", "month"}, nil)
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprint(r...))
	}
	slices.Sort(got)
	want := []string{"20201", "20202", "20202", "202112", "202112", "202112", "20214"}
	if !slices.Equal(got, want) {
		t.Fatalf("year, month only: got %q, want %q", got, want)
	}
	// With a filter on a partition column only.
	_, rows, _ = scanFixture(t, "delta-rs/delta-0.8.0-partitioned", -1, []string{"day"}, sqlexpr.And(sqlexpr.Eq("year", "2021"), sqlexpr.Eq("month", "12")))
	if len(rows) != 3 {
		t.Fatalf("day where year=2021 and month=12: %d rows, want 3", len(rows))
	}
	// delta-golden/dv-partitioned-with-checkpoint: 35 live rows (deletion vectors remove 2 of
	// the 37), 5 of them with part = 3... part is x%10 for the 35 rows kept.
	_, rows, _ = scanFixture(t, "delta-golden/dv-partitioned-with-checkpoint", -1, []string{"part"}, nil)
	counts := map[any]int{}
	for _, r := range rows {
		counts[r[0]]++
	}
	if len(rows) != 35 {
		t.Fatalf("part only, with deletion vectors: %d rows, want 35 (%v)", len(rows), counts)
	}
	// The same count as the full scan, per partition.
	_, full, _ := scanFixture(t, "delta-golden/dv-partitioned-with-checkpoint", -1, nil, nil)
	fullCounts := map[any]int{}
	for _, r := range full {
		fullCounts[r[0]]++
	}
	if fmt.Sprint(counts) != fmt.Sprint(fullCounts) {
		t.Fatalf("part only: per-partition counts %v, full scan %v", counts, fullCounts)
	}
}
