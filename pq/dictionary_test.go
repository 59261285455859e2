package pq_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// dictSchema: a key drawn from few values (a dictionary), an id (PLAIN) and a key that
// outgrows the writer's 1 MiB dictionary mid-chunk (dictionary pages, then PLAIN ones).
var dictSchema = &txlog.StructType{Fields: []txlog.StructField{
	{Name: "key", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
	{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
	{Name: "spill", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
}}

func dictBatch(t *testing.T, rows int) *pq.Batch {
	t.Helper()
	b, err := pq.NewBatch(dictSchema)
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 400)
	for i := range rows {
		if i%97 == 5 {
			b.Columns[0].AppendNull()
		} else {
			b.Columns[0].AppendString(fmt.Sprintf("dev-%d", (i*7919)%300))
		}
		b.Columns[1].AppendString(fmt.Sprintf("evt-%08d", i))
		// Repetitive in the writer's sample (the first 1024 rows), distinct after.
		b.Columns[2].AppendString(fmt.Sprintf("%s-%d", pad, max(i-1100, i%8)))
	}
	return b
}

// TestColumnDictionary: a string column read from dictionary pages of one dictionary exposes
// it, row i being entry Index[i] (-1 for a null), over many pages; a PLAIN column and a chunk
// that fell back to PLAIN expose none; an append or a Reset turns it off.
func TestColumnDictionary(t *testing.T) {
	in := dictBatch(t, 9_000)
	data, _, err := pq.EncodeFile(dictSchema, []*pq.Batch{in}, pq.WriteOptions{PageBufferSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := pq.DecodeFile(strings.NewReader(string(data)), int64(len(data)), dictSchema)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 {
		t.Fatalf("%d row groups, want 1", len(bs))
	}
	b := bs[0]
	key := b.Columns[0]
	d := key.Dictionary()
	if d == nil {
		t.Fatal("the dictionary-encoded key column exposes no dictionary")
	}
	if d.Values.Len > 300 || d.Values.Len < 250 {
		t.Errorf("dictionary of %d entries, want the 300 distinct values (at most)", d.Values.Len)
	}
	for i := range key.Len {
		e := d.Index[i]
		if key.IsNull(i) != (e < 0) {
			t.Fatalf("row %d: null %v, entry %d", i, key.IsNull(i), e)
		}
		if e >= 0 && d.Values.StringAt(int(e)) != key.StringAt(i) {
			t.Fatalf("row %d is %q, its entry %d %q", i, key.StringAt(i), e, d.Values.StringAt(int(e)))
		}
		if want := in.Columns[0]; !key.IsNull(i) && key.StringAt(i) != want.StringAt(i) {
			t.Fatalf("row %d read %q, written %q", i, key.StringAt(i), want.StringAt(i))
		}
	}
	if b.Columns[1].Dictionary() != nil {
		t.Error("the PLAIN id column exposes a dictionary")
	}
	if b.Columns[2].Dictionary() != nil {
		t.Error("a chunk that fell back to PLAIN pages exposes a dictionary")
	}
	key.AppendString("late")
	if key.Dictionary() != nil {
		t.Error("a dictionary survives an append")
	}
	b.Reset()
	if key.Dictionary() != nil {
		t.Error("a dictionary survives Reset")
	}
}

// TestFlatCopyPages: pages of longs, microsecond timestamps and doubles, with and without
// nulls, over many pages, read back value for value (readFlat copies such pages whole).
func TestFlatCopyPages(t *testing.T) {
	schema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "ts", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}},
		{Name: "n", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
		{Name: "x", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}},
		{Name: "y", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
	}}
	in, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 5000
	for i := range rows {
		in.Columns[0].AppendInt64(1_700_000_000_000_000 + int64(i*i))
		if i%7 == 3 {
			in.Columns[1].AppendNull()
			in.Columns[3].AppendNull()
		} else {
			in.Columns[1].AppendInt64(int64(i) * -31)
			in.Columns[3].AppendFloat64(float64(i) / 3)
		}
		in.Columns[2].AppendFloat64(float64(i)*1.5 - 7)
	}
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{in}, pq.WriteOptions{PageBufferSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := pq.DecodeFile(strings.NewReader(string(data)), int64(len(data)), schema)
	if err != nil {
		t.Fatal(err)
	}
	r := 0
	for _, b := range bs {
		for i := range b.Len() {
			for c, col := range b.Columns {
				w := in.Columns[c]
				if col.IsNull(i) != w.IsNull(r) {
					t.Fatalf("row %d column %d: null %v, written null %v", r, c, col.IsNull(i), w.IsNull(r))
				}
				if col.IsNull(i) {
					continue
				}
				if (col.Kind == pq.KindInt64 && col.Int64[i] != w.Int64[r]) || (col.Kind == pq.KindFloat64 && col.Float64[i] != w.Float64[r]) {
					t.Fatalf("row %d column %d differs from what was written", r, c)
				}
			}
			r++
		}
	}
	if r != rows {
		t.Fatalf("read %d rows, wrote %d", r, rows)
	}
}

// TestDictionaryChoice: a string key of 1k values (about 640 distinct in the writer's
// 1024-row sample) gets a dictionary; an id column and a binary column as repetitive as the
// key (gold's exact sums) are written PLAIN.
func TestDictionaryChoice(t *testing.T) {
	schema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "key", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
		{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
		{Name: "bin", Type: txlog.PrimitiveType{Name: txlog.TypeBinary}},
	}}
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 4000 {
		k := rng.IntN(1000)
		b.Columns[0].AppendString(fmt.Sprintf("dev-%d", k))
		b.Columns[1].AppendString(fmt.Sprintf("evt-%d", i))
		b.Columns[2].AppendBytes([]byte(fmt.Sprintf("x%d", k)))
	}
	data, _, err := pq.EncodeFile(schema, []*pq.Batch{b}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(strings.NewReader(string(data)), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"key": true, "id": false, "bin": false}
	for _, c := range f.Metadata().RowGroups[0].Columns {
		name := c.MetaData.PathInSchema[0]
		if got := slices.Contains(c.MetaData.Encoding, format.RLEDictionary); got != want[name] {
			t.Errorf("%s: dictionary %v, want %v (encodings %v)", name, got, want[name], c.MetaData.Encoding)
		}
	}
}
