package table_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

var (
	diffRows  = flag.Int("table.diff-rows", 0, "rows per file of TestReadersAgreeWithWrittenData (0: a mix of 1, 3000 and 300k; 20k under -race)")
	diffFiles = flag.Int("table.diff-files", 0, "files of TestReadersAgreeWithWrittenData (0: 8; 12 under -race)")
	diffSeed  = flag.Uint64("table.diff-seed", 0, "first seed of TestReadersAgreeWithWrittenData (0: random)")
)

// TestReadersAgreeWithWrittenData is a differential test of every read path against the data
// written: random batches (every column type; nulls from none to all, in runs, isolated, and
// the few-values-then-a-page-of-nulls shape of issue 25; low to unique cardinality, so
// dictionary pages, plain pages and dictionary fallback) go through the writer with random
// row-group and page sizes, then come back through DecodeFile, a full scan, a projection, a
// row selection and ReadWith's shared buffers. The oracle is the batch that was written.
// Larger runs: go test ./table -run ReadersAgree -args -table.diff-rows=3000000 -table.diff-files=4
func TestReadersAgreeWithWrittenData(t *testing.T) {
	files := 8
	sizes := []int{1, 300_000, 3000, 300_000}
	if raceEnabled {
		sizes = []int{1, 20_000, 3000, 20_000}
		files = 12
	}
	if *diffFiles > 0 {
		files = *diffFiles
	}
	seed := *diffSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	for f := 0; f < files; f++ {
		s := seed + uint64(f)
		r := rand.New(rand.NewPCG(s, 0x25))
		rows := sizes[f%len(sizes)]
		if *diffRows > 0 {
			rows = *diffRows
		}
		if testing.Short() {
			rows = min(rows, 5000)
		}
		nested := f%2 == 1
		t.Run(fmt.Sprintf("seed=%d/rows=%d", s, rows), func(t *testing.T) {
			checkReaders(t, r, rows, nested, s)
		})
	}
}

func checkReaders(t *testing.T, r *rand.Rand, rows int, nested bool, seed uint64) {
	checkReadersWith(t, r, rows, nested, seed, nil)
}

// checkReadersWith writes one random batch of rows rows with the given write options (random
// ones when nil) and compares every read path with it.
func checkReadersWith(t *testing.T, r *rand.Rand, rows int, nested bool, seed uint64, fixed *pq.WriteOptions) {
	ctx := context.Background()
	schema := pqtest.RandomSchema(r, nested)
	want, shapes, err := pqtest.RandomBatch(r, schema, rows)
	if err != nil {
		t.Fatal(err)
	}
	opts := pqtest.RandomWriteOptions(r, rows)
	if fixed != nil {
		opts = *fixed
	}
	describe := func() string {
		s := fmt.Sprintf("seed %d (rerun with -args -table.diff-seed=%d -table.diff-files=1 -table.diff-rows=%d), options %+v, shapes:", seed, seed, rows, opts)
		for i, f := range schema.Fields {
			s += fmt.Sprintf(" %s=%s", f.Name, shapes[i])
		}
		return s
	}
	bucket := mem.New()
	tbl := table.Open(bucket, table.Options{Write: opts})
	if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{want}, table.AppendOptions{}); err != nil {
		t.Fatalf("append: %v\n%s", err, describe())
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	adds := snap.Files()

	// DecodeFile, file by file.
	var decoded []*pq.Batch
	for _, a := range adds {
		data, err := objstore.ReadAll(ctx, bucket, a.Path)
		if err != nil {
			t.Fatal(err)
		}
		bs, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), schema)
		if err != nil {
			t.Fatalf("DecodeFile %s: %v\n%s", a.Path, err, describe())
		}
		decoded = append(decoded, bs...)
	}
	compareByID(t, "DecodeFile", want, nil, decoded, describe)

	scan := func(cols []string, filter sqlexpr.Expr, buf *pq.ReadBuffer) []*pq.Batch {
		t.Helper()
		fs, err := tbl.FileScan(snap, cols, filter)
		if err != nil {
			t.Fatal(err)
		}
		var out []*pq.Batch
		for b, err := range fs.ReadWith(ctx, adds, buf) {
			if err != nil {
				t.Fatalf("scan %v where %v: %v\n%s", cols, filter, err, describe())
			}
			if buf != nil {
				b = copyBatch(t, b) // the next batch reuses b's buffers
			}
			out = append(out, b)
		}
		return out
	}
	compareByID(t, "full scan", want, nil, scan(nil, nil, nil), describe)
	compareByID(t, "ReadWith", want, nil, scan(nil, nil, &pq.ReadBuffer{}), describe)

	// A projection: a few columns in a new order, "id" among them to line rows up.
	names := []string{}
	for _, f := range schema.Fields {
		if f.Name != "id" && r.IntN(3) == 0 {
			names = append(names, f.Name)
		}
	}
	names = append(names, "id")
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	compareByID(t, "projection", want, names, scan(names, nil, nil), describe)

	// A row selection: the rows where one nullable column is present.
	col := schema.Fields[1+r.IntN(len(schema.Fields)-1)]
	if col.Name == "id" {
		col = schema.Fields[0]
	}
	if _, ok := col.Type.(txlog.PrimitiveType); ok || isDecimal(col.Type) {
		ci := schema.FieldIndex(col.Name)
		keep := make([]bool, rows)
		for i := range keep {
			keep[i] = !want.Columns[ci].IsNull(i)
		}
		compareByID(t, "selection "+col.Name+" IS NOT NULL", want.Filter(keep), nil,
			scan(nil, sqlexpr.IsNotNull(col.Name), &pq.ReadBuffer{}), describe)
	}
}

