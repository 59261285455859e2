package table

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

const optSchema = `{"type":"struct","fields":[
{"name":"id","type":"string","nullable":true,"metadata":{}},
{"name":"part","type":"string","nullable":true,"metadata":{}},
{"name":"n","type":"long","nullable":true,"metadata":{}},
{"name":"payload","type":"string","nullable":true,"metadata":{}}]}`

// optRow is how parquet-go's own generic reader sees a data file of optSchema (the partition
// column is not in the file): the independent oracle of what the table holds.
type optRow struct {
	ID      *string `parquet:"id,optional"`
	Part    *string `parquet:"part,optional"` // in the file only when the table is not partitioned
	N       *int64  `parquet:"n,optional"`
	Payload *string `parquet:"payload,optional"`
}

// optFileSizes are the distributions of appended file sizes (rows per append) the settle test
// draws from.
var optFileSizes = map[string]func(r *rand.Rand) int{
	"uniform":     func(r *rand.Rand) int { return 1 + r.IntN(120) },
	"exponential": func(r *rand.Rand) int { return 1 + int(r.ExpFloat64()*40) },
	"bimodal": func(r *rand.Rand) int {
		if r.IntN(4) == 0 {
			return 150 + r.IntN(300) // some files at or above the target
		}
		return 1 + r.IntN(10)
	},
	"tiny": func(r *rand.Rand) int { return 1 + r.IntN(3) },
}

