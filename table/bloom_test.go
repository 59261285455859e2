package table

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

const bloomSchema = `{"type":"struct","fields":[
{"name":"id","type":"string","nullable":false,"metadata":{}},
{"name":"seq","type":"long","nullable":true,"metadata":{}},
{"name":"shard","type":"integer","nullable":false,"metadata":{}},
{"name":"at","type":"timestamp","nullable":false,"metadata":{}},
{"name":"score","type":"double","nullable":true,"metadata":{}},
{"name":"payload","type":"string","nullable":true,"metadata":{}},
{"name":"attrs","type":{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"region","type":"string","nullable":true,"metadata":{}}]}`

var bloomT0 = time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixMicro()

// bloomRows builds rows [from, from+n): every key column is a function of the row number, so
// that tests can compute present and absent values on their own. Every seventh seq is null.
func bloomRows(t testing.TB, from, n int) *pq.Batch {
	b, err := pq.NewBatch(pqtest.MustSchema(t, bloomSchema))
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < from+n; i++ {
		b.Columns[0].AppendString(bloomID(i))
		if i%7 == 3 {
			b.Columns[1].AppendNull()
		} else {
			b.Columns[1].AppendInt64(bloomSeq(i))
		}
		b.Columns[2].AppendInt32(bloomShard(i))
		b.Columns[3].AppendInt64(bloomAt(i))
		b.Columns[4].AppendFloat64(float64(i % 5)) // 0, 1, 2, 3, 4
		b.Columns[5].AppendString(strings.Repeat("p", 40) + bloomID(i))
		b.Columns[6].AppendStruct()
		b.Columns[6].Children[0].AppendString("v")
		b.Columns[7].AppendString([]string{"eu", "us"}[i%2])
	}
	return b
}

func bloomID(i int) string     { return fmt.Sprintf("evt-%09d", i) }
func bloomSeq(i int) int64     { return int64(i)*1_000_003 + 17 }
func bloomShard(i int) int32   { return int32(i)*7919 - 5_000_000 }
func bloomAt(i int) int64      { return bloomT0 + int64(i)*1_000_037 }
func bloomAbsent(i int) string { return fmt.Sprintf("absent-%09d", i) }