func isDecimal(t txlog.DataType) bool { _, ok := t.(txlog.DecimalType); return ok }

func copyBatch(t *testing.T, b *pq.Batch) *pq.Batch {
	t.Helper()
	c, err := pq.NewBatch(b.Schema)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < b.Len(); i++ {
		c.AppendRow(b, i)
	}
	return c
}

// compareByID checks that got holds exactly the rows of want (projected to cols, all when
// nil), in any file order but with the row order of each file kept: rows are matched on the
// "id" column, which the generator sets to the row number.
func compareByID(t *testing.T, path string, want *pq.Batch, cols []string, got []*pq.Batch, describe func() string) {
	t.Helper()
	if cols == nil {
		for _, f := range want.Schema.Fields {
			cols = append(cols, f.Name)
		}
	}
	wantRow := map[int64]int{}
	idCol := want.Column("id")
	for i := 0; i < want.Len(); i++ {
		wantRow[idCol.Int64[i]] = i
	}
	seen := 0
	for _, b := range got {
		if err := b.Validate(); err != nil {
			t.Fatalf("%s: invalid batch: %v\n%s", path, err, describe())
		}
		if len(b.Columns) != len(cols) {
			t.Fatalf("%s: batch has %d columns, want %d", path, len(b.Columns), len(cols))
		}
		gid := b.Column("id")
		lastID := int64(-1)
		for i := 0; i < b.Len(); i++ {
			id := gid.Int64[i]
			w, ok := wantRow[id]
			if !ok {
				t.Fatalf("%s: row with id %d was not written (or read twice)\n%s", path, id, describe())
			}
			if id <= lastID {
				t.Fatalf("%s: id %d after %d: row order within a file not kept\n%s", path, id, lastID, describe())
			}
			lastID = id
			delete(wantRow, id)
			seen++
			for c, name := range cols {
				wc := want.Column(name)
				if !sameCell(wc, w, b.Columns[c], i) {
					t.Fatalf("%s: row %d column %s: got %v (null %v), want %v (null %v)\n%s",
						path, id, name, b.Columns[c].Value(i), b.Columns[c].IsNull(i), wc.Value(w), wc.IsNull(w), describe())
				}
			}
		}
	}
	if len(wantRow) != 0 {
		t.Fatalf("%s: %d of %d rows missing\n%s", path, len(wantRow), want.Len(), describe())
	}
	_ = seen
}

// sameCell compares row i of a with row j of b structurally, floats by their bits: it reads
// the column buffers directly, not through the accessors the reader's tests use.
func sameCell(a *pq.Column, i int, b *pq.Column, j int) bool {
	if a.Kind != b.Kind {
		return false
	}
	if a.IsNull(i) || b.IsNull(j) {
		return a.IsNull(i) == b.IsNull(j)
	}
	switch a.Kind {
	case pq.KindInt64:
		return a.Int64[i] == b.Int64[j]
	case pq.KindInt32:
		return a.Int32[i] == b.Int32[j]
	case pq.KindFloat64:
		return math.Float64bits(a.Float64[i]) == math.Float64bits(b.Float64[j])
	case pq.KindFloat32:
		return math.Float32bits(a.Float32[i]) == math.Float32bits(b.Float32[j])
	case pq.KindBool:
		return a.Bool[i] == b.Bool[j]
	case pq.KindDecimal:
		return a.Decimal[i] == b.Decimal[j]
	case pq.KindBytes:
		return bytes.Equal(a.Data[a.Offsets[i]:a.Offsets[i+1]], b.Data[b.Offsets[j]:b.Offsets[j+1]])
	case pq.KindStruct:
		for k := range a.Children {
			if !sameCell(a.Children[k], i, b.Children[k], j) {
				return false
			}
		}
		return true
	case pq.KindList, pq.KindMap:
		as, ae := int(a.Offsets[i]), int(a.Offsets[i+1])
		bs, be := int(b.Offsets[j]), int(b.Offsets[j+1])
		if ae-as != be-bs {
			return false
		}
		for k := range ae - as {
			for c := range a.Children {
				if !sameCell(a.Children[c], as+k, b.Children[c], bs+k) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// FuzzReadersAgreeWithWrittenData is the differential test at small sizes under the fuzzer:
// the fuzzer picks the data's seed, the row count and the page and row-group sizes, so it
// walks page boundaries, tiny row groups and all-null pages far more densely than random
// draws. The oracle is again the batch written.
//
//	go test ./table -run '^$' -fuzz FuzzReadersAgreeWithWrittenData -fuzztime 5m
func FuzzReadersAgreeWithWrittenData(f *testing.F) {
	f.Add(uint64(1), uint16(1), uint16(0), uint16(0), false)
	f.Add(uint64(25), uint16(3000), uint16(256), uint16(1000), true)
	f.Add(uint64(7), uint16(700), uint16(64), uint16(7), false)
	f.Fuzz(func(t *testing.T, seed uint64, rows, pageBytes, groupRows uint16, nested bool) {
		n := 1 + int(rows)%4000
		r := rand.New(rand.NewPCG(seed, 0x25))
		opts := pqtest.RandomWriteOptions(r, n)
		opts.PageBufferSize = int(pageBytes)
		opts.RowGroupRows = int(groupRows)
		checkReadersWith(t, r, n, nested, seed, &opts)
	})
}