// optAppend appends files of random sizes and returns the rows written, as oracle keys.
func optAppend(t *testing.T, r *rand.Rand, tbl *Table, schema *txlog.StructType, files, first int, size func(*rand.Rand) int, parts int) []string {
	t.Helper()
	ctx := context.Background()
	var want []string
	id := first
	for f := 0; f < files; f++ {
		b, err := pq.NewBatch(schema)
		if err != nil {
			t.Fatal(err)
		}
		// One append call writes one file per partition it touches.
		part := fmt.Sprintf("p%d", r.IntN(parts))
		for i, n := 0, size(r); i < n; i++ {
			payload := make([]byte, 20+r.IntN(200))
			for k := range payload {
				payload[k] = byte('a' + r.IntN(26))
			}
			key := fmt.Sprintf("id-%d", id)
			b.Columns[0].AppendString(key)
			b.Columns[1].AppendString(part)
			if r.IntN(10) == 0 {
				b.Columns[2].AppendNull()
			} else {
				b.Columns[2].AppendInt64(int64(id) * 7)
				key += fmt.Sprintf("/%d", id*7)
			}
			b.Columns[3].AppendString(string(payload))
			want = append(want, key+"/"+part+"/"+string(payload))
			id++
		}
		if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

// optRead reads every live file of the table with parquet-go's generic reader, not ours.
func optRead(t *testing.T, tbl *Table, b objstore.Bucket) []string {
	t.Helper()
	ctx := context.Background()
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range snap.Files() {
		data, err := objstore.ReadAll(ctx, b, a.Path)
		if err != nil {
			t.Fatal(err)
		}
		gr := parquet.NewGenericReader[optRow](bytes.NewReader(data))
		rows := make([]optRow, gr.NumRows())
		if n, err := gr.Read(rows); (err != nil && err != io.EOF) || n != len(rows) {
			t.Fatalf("%s: read %d of %d rows: %v", a.Path, n, len(rows), err)
		}
		gr.Close()
		part := "<null>"
		if v := a.PartitionValues["part"]; v != nil {
			part = *v
		}
		for _, row := range rows {
			if row.Part != nil {
				part = *row.Part
			}
			key := *row.ID
			if row.N != nil {
				key += fmt.Sprintf("/%d", *row.N)
			}
			got = append(got, key+"/"+part+"/"+*row.Payload)
		}
	}
	slices.Sort(got)
	return got
}

func optCheck(t *testing.T, what string, tbl *Table, b objstore.Bucket, want []string) {
	t.Helper()
	got := optRead(t, tbl, b)
	want = slices.Clone(want)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: the table holds %d rows, %d were written (or they differ)", what, len(got), len(want))
	}
}

// TestOptimizeSettles: on random file-size distributions, partitioned or not, a second
// optimize over an unchanged table commits nothing, and the rows stay the same multiset
// (read back with parquet-go's reader). New small files appended later are compacted, and the
// table settles again.
func TestOptimizeSettles(t *testing.T) {
	ctx := context.Background()
	for name, size := range optFileSizes {
		for _, parts := range []int{0, 1, 4} {
			// Two seeds per shape, one under -race: every file-size law and partition count
			// still runs there; the second seed only draws other sizes of the same shapes.
			for seed := uint64(1); seed <= uint64(testshared.Sized(2, 1)); seed++ {
				t.Run(fmt.Sprintf("%s/parts=%d/seed=%d", name, parts, seed), func(t *testing.T) {
					r := rand.New(rand.NewPCG(seed, uint64(parts)))
					schema := pqtest.MustSchema(t, optSchema)
					b := mem.New()
					tbl := Open(b, Options{})
					var partCols []string
					nparts := 1
					if parts > 0 {
						partCols, nparts = []string{"part"}, parts
					}
					if _, err := tbl.Create(ctx, schema, partCols, nil); err != nil {
						t.Fatal(err)
					}
					// Around 40 rows of ~120 bytes: a few KiB, so that many files are small
					// and a partition's data spans several target-size files.
					target := int64(4<<10 + r.IntN(12<<10))
					want := optAppend(t, r, tbl, schema, 20+r.IntN(40), 0, size, nparts)
					before, _ := tbl.Log().Snapshot(ctx)

					first, err := tbl.Optimize(ctx, OptimizeOptions{TargetSize: target})
					if err != nil {
						t.Fatal(err)
					}
					optCheck(t, "after the first optimize", tbl, b, want)
					after, _ := tbl.Log().Snapshot(ctx)
					// Compaction did its job: per partition, the small files left fit in at
					// most twice the ideal number (first fit's bound), plus one.
					smallBytes, smallAfter := map[string]int64{}, map[string]int{}
					for _, a := range before.Files() {
						if a.Size < target {
							smallBytes[fmt.Sprint(a.PartitionValues)] += a.Size
						}
					}
					for _, a := range after.Files() {
						if a.Size < target {
							smallAfter[fmt.Sprint(a.PartitionValues)]++
						}
					}
					for p, n := range smallAfter {
						if limit := 2*smallBytes[p]/target + 1; int64(n) > limit {
							t.Errorf("partition %s: %d small files left, more than %d (%d small bytes before, target %d)", p, n, limit, smallBytes[p], target)
						}
					}

					second, err := tbl.Optimize(ctx, OptimizeOptions{TargetSize: target})
					if err != nil {
						t.Fatal(err)
					}
					if second.Version != -1 || second.FilesRemoved != 0 {
						t.Fatalf("the second optimize rewrote again: %+v (first: %+v, target %d)", second, first, target)
					}
					if v := must(tbl.Log().Snapshot(ctx)).Version(); v != after.Version() {
						t.Fatalf("the second optimize committed version %d", v)
					}

					// New small files join the earlier outputs; then the table settles again.
					want = append(want, optAppend(t, r, tbl, schema, 5+r.IntN(10), len(want), optFileSizes["tiny"], nparts)...)
					if _, err := tbl.Optimize(ctx, OptimizeOptions{TargetSize: target}); err != nil {
						t.Fatal(err)
					}
					optCheck(t, "after optimizing new files", tbl, b, want)
					if res, err := tbl.Optimize(ctx, OptimizeOptions{TargetSize: target}); err != nil || res.Version != -1 {
						t.Fatalf("optimize after new files did not settle: %+v %v", res, err)
					}
				})
			}
		}
	}
}

// TestPackBins checks the packing itself on random sizes: every file in exactly one bin, no
// bin over the target, and no two bins that would fit together.
func TestPackBins(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for iter := 0; iter < 200; iter++ {
		target := int64(100 + r.IntN(1000))
		var files []*txlog.Add
		for i, n := 0, r.IntN(60); i < n; i++ {
			files = append(files, &txlog.Add{Path: fmt.Sprint(i), Size: 1 + r.Int64N(target-1)})
		}
		bins := packBins(files, func(a *txlog.Add) int64 { return a.Size }, target)
		seen := map[string]bool{}
		loads := make([]int64, len(bins))
		for i, bin := range bins {
			for _, f := range bin {
				if seen[f.Path] {
					t.Fatalf("file %s in two bins", f.Path)
				}
				seen[f.Path] = true
				loads[i] += f.Size
			}
			if loads[i] > target {
				t.Fatalf("bin %d holds %d bytes > target %d", i, loads[i], target)
			}
		}
		if len(seen) != len(files) {
			t.Fatalf("%d of %d files packed", len(seen), len(files))
		}
		for i := range loads {
			for j := i + 1; j < len(loads); j++ {
				if loads[i]+loads[j] <= target {
					t.Fatalf("bins %d (%d) and %d (%d) fit together under %d", i, loads[i], j, loads[j], target)
				}
			}
		}
	}
}