// bloomTable writes rows [0, n) into a table on a file bucket (one file, row groups of rgRows
// rows) with bloom filters on cols, partitioned by region when parted.
func bloomTable(t testing.TB, n, rgRows int, cols []string, parted bool) (*Table, objstore.Bucket) {
	t.Helper()
	b, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tbl := Open(b, Options{Write: pq.WriteOptions{RowGroupRows: rgRows, BloomFilterColumns: cols}})
	var parts []string
	if parted {
		parts = []string{"region"}
	}
	ctx := context.Background()
	if _, err := tbl.Create(ctx, pqtest.MustSchema(t, bloomSchema), parts, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{bloomRows(t, 0, n)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	return tbl, b
}

func latestFiles(t testing.TB, tbl *Table) (*txlog.Snapshot, []*txlog.Add) {
	t.Helper()
	snap, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap, snap.Files()
}

// keyBatch builds a one-column key batch of the table column name from values.
func keyBatch(t testing.TB, tbl *Table, name string, values []any) *pq.Batch {
	t.Helper()
	f := tableSchema(t, tbl).Field(name)
	b, err := pq.NewBatch(&txlog.StructType{Fields: []txlog.StructField{*f}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if v == nil {
			b.Columns[0].AppendNull()
			continue
		}
		if err := b.Columns[0].AppendValue(v); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func tableSchema(t testing.TB, tbl *Table) *txlog.StructType {
	t.Helper()
	snap, _ := latestFiles(t, tbl)
	s, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mayContain(t testing.TB, tbl *Table, keys *pq.Batch) [][]bool {
	t.Helper()
	snap, files := latestFiles(t, tbl)
	var cols []string
	for _, f := range keys.Schema.Fields {
		cols = append(cols, f.Name)
	}
	fs, err := tbl.FileScan(snap, cols, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]bool
	for _, add := range files {
		got, err := fs.MayContain(context.Background(), add, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != keys.Len() {
			t.Fatalf("MayContain returned %d answers for %d keys", len(got), keys.Len())
		}
		out = append(out, got)
	}
	return out
}

func TestBloomFilterWritten(t *testing.T) {
	const n = 5000
	tbl, b := bloomTable(t, n, 2000, []string{"id", "seq", "shard", "at"}, false)
	_, files := latestFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("want one file, got %d", len(files))
	}
	data, err := objstore.ReadAll(context.Background(), b, files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(f.RowGroups()); got != 3 {
		t.Fatalf("want 3 row groups of <= 2000 rows, got %d", got)
	}
	filtered := map[string]bool{"id": true, "seq": true, "shard": true, "at": true}
	for g, rg := range f.RowGroups() {
		for _, leaf := range f.Schema().Columns() {
			col, _ := f.Schema().Lookup(leaf...)
			bf := rg.ColumnChunks()[col.ColumnIndex].BloomFilter()
			name := strings.Join(leaf, ".")
			if filtered[name] != (bf != nil) {
				t.Fatalf("row group %d column %s: has filter %v, want %v", g, name, bf != nil, filtered[name])
			}
		}
		// The library's own check knows every id of the row group.
		lo := g * 2000
		bf := rg.ColumnChunks()[0].BloomFilter()
		for i := lo; i < min(lo+2000, n); i++ {
			ok, err := bf.Check(parquet.ByteArrayValue([]byte(bloomID(i))))
			if err != nil || !ok {
				t.Fatalf("row group %d: filter misses id %s (%v)", g, bloomID(i), err)
			}
		}
	}
	// The key string column is PLAIN encoded (see bloomPlan.forcePlain).
	for _, e := range f.Metadata().RowGroups[0].Columns[0].MetaData.Encoding {
		if e.String() == "RLE_DICTIONARY" {
			t.Fatalf("bloom-filtered string column is dictionary encoded")
		}
	}
	// The file still reads back as before.
	var rows int
	for b, err := range tbl.Scan(context.Background(), ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		rows += b.Len()
	}
	if rows != n {
		t.Fatalf("read %d rows, want %d", rows, n)
	}
}

func TestMayContainSingleColumn(t *testing.T) {
	const n, absent = 20000, 1000
	cases := []struct {
		col     string
		present func(i int) any
		missing func(i int) any
	}{
		{"id", func(i int) any { return bloomID(i) }, func(i int) any { return bloomAbsent(i) }},
		{"seq", func(i int) any { return bloomSeq(i) }, func(i int) any { return bloomSeq(i) + 1 }},
		{"shard", func(i int) any { return bloomShard(i) }, func(i int) any { return bloomShard(i) + 1 }},
		{"at", func(i int) any { return time.UnixMicro(bloomAt(i)).UTC() }, func(i int) any { return time.UnixMicro(bloomAt(i) + 1).UTC() }},
	}
	// One row group, and three: a key is present when any row group's filter has it, so the
	// false positives of k row groups add up to about k times one's.
	for _, layout := range []struct{ rgRows, groups int }{{1 << 20, 1}, {8192, 3}} {
		tbl, _ := bloomTable(t, n, layout.rgRows, []string{"id", "seq", "shard", "at", "score"}, false)
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%d-row-groups", c.col, layout.groups), func(t *testing.T) {
				var present []any
				for i := range n {
					if c.col == "seq" && i%7 == 3 {
						continue // null in the file
					}
					present = append(present, c.present(i))
				}
				got := mayContain(t, tbl, keyBatch(t, tbl, c.col, present))[0]
				for k, ok := range got {
					if !ok {
						t.Fatalf("false negative for %v", present[k])
					}
				}
				var missing []any
				for i := range absent {
					missing = append(missing, c.missing(i*17))
				}
				fp := 0
				for _, ok := range mayContain(t, tbl, keyBatch(t, tbl, c.col, missing))[0] {
					if ok {
						fp++
					}
				}
				// ~1% per row group at 10 bits per value.
				if fp*20 >= absent*layout.groups {
					t.Fatalf("%d of %d absent values may be present (want < %d%%)", fp, absent, 5*layout.groups)
				}
				t.Logf("%d/%d false positives", fp, absent)
			})
		}
	}
}

func TestMayContainCompositeKey(t *testing.T) {
	const n = 4000
	tbl, _ := bloomTable(t, n, 1<<20, []string{"id", "shard"}, false)
	schema := tableSchema(t, tbl)
	keys, err := pq.NewBatch(&txlog.StructType{Fields: []txlog.StructField{*schema.Field("shard"), *schema.Field("id")}})
	if err != nil {
		t.Fatal(err)
	}
	// Rows 0..n-1 exist; rows n.. pair an existing id with a shard no row has.
	for i := range n {
		keys.Columns[0].AppendInt32(bloomShard(i))
		keys.Columns[1].AppendString(bloomID(i))
	}
	for i := range 1000 {
		keys.Columns[0].AppendInt32(bloomShard(i) + 3)
		keys.Columns[1].AppendString(bloomID(i))
	}
	got := mayContain(t, tbl, keys)[0]
	fp := 0
	for k, ok := range got {
		switch {
		case k < n && !ok:
			t.Fatalf("false negative for key %d", k)
		case k >= n && ok:
			fp++
		}
	}
	if fp*20 >= 1000 {
		t.Fatalf("%d of 1000 absent composite keys may be present", fp)
	}
}

func TestMayContainMaybeCases(t *testing.T) {
	tbl, _ := bloomTable(t, 3000, 1<<20, []string{"id", "seq", "score"}, true)
	allTrue := func(name string, got [][]bool) {
		t.Helper()
		for _, f := range got {
			for k, ok := range f {
				if !ok {
					t.Fatalf("%s: key %d: want may contain", name, k)
				}
			}
		}
	}
	// Null key parts are not in filters.
	allTrue("null seq", mayContain(t, tbl, keyBatch(t, tbl, "seq", []any{nil})))
	// Partition columns are not in the data files.
	allTrue("partition", mayContain(t, tbl, keyBatch(t, tbl, "region", []any{"eu", "nowhere"})))
	// A column without a filter (shard) says maybe.
	allTrue("unfiltered", mayContain(t, tbl, keyBatch(t, tbl, "shard", []any{int32(1), int32(2)})))
	// 0 and -0 are equal keys with different bits; NaN has many bit patterns.
	allTrue("zero", mayContain(t, tbl, keyBatch(t, tbl, "score", []any{0.0, math.Copysign(0, -1), 4.0, math.NaN()})))
	got := mayContain(t, tbl, keyBatch(t, tbl, "score", []any{-1.5, 1e300}))
	for _, f := range got {
		if f[0] && f[1] {
			t.Fatalf("both absent scores may be present in a file of 5 distinct values")
		}
	}
}

func TestMayContainWithoutFilters(t *testing.T) {
	tbl, _ := bloomTable(t, 3000, 1<<20, nil, false)
	var missing []any
	for i := range 100 {
		missing = append(missing, bloomAbsent(i))
	}
	for _, f := range mayContain(t, tbl, keyBatch(t, tbl, "id", missing)) {
		for k, ok := range f {
			if !ok {
				t.Fatalf("file without filters said key %d is absent", k)
			}
		}
	}
}

func TestMayContainFixtures(t *testing.T) {
	// Files written by Spark (no bloom filters): every key may be present.
	ctx := context.Background()
	b, err := file.New(filepath.Join(fixtureRoot(t), "dat", "basic_append", "delta"))
	if err != nil {
		t.Fatal(err)
	}
	tbl := Open(b, Options{})
	snap, _ := latestFiles(t, tbl)
	schema := tableSchema(t, tbl)
	fs, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	// Values no row has, of every column's type.
	for _, c := range keys.Columns {
		switch c.Kind {
		case pq.KindBytes:
			c.AppendString("no such value")
		case pq.KindInt64:
			c.AppendInt64(-987654321)
		case pq.KindInt32:
			c.AppendInt32(-98765)
		case pq.KindFloat64:
			c.AppendFloat64(-1.25)
		case pq.KindBool:
			c.AppendBool(true)
		default:
			c.AppendNull()
		}
	}
	if len(snap.Files()) == 0 {
		t.Fatal("fixture has no files")
	}
	for _, add := range snap.Files() {
		got, err := fs.MayContain(ctx, add, keys)
		if err != nil {
			t.Fatal(err)
		}
		for k, ok := range got {
			if !ok {
				t.Fatalf("%s: key %d said absent", add.Path, k)
			}
		}
	}
}

func TestMayContainBadKeys(t *testing.T) {
	tbl, _ := bloomTable(t, 100, 1<<20, []string{"id"}, false)
	snap, files := latestFiles(t, tbl)
	fs, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct {
		name   string
		schema string
		want   string
	}{
		{"unknown", `{"type":"struct","fields":[{"name":"nope","type":"string","nullable":true,"metadata":{}}]}`, "nope"},
		{"type", `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`, "id"},
		{"nested", `{"type":"struct","fields":[{"name":"attrs","type":{"type":"struct","fields":[{"name":"k","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`, "attrs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			keys, err := pq.NewBatch(pqtest.MustSchema(t, c.schema))
			if err != nil {
				t.Fatal(err)
			}
			_, err = fs.MayContain(ctx, files[0], keys)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error naming %s, got %v", c.want, err)
			}
		})
	}
}

func TestBloomFilterColumnErrors(t *testing.T) {
	schema := pqtest.MustSchema(t, bloomSchema)
	rows := bloomRows(t, 0, 10)
	for _, c := range []struct{ col, want string }{
		{"attrs", "attrs"},
		{"attrs.k", "attrs.k"},
		{"missing", "missing"},
	} {
		_, _, err := pq.EncodeFile(schema, []*pq.Batch{rows}, pq.WriteOptions{BloomFilterColumns: []string{"id", c.col}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("column %s: want an error naming it, got %v", c.col, err)
		}
	}
	// A partition column is not in the data files.
	b := mem.New()
	tbl := Open(b, Options{Write: pq.WriteOptions{BloomFilterColumns: []string{"region"}}})
	ctx := context.Background()
	if _, err := tbl.Create(ctx, schema, []string{"region"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{rows}, AppendOptions{}); err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("partition column: want an error naming it, got %v", err)
	}
}

// TestBloomFilterAfterDictionaryFallback writes a string column that looks low-cardinality in
// its first rows and then outgrows the 1 MiB dictionary: every value must be in the filter
// (parquet-go alone would keep only the dictionary's).
func TestBloomFilterAfterDictionaryFallback(t *testing.T) {
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"k","type":"string","nullable":false,"metadata":{}}]}`)
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	key := func(i int) string {
		if i < 2048 {
			return fmt.Sprintf("k%d", i%4)
		}
		return fmt.Sprintf("key-%016d", i)
	}
	// The dictionary outgrows 1 MiB at ~50k values but is only checked when the first data
	// page (~64k indexes) is flushed: the rows after that are PLAIN.
	const n = 100000
	for i := range n {
		b.Columns[0].AppendString(key(i))
	}
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{b}, pq.WriteOptions{BloomFilterColumns: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	bf := f.RowGroups()[0].ColumnChunks()[0].BloomFilter()
	if bf == nil {
		t.Fatal("no bloom filter")
	}
	for i := range n {
		if ok, err := bf.Check(parquet.ByteArrayValue([]byte(key(i)))); err != nil || !ok {
			t.Fatalf("value %d (%s) missing from the filter (%v)", i, key(i), err)
		}
	}
}

// countingBucket records the bytes of every ranged read, and each read's range.
type countingBucket struct {
	objstore.Bucket
	mu     sync.Mutex
	reads  int
	nbytes int64
	ranges [][2]int64 // offset, length
}

func (c *countingBucket) GetRange(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	c.mu.Lock()
	c.reads++
	c.nbytes += n
	c.ranges = append(c.ranges, [2]int64{off, n})
	c.mu.Unlock()
	return c.Bucket.GetRange(ctx, key, off, n)
}

func TestMayContainReadsFooterAndFiltersOnly(t *testing.T) {
	for _, rg := range []int{1 << 20, 8192} {
		t.Run(fmt.Sprint(rg), func(t *testing.T) {
			tbl, b := bloomTable(t, 30000, rg, []string{"id"}, false)
			snap, files := latestFiles(t, tbl)
			cb := &countingBucket{Bucket: b}
			fs, err := Open(cb, Options{}).FileScan(snap, []string{"id"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			keys := keyBatch(t, tbl, "id", []any{bloomAbsent(1), bloomAbsent(2)})
			if _, err := fs.MayContain(context.Background(), files[0], keys); err != nil {
				t.Fatal(err)
			}
			data, err := objstore.ReadAll(context.Background(), b, files[0].Path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			var filters int64
			groups := f.Metadata().RowGroups
			for _, g := range groups {
				filters += int64(g.Columns[0].MetaData.BloomFilterLength)
			}
			// The tail, plus for each earlier row group its filter (at least 1 KiB).
			limit := int64(tailBytes) + filters + int64(len(groups))*(1<<10)
			t.Logf("file %d bytes, %d row groups, filters %d bytes; read %d bytes in %d requests", len(data), len(groups), filters, cb.nbytes, cb.reads)
			if cb.nbytes > limit || cb.nbytes*3 > int64(len(data)) {
				t.Fatalf("read %d bytes of a %d-byte file (footer and filters: <= %d)", cb.nbytes, len(data), limit)
			}
			if cb.reads > len(groups) {
				t.Fatalf("%d ranged reads for %d row groups", cb.reads, len(groups))
			}
		})
	}
}

// BenchmarkSilverLookup compares asking a 30k-row file's bloom filter for 200 absent keys with
// decoding its key column and probing a map, as the stream's silver look-up did.
func BenchmarkSilverLookup(b *testing.B) {
	const n, wanted = 30000, 200
	tbl, _ := bloomTable(b, n, 1<<20, []string{"id"}, false)
	snap, files := latestFiles(b, tbl)
	fs, err := tbl.FileScan(snap, []string{"id"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	var want []any
	set := map[string]bool{}
	for i := range wanted {
		want = append(want, bloomAbsent(i))
		set[bloomAbsent(i)] = true
	}
	keys := keyBatch(b, tbl, "id", want)
	ctx := context.Background()
	b.Run("bloom", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := fs.MayContain(ctx, files[0], keys)
			if err != nil {
				b.Fatal(err)
			}
			_ = got
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			found := 0
			for batch, err := range fs.Read(ctx, files) {
				if err != nil {
					b.Fatal(err)
				}
				c := batch.Columns[0]
				for r := range batch.Len() {
					if set[string(c.BytesAt(r))] {
						found++
					}
				}
			}
			if found != 0 {
				b.Fatalf("found %d absent keys", found)
			}
		}
	})
}

// FuzzMayContain feeds damaged data files to MayContain: errors are fine, panics and huge
// allocations are not, and an answer must still cover every key.
func FuzzMayContain(f *testing.F) {
	schema := pqtest.MustSchema(f, bloomSchema)
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{bloomRows(f, 0, 300)}, pq.WriteOptions{RowGroupRows: 128, BloomFilterColumns: []string{"id", "seq", "shard", "at", "score"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-1])
	f.Add(data[len(data)/2:])
	// Flip bytes near the end, where the footer and the last row group's filters are.
	for _, back := range []int{9, 40, 200, 800, 1500} {
		d := bytes.Clone(data)
		d[len(d)-back] ^= 0xa5
		f.Add(d)
	}
	keys, err := pq.NewBatch(schema)
	if err != nil {
		f.Fatal(err)
	}
	keys.AppendRow(bloomRows(f, 5, 1), 0)
	keys.AppendRow(bloomRows(f, 1000, 1), 0)
	keys.Schema.Fields = keys.Schema.Fields[:5]
	keys.Columns = keys.Columns[:5]
	f.Fuzz(func(t *testing.T, data []byte) {
		b := mem.New()
		ctx := context.Background()
		if err := b.Put(ctx, "f.parquet", bytes.NewReader(data), int64(len(data))); err != nil {
			t.Fatal(err)
		}
		fs := &FileScan{Bucket: b, Schema: schema}
		got, err := fs.MayContain(ctx, &txlog.Add{Path: "f.parquet", Size: int64(len(data))}, keys)
		if err == nil && len(got) != keys.Len() {
			t.Fatalf("%d answers for %d keys", len(got), keys.Len())
		}
	})
}

// BenchmarkEncodeBloom measures what a bloom filter on the event id costs the writer: parquet-go
// decodes the chunk's pages back at each row group flush to fill the filter.
func BenchmarkEncodeBloom(b *testing.B) {
	const rows = 30000
	batch := pqtest.BenchBatch(b, rows)
	for _, c := range []struct {
		name string
		cols []string
	}{{"none", nil}, {"event_id", []string{"event_id"}}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				data, _, err := pq.EncodeFile(batch.Schema, []*pq.Batch{batch}, pq.WriteOptions{BloomFilterColumns: c.cols})
				if err != nil {
					b.Fatal(err)
				}
				size = len(data)
			}
			b.ReportMetric(float64(size)/rows, "bytes/row")
		})
	}
}

// Ask whether a data file may hold some keys before reading it: a false answer is certain.
func ExampleFileScan_MayContain() {
	ctx := context.Background()
	schema, _ := txlog.ParseSchema(`{"type":"struct","fields":[
		{"name":"event_id","type":"string","nullable":false,"metadata":{}},
		{"name":"seq","type":"long","nullable":false,"metadata":{}}]}`)
	t := Open(mem.New(), Options{Write: pq.WriteOptions{BloomFilterColumns: []string{"event_id", "seq"}}})
	if _, err := t.Create(ctx, schema, nil, nil); err != nil {
		panic(err)
	}
	rows, _ := pq.NewBatch(schema)
	for i := range 1000 {
		rows.Columns[0].AppendString(fmt.Sprintf("e%d", i))
		rows.Columns[1].AppendInt64(int64(i))
	}
	if _, err := t.Append(ctx, []*pq.Batch{rows}, AppendOptions{}); err != nil {
		panic(err)
	}
	snap, _ := t.Latest(ctx)
	fs, _ := t.FileScan(snap, nil, nil)
	keys, _ := pq.NewBatch(schema) // one row per wanted key
	keys.Columns[0].AppendString("e42")
	keys.Columns[1].AppendInt64(42)
	keys.Columns[0].AppendString("e42") // no row has seq 5000
	keys.Columns[1].AppendInt64(5000)
	keys.Columns[0].AppendString("e-missing")
	keys.Columns[1].AppendInt64(42)
	may, err := fs.MayContain(ctx, snap.Files()[0], keys)
	if err != nil {
		panic(err)
	}
	fmt.Println(may)
	// Output: [true false false]
}

func TestMayContainColumnMappingAndConcurrency(t *testing.T) {
	// The file names its columns by physical name; the keys by the logical one.
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[
{"name":"Id","type":"string","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-5f1a"}},
{"name":"n","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-77b0"}}]}`)
	rows, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		rows.Columns[0].AppendString(bloomID(i))
		rows.Columns[1].AppendInt64(bloomSeq(i))
	}
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{rows}, pq.WriteOptions{BloomFilterColumns: []string{"id", "N"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := mem.New()
	if err := b.Put(ctx, "f.parquet", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatal(err)
	}
	keys, err := pq.NewBatch(pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"id","type":"string","nullable":false,"metadata":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var want []bool // present ids, then absent ones
	for i := range 500 {
		keys.Columns[0].AppendString(bloomID(i * 3))
		want = append(want, true)
	}
	for i := range 500 {
		keys.Columns[0].AppendString(bloomAbsent(i))
		want = append(want, false)
	}
	fs := &FileScan{Bucket: b, Schema: schema}
	add := &txlog.Add{Path: "f.parquet", Size: int64(len(data))}
	first, err := fs.MayContain(ctx, add, keys)
	if err != nil {
		t.Fatal(err)
	}
	fp := 0
	for k, ok := range first {
		if want[k] && !ok {
			t.Fatalf("false negative for key %d", k)
		}
		if !want[k] && ok {
			fp++
		}
	}
	if fp*20 >= 500 {
		t.Fatalf("%d of 500 absent ids may be present: the physical column's filter was not used", fp)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		wg.Go(func() {
			for range 20 {
				got, err := fs.MayContain(ctx, add, keys)
				if err != nil {
					errs[w] = err
					return
				}
				for k := range got {
					if got[k] != first[k] {
						errs[w] = fmt.Errorf("key %d: %v, then %v", k, first[k], got[k])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
