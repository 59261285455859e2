package table

import (
	"context"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/sqlexpr"
)

// TestTableOnMinIO runs the table operations against a real S3 server (MinIO, started by the
// test harness): ranged reads of Parquet footers and pages, put-if-absent commits.
func TestTableOnMinIO(t *testing.T) {
	ctx := context.Background()
	b := s3test.NewTestBucket(t)
	tbl := Open(b, Options{})
	if _, err := tbl.Create(ctx, pqtest.MustSchema(t, eventSchema), []string{"day"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 72)}, AppendOptions{Txn: &AppTxn{AppID: "x", Version: 1}}); err != nil {
		t.Fatal(err)
	}
	if r, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 72)}, AppendOptions{Txn: &AppTxn{AppID: "x", Version: 1}}); err != nil || !r.Skipped {
		t.Fatalf("retry: %+v %v", r, err)
	}
	if _, err := tbl.Overwrite(ctx, sqlexpr.Eq("day", "2024-03-02"), []*pq.Batch{events(t, "n", 24, 24)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Optimize(ctx, OptimizeOptions{}); err != nil {
		t.Fatal(err)
	}
	want := append(append(ids("a", 0, 24), ids("a", 48, 24)...), ids("n", 24, 24)...)
	slices.Sort(want)
	if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
	if got := scanIDs(t, tbl, ScanOptions{Filter: sqlexpr.Ge("amount", 70.0)}); !slices.Equal(got, []string{"a-70", "a-71"}) {
		t.Errorf("filtered: %v", got)
	}
}
