package late

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestWriteCancelledInChunks: the written rows a rewrite held back because each equalled a
// dropped row come back, when a later row differs, read from the old files in file and row
// order, handed over once at least emitChunk rows are read (a chunk and a read batch in memory,
// not a file's rows: more than one chunk here), and only the cancelled ones. Oracle: the rows
// as the test wrote them (ids encode file and row).
func TestWriteCancelledInChunks(t *testing.T) {
	ctx := context.Background()
	schema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeLong}},
		{Name: "name", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
	}}
	tbl := table.Open(mem.New(), table.Options{})
	if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	name := func(id int64) string { return fmt.Sprintf("n%d", id%977) }
	// Four files (a file's rows tell it apart: rows -> its first id): the cancelled rows pass
	// a chunk within the third, so the hand-over flushes there and again at the end.
	sizes := map[int64]int64{30_000: 0, 30_001: 1_000_000, 30_002: 2_000_000, 30_003: 3_000_000}
	for _, rows := range []int64{30_000, 30_001, 30_002, 30_003} {
		b, err := pq.NewBatch(schema)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			id := sizes[rows] + i
			b.Columns[0].AppendInt64(id)
			b.Columns[1].AppendString(name(id))
		}
		if _, err := tbl.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := newChangeFeed(nil, nil, scan, schema, [2]maphash.Seed{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	var want []int64
	for _, f := range snap.Files() {
		var st struct{ NumRecords int64 }
		if err := json.Unmarshal([]byte(f.Stats), &st); err != nil {
			t.Fatal(err)
		}
		first, ok := sizes[st.NumRecords]
		if !ok {
			t.Fatalf("%s holds %d rows: not a file the test wrote whole", f.Path, st.NumRecords)
		}
		fi := cf.file(f)
		for row := range int32(st.NumRecords) {
			d := droppedRow{at: rowRef{fi, row}}
			if r.IntN(5) > 0 { // four in five rows cancelled, in random places
				d.at.file = cancelledFile(fi)
				want = append(want, first+int64(row))
			}
			cf.drops = append(cf.drops, d)
		}
	}
	if len(want) <= emitChunk {
		t.Fatalf("%d rows cancelled: one chunk, the path under test is not reached", len(want))
	}
	var got []int64
	var writes []int
	err = cf.writeCancelled(ctx, func(b *pq.Batch) error {
		writes = append(writes, b.Len())
		for i := range b.Len() {
			id := b.Columns[0].Int64[i]
			if s := b.Columns[1].StringAt(i); s != name(id) {
				t.Fatalf("row id %d came back with name %q, written as %q", id, s, name(id))
			}
			got = append(got, id)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows came back, want %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
	}
	for k, n := range writes[:len(writes)-1] {
		if n < emitChunk {
			t.Errorf("write %d of %d took %d rows, fewer than a chunk (%d) before the last", k, len(writes), n, emitChunk)
		}
	}
	if len(writes) < 2 {
		t.Errorf("%d writes: the rows were not handed over in chunks", len(writes))
	}
}

func firstDiff(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
