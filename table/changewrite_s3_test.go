package table_test

import (
	"context"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
)

// TestChangeFeedOnMinIO writes a table with the feed on to a real S3 server (MinIO): change
// files go under _change_data/ (partitioned) before the commit that names them, vacuum keeps
// them within the retention, and invariant C holds, read back over S3.
func TestChangeFeedOnMinIO(t *testing.T) {
	ctx := context.Background()
	b := s3test.NewTestBucket(t)
	tbl := newCDFTable(t, b, []string{"p"}, feedOn)
	if _, err := tbl.Append(ctx, []*pq.Batch{cdfRows(t, [3]any{int64(1), "a", "x"}, [3]any{int64(2), "b", "y"})}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := tbl.Overwrite(ctx, sqlexpr.Eq("p", "x"), []*pq.Batch{cdfRows(t, [3]any{int64(1), "c", "x"})}, table.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Added) == 0 {
		t.Fatal("the overwrite added nothing")
	}
	vs, err := cdftest.CheckInvariantC(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	last := vs[len(vs)-1]
	if len(last.ChangeFiles) == 0 || !strings.HasPrefix(last.ChangeFiles[0], "_change_data/p=x/") {
		t.Fatalf("change files %v", last.ChangeFiles)
	}
	if n := cdftest.Counts(vs[len(vs)-1:]); n["delete"] != 1 || n["insert"] != 1 {
		t.Fatalf("change rows %v", n)
	}
	vac, err := tbl.Vacuum(ctx, table.VacuumOptions{Retention: table.MinVacuumRetention})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range vac.Files {
		if strings.HasPrefix(f, "_change_data/") {
			t.Errorf("vacuum deleted %s, named by a version within the retention", f)
		}
	}
}
