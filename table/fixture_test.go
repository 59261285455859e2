package table

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// fixtureRoot is the shared Delta fixtures folder (see testshared: skipped when missing, failed
// under CI=true).
func fixtureRoot(t testing.TB) string {
	t.Helper()
	root := testshared.Path(t, "fixtures", "delta")
	testshared.Path(t, "fixtures", "delta", "EXPECTED.md")
	return root
}

// scanFixture reads a fixture table at a version (-1: latest) through txlog and FileScan.
func scanFixture(t testing.TB, rel string, version int64, cols []string, filter sqlexpr.Expr) (*txlog.StructType, [][]any, int) {
	t.Helper()
	ctx := context.Background()
	b, err := file.New(filepath.Join(fixtureRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	log := txlog.New(b, txlog.Options{})
	var snap *txlog.Snapshot
	if version < 0 {
		snap, err = log.Snapshot(ctx)
	} else {
		snap, err = log.SnapshotAt(ctx, version)
	}
	if err != nil {
		t.Fatalf("%s: snapshot: %v", rel, err)
	}
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	fs := &FileScan{Bucket: b, Schema: schema, PartitionCols: snap.PartitionColumns(), Columns: cols}
	if filter != nil {
		if fs.Filter, err = sqlexpr.Bind(filter, schema, snap.PartitionColumns()); err != nil {
			t.Fatal(err)
		}
	}
	files := fs.Files(snap.Files())
	var rows [][]any
	var outSchema *txlog.StructType
	for batch, err := range fs.Read(ctx, snap.Files()) {
		if err != nil {
			t.Fatalf("%s: scan: %v", rel, err)
		}
		outSchema = batch.Schema
		for i := 0; i < batch.Len(); i++ {
			rows = append(rows, batch.Row(i))
		}
	}
	return outSchema, rows, len(files)
}

func seq[T any](n int, f func(i int) T) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func utcMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// TestFixtures reads every data-bearing fixture and compares its rows with EXPECTED.md, whose
// values are typed out here.
func TestFixtures(t *testing.T) {
	type tc struct {
		dir     string
		version int64
		want    [][]any
	}
	ids := func(vals ...int64) [][]any { return seq(len(vals), func(i int) []any { return []any{vals[i]} }) }
	rng := func(lo, hi int64) []int64 {
		var out []int64
		for i := lo; i < hi; i++ {
			out = append(out, i)
		}
		return out
	}
	i32 := func(vals ...int64) [][]any {
		return seq(len(vals), func(i int) []any { return []any{int32(vals[i])} })
	}
	col2 := func(prefix string, n int) [][]any {
		return seq(n, func(i int) []any { return []any{int32(i), fmt.Sprintf("%s%d", prefix, i)} })
	}
	var deletesCkpt []int64
	for _, r := range [][2]int64{{0, 5}, {10, 15}, {20, 25}, {30, 35}, {40, 45}, {50, 66}} {
		deletesCkpt = append(deletesCkpt, rng(r[0], r[1])...)
	}
	var merge [][]any
	for i := int32(10); i < 150; i++ {
		switch {
		case i < 50:
			merge = append(merge, []any{i, fmt.Sprintf("val=%d", i)})
		case i < 100:
			merge = append(merge, []any{i, "N/A"})
		default:
			merge = append(merge, []any{i, "EXT"})
		}
	}
	var dv [][]any
	for x := int32(0); x < 50; x++ {
		if x%2 == 0 && x < 30 {
			continue
		}
		dv = append(dv, []any{x % 10, x, fmt.Sprintf("foo%d", x%5)})
	}
	primitives := seq(10, func(i int) []any {
		return []any{int32(i), int64(i), int8(i), int16(i), i%2 == 0, float32(i), float64(i), fmt.Sprint(i),
			[]byte{byte(i), byte(i)}, pq.Decimal{Unscaled: pq.DecimalFromInt64(int64(i)), Scale: 0}}
	})
	primitives = append(primitives, make([]any, 10))
	pv := func(i int32) []any {
		s := fmt.Sprint(i)
		return []any{i, int64(i), int8(i), int16(i), i%2 == 0, float32(i), float64(i), s, "null",
			time.Date(2021, 9, 8, 0, 0, 0, 0, time.UTC), time.Date(2021, 9, 8, 11, 11, 11, 0, time.UTC),
			pq.Decimal{Unscaled: pq.DecimalFromInt64(int64(i)), Scale: 0},
			[]any{[]pq.Field{{Name: "val", Value: i}}, []pq.Field{{Name: "val", Value: i}}, []pq.Field{{Name: "val", Value: i}}},
			[]pq.Field{{Name: "aa", Value: s}, {Name: "ab", Value: s}, {Name: "ac", Value: []pq.Field{{Name: "aca", Value: i}, {Name: "acb", Value: int64(i)}}}}, s}
	}
	pvNull := append(make([]any, 12),
		[]any{[]pq.Field{{Name: "val", Value: int32(2)}}, []pq.Field{{Name: "val", Value: int32(2)}}, []pq.Field{{Name: "val", Value: int32(2)}}},
		[]pq.Field{{Name: "aa", Value: "2"}, {Name: "ab", Value: "2"}, {Name: "ac", Value: []pq.Field{{Name: "aca", Value: int32(2)}, {Name: "acb", Value: int64(2)}}}}, "2")
	cases := []tc{
		{"delta-golden/125-iterator-bug", -1, i32(1, 2, 3, 4, 5)},
		{"delta-golden/basic-with-inserts-deletes-checkpoint", -1, ids(deletesCkpt...)},
		{"delta-golden/basic-with-inserts-merge", -1, merge},
		{"delta-golden/multi-part-checkpoint", -1, ids(append([]int64{0}, rng(0, 30)...)...)},
		{"delta-golden/corrupted-last-checkpoint-kernel", -1, ids(rng(0, 100)...)},
		{"delta-golden/v2-checkpoint-json", -1, ids(rng(0, 10)...)},
		{"delta-golden/snapshot-data3", 0, col2("data-0-", 10)},
		{"delta-golden/snapshot-data3", 2, col2("data-2-", 10)},
		{"delta-golden/snapshot-data3", 3, append(col2("data-2-", 10), col2("data-3-", 20)...)},
		{"delta-golden/snapshot-data2-deleted", -1, col2("data-3-", 20)},
		{"delta-golden/snapshot-repartitioned", -1, col2("data-3-", 20)},
		{"delta-golden/time-travel-start-start20-start40", 0, ids(rng(0, 10)...)},
		{"delta-golden/time-travel-start-start20-start40", 1, ids(rng(0, 20)...)},
		{"delta-golden/time-travel-start-start20-start40", 2, ids(rng(0, 30)...)},
		{"delta-golden/dv-partitioned-with-checkpoint", -1, dv},
		{"delta-golden/data-reader-primitives", -1, primitives},
		{"delta-golden/data-reader-partition-values", -1, [][]any{pv(0), pv(1), pvNull}},
		{"delta-golden/kernel-timestamp-TIMESTAMP_MICROS", -1, [][]any{
			{int32(0), utcMicros(1577866150001000), utcMicros(1580544550000000)},
			{int32(1), utcMicros(1633075760000000), utcMicros(915181200000000)},
			{int32(2), utcMicros(1633075760000000), utcMicros(946717200000000)},
			{int32(3), utcMicros(-31536000000000), utcMicros(-31536000000000)},
			{int32(4), nil, nil}}},
		{"delta-rs/simple_table", -1, ids(5, 7, 9)},
		{"delta-rs/simple_table", 0, ids(rng(0, 5)...)},
		{"delta-rs/simple_table", 3, ids(5, 7, 9, 106, 108)},
		{"delta-rs/delta-0.2.0", -1, i32(1, 2, 3, 1, 2, 3)},
		{"delta-rs/delta-0.2.0", 2, i32(1, 2, 3)},
		{"delta-rs/delta-0.8.0", -1, i32(0, 1, 2, 4)},
		{"delta-rs/delta-0.8.0-partitioned", -1, [][]any{
			{"1", "2020", "1", "1"}, {"2", "2020", "2", "3"}, {"3", "2020", "2", "5"}, {"6", "2021", "12", "20"},
			{"7", "2021", "12", "20"}, {"5", "2021", "12", "4"}, {"4", "2021", "4", "5"}}},
		{"delta-rs/delta-0.8.0-special-partition", -1, [][]any{{"A/A", int64(1)}, {"B B", int64(2)}}},
		{"dat/basic_append/delta", -1, [][]any{{"a", int64(1), 1.1}, {"b", int64(2), 2.2}, {"c", int64(3), 3.3}, {"d", int64(4), 4.4}, {"e", int64(5), 5.5}}},
		{"dat/basic_append/delta", 0, [][]any{{"a", int64(1), 1.1}, {"b", int64(2), 2.2}, {"c", int64(3), 3.3}}},
		{"dat/basic_partitioned/delta", -1, [][]any{{"a", int64(1), 1.1}, {"b", int64(2), 2.2}, {"c", int64(3), 3.3},
			{"a", int64(4), 4.4}, {"e", int64(5), 5.5}, {nil, int64(6), 6.6}}},
		{"dat/with_schema_change/delta", -1, [][]any{{int64(22), int64(33)}, {int64(44), int64(55)}, {int64(66), int64(77)}}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s@%d", c.dir, c.version), func(t *testing.T) {
			_, rows, _ := scanFixture(t, c.dir, c.version, nil, nil)
			got, want := pqtest.CanonRows(rows), pqtest.CanonRows(c.want)
			if !slices.Equal(got, want) {
				t.Errorf("got %d rows, want %d\ngot  %v\nwant %v", len(got), len(want), got, want)
			}
		})
	}
	t.Run("checkpoint-v2-table", func(t *testing.T) {
		_, rows, _ := scanFixture(t, "delta-rs/checkpoint-v2-table", -1, []string{"id"}, nil)
		if got, want := pqtest.CanonRows(rows), pqtest.CanonRows(ids(rng(1, 45)...)); !slices.Equal(got, want) {
			t.Errorf("ids: got %v, want %v", got, want)
		}
		_, rows, _ = scanFixture(t, "delta-rs/checkpoint-v2-table", 5, []string{"id"}, nil)
		if len(rows) != 22 {
			t.Errorf("v5 has %d rows, want 22", len(rows))
		}
	})
}

// datRow is the dat tables' schema, read with parquet-go's generic reader as the oracle.
type datRow struct {
	Letter *string  `parquet:"letter,optional"`
	Number *int64   `parquet:"number,optional"`
	AFloat *float64 `parquet:"a_float,optional"`
}

type datSchemaChange struct {
	Num1 *int64 `parquet:"num1,optional"`
	Num2 *int64 `parquet:"num2,optional"`
}

func optAny[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestDatExpected compares our scans of the dat tables with their expected/*/table_content.parquet.
func TestDatExpected(t *testing.T) {
	root := fixtureRoot(t)
	for _, tbl := range []string{"basic_append", "basic_partitioned", "with_schema_change"} {
		vers, err := os.ReadDir(filepath.Join(root, "dat", tbl, "expected"))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vers {
			t.Run(tbl+"/"+v.Name(), func(t *testing.T) {
				path := filepath.Join(root, "dat", tbl, "expected", v.Name(), "table_content.parquet")
				var want [][]any
				if tbl == "with_schema_change" {
					rows, err := parquet.ReadFile[datSchemaChange](path)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rows {
						want = append(want, []any{optAny(r.Num1), optAny(r.Num2)})
					}
				} else {
					rows, err := parquet.ReadFile[datRow](path)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range rows {
						want = append(want, []any{optAny(r.Letter), optAny(r.Number), optAny(r.AFloat)})
					}
				}
				version := int64(-1)
				if v.Name() != "latest" {
					fmt.Sscanf(v.Name(), "v%d", &version)
				}
				_, rows, _ := scanFixture(t, filepath.Join("dat", tbl, "delta"), version, nil, nil)
				if got, w := pqtest.CanonRows(rows), pqtest.CanonRows(want); !slices.Equal(got, w) || len(w) == 0 {
					t.Errorf("got %v\nwant %v", got, w)
				}
			})
		}
	}
}

func TestFixtureFilters(t *testing.T) {
	cases := []struct {
		dir       string
		filter    sqlexpr.Expr
		wantRows  int
		wantFiles int
	}{
		{"delta-rs/delta-0.8.0-special-partition", sqlexpr.Eq("x", "A/A"), 1, 1},
		{"delta-rs/delta-0.8.0-partitioned", sqlexpr.And(sqlexpr.Eq("year", "2021"), sqlexpr.Eq("month", "12")), 3, 2},
		{"dat/basic_partitioned/delta", sqlexpr.IsNull("letter"), 1, 1},
		{"dat/basic_partitioned/delta", sqlexpr.Not(sqlexpr.IsNull("letter")), 5, 5},
		{"delta-rs/delta-0.8.0", sqlexpr.Gt("value", 2), 1, 1},
		{"delta-golden/kernel-timestamp-TIMESTAMP_MICROS", sqlexpr.Lt("time", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)), 1, 1},
		{"delta-golden/data-reader-partition-values", sqlexpr.In("as_int", 0, 1), 2, 2},
		{"delta-golden/data-reader-partition-values", sqlexpr.Eq("as_nested_struct.ac.acb", 2), 1, 3},
		// files: every live add whose partition value is "3", counted from the log below
		{"delta-golden/dv-partitioned-with-checkpoint", sqlexpr.Eq("part", 3), 5, -1},
	}
	for _, c := range cases {
		t.Run(c.dir+" "+c.filter.String(), func(t *testing.T) {
			_, rows, files := scanFixture(t, c.dir, -1, nil, c.filter)
			if c.wantFiles < 0 {
				b, _ := file.New(filepath.Join(fixtureRoot(t), c.dir))
				snap, err := txlog.New(b, txlog.Options{}).Snapshot(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				c.wantFiles = 0
				for _, f := range snap.Files() {
					if v := f.PartitionValues["part"]; v != nil && *v == "3" {
						c.wantFiles++
					}
				}
			}
			if len(rows) != c.wantRows || files != c.wantFiles {
				t.Errorf("got %d rows from %d files, want %d rows from %d files", len(rows), files, c.wantRows, c.wantFiles)
			}
		})
	}
}
