package table

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
)

// These tests build Delta tables by hand, as other engines write them: the log's JSON lines
// written out literally, the data files written with parquet-go's own writer from Go structs,
// and the expected rows stated in the test, so nothing of our writer or reader produces the
// oracle.

// handFile is a data file of a hand-built table.
type handFile struct {
	path  string
	data  []byte
	dv    string // the add action's deletionVector JSON, or ""
	stats string // the add action's stats JSON, or ""
}

// handTable writes version 0 of a table: protocol, metaData and one add per file.
func handTable(t *testing.T, b objstore.Bucket, protocol, schema string, conf map[string]string, files ...handFile) {
	t.Helper()
	ctx := context.Background()
	ss, _ := json.Marshal(schema)
	cj, _ := json.Marshal(conf)
	var log strings.Builder
	log.WriteString(`{"protocol":` + protocol + "}\n")
	log.WriteString(`{"metaData":{"id":"hand-1","format":{"provider":"parquet","options":{}},"schemaString":` + string(ss) +
		`,"partitionColumns":[],"configuration":` + string(cj) + `,"createdTime":1700000000000}}` + "\n")
	for _, f := range files {
		if err := objstore.PutBytes(ctx, b, f.path, f.data); err != nil {
			t.Fatal(err)
		}
		dv := ""
		if f.dv != "" {
			dv = `,"deletionVector":` + f.dv
		}
		if f.stats != "" {
			st, _ := json.Marshal(f.stats)
			dv += `,"stats":` + string(st)
		}
		fmt.Fprintf(&log, `{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":1700000000000,"dataChange":true%s}}`+"\n", f.path, len(f.data), dv)
	}
	if err := objstore.PutBytes(ctx, b, "_delta_log/00000000000000000000.json", []byte(log.String())); err != nil {
		t.Fatal(err)
	}
}

// parquetOf writes rows with parquet-go's generic writer.
func parquetOf[T any](t *testing.T, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// scanJSON returns a table's rows as sorted JSON lines.
func scanJSON(t *testing.T, tbl *Table) ([]string, error) {
	t.Helper()
	var out []string
	for b, err := range tbl.Scan(context.Background(), ScanOptions{}) {
		if err != nil {
			return nil, err
		}
		for i := range b.Len() {
			out = append(out, string(pq.AppendJSONRow(nil, b, i)))
		}
	}
	slices.Sort(out)
	return out, nil
}

// dvFile encodes, by the Delta protocol's layout, a DV file holding one deletion vector of
// the given row indexes (all below 65536): format version byte, then the size (big endian),
// the RoaringBitmapArray (magic, one 32-bit bitmap with one array container) and its CRC-32.
func dvFile(rows []uint16) (file []byte, size int) {
	var blob []byte
	blob = binary.LittleEndian.AppendUint32(blob, 1681511377) // magic
	blob = binary.LittleEndian.AppendUint64(blob, 1)          // one bitmap
	blob = binary.LittleEndian.AppendUint32(blob, 0)          // its high 32 bits
	blob = binary.LittleEndian.AppendUint32(blob, 12346)      // portable roaring, no runs
	blob = binary.LittleEndian.AppendUint32(blob, 1)          // one container
	blob = binary.LittleEndian.AppendUint16(blob, 0)          // key
	blob = binary.LittleEndian.AppendUint16(blob, uint16(len(rows)-1))
	blob = binary.LittleEndian.AppendUint32(blob, 4+4+4+4) // container offset (cookie, count, key/card, offset)
	for _, r := range rows {
		blob = binary.LittleEndian.AppendUint16(blob, r)
	}
	file = append(file, 1)
	file = binary.BigEndian.AppendUint32(file, uint32(len(blob)))
	file = append(file, blob...)
	file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(blob))
	return file, len(blob)
}

const dvProtocol = `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}`

// TestAbsolutePathDeletionVectors: deletion vectors of storage type "p" (an absolute path, as
// conversions, restores and shallow clones write) are found under the table root whatever the
// path's prefix, or at their own location through the table's OpenURL, and applied; vacuum keeps
// those under the root.
func TestAbsolutePathDeletionVectors(t *testing.T) {
	ctx := context.Background()
	type row struct {
		ID int64 `parquet:"id"`
	}
	var rows []row
	for i := range 10 {
		rows = append(rows, row{int64(i)})
	}
	data := parquetOf(t, rows)
	dv, size := dvFile([]uint16{1, 3, 7})
	want := []string{`{"id":0}`, `{"id":2}`, `{"id":4}`, `{"id":5}`, `{"id":6}`, `{"id":8}`, `{"id":9}`}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}`
	desc := func(path string) string {
		return fmt.Sprintf(`{"storageType":"p","pathOrInlineDv":%q,"offset":1,"sizeInBytes":%d,"cardinality":3}`, path, size)
	}
	name := "deletion_vector_" + uuid.NewString() + ".bin"
	cases := []struct {
		name     string
		key      string // where the DV file is, in the table bucket ("" : elsewhere)
		path     string // what the log says
		external bool
	}{
		{"table root, s3 URL", name, "s3://lake/warehouse/tbl/" + name, false},
		{"sub-folder, file URL", "ab/" + name, "file:///data/warehouse/tbl/ab/" + name, false},
		{"bare absolute path", name, "/data/tbl/" + name, false},
		{"outside the root, opened by URL", "", "s3://other/src/tbl/" + name, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := mem.New()
			ext := mem.New()
			handTable(t, b, dvProtocol, schema, map[string]string{"delta.enableDeletionVectors": "true"},
				handFile{path: "part-0.parquet", data: data, dv: desc(c.path)})
			if c.external {
				if err := objstore.PutBytes(ctx, ext, "src/tbl/"+name, dv); err != nil {
					t.Fatal(err)
				}
			} else if err := objstore.PutBytes(ctx, b, c.key, dv); err != nil {
				t.Fatal(err)
			}
			var opened []string
			open := func(ctx context.Context, u string) (objstore.Bucket, error) {
				opened = append(opened, u)
				if u != "s3://other/src/tbl" {
					return nil, fmt.Errorf("unexpected location %s", u)
				}
				return objstore.WithPrefix(ext, "src/tbl"), nil
			}
			got, err := scanJSON(t, Open(b, Options{OpenURL: open}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
			if c.external != (len(opened) == 1) {
				t.Fatalf("opened %v", opened)
			}
			if c.external {
				// Without a way to open other locations: a clear not-found naming the path.
				_, err := scanJSON(t, Open(b, Options{}))
				if !errors.Is(err, objstore.ErrNotFound) || !strings.Contains(err.Error(), c.path) {
					t.Fatalf("without OpenURL: %v", err)
				}
				return
			}
			// Vacuum keeps the DV (it is referenced), and removes a real orphan.
			if err := objstore.PutBytes(ctx, b, "orphan.parquet", []byte("x")); err != nil {
				t.Fatal(err)
			}
			later := time.Now().Add(time.Hour)
			res, err := Open(b, Options{Clock: func() time.Time { return later }}).Vacuum(ctx, VacuumOptions{Retention: time.Minute, Force: true})
			if err != nil || !slices.Equal(res.Files, []string{"orphan.parquet"}) {
				t.Fatalf("vacuum: %+v %v", res, err)
			}
			if got, err := scanJSON(t, Open(b, Options{})); err != nil || !slices.Equal(got, want) {
				t.Fatalf("after vacuum: %v %v", got, err)
			}
		})
	}
}

// TestColumnMappingIDMode: in id mode columns bind by Parquet field id, whatever the file
// calls them (Iceberg-compatible and converted tables keep other names), nested fields too;
// a file column that carries a field's physical name but another id is not that field.
func TestColumnMappingIDMode(t *testing.T) {
	type info struct {
		C string `parquet:"c,id(4)"`
	}
	type row struct {
		A     int64  `parquet:"a,id(1)"`
		Decoy string `parquet:"col-bbb,id(99)"`
		B     string `parquet:"b,id(2)"`
		X     info   `parquet:"x,id(3)"`
	}
	data := parquetOf(t, []row{{1, "decoy-1", "ann", info{"Oslo"}}, {2, "decoy-2", "bob", info{"Lima"}}})
	schema := `{"type":"struct","fields":[
{"name":"user_id","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-aaa"}},
{"name":"name","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-bbb"}},
{"name":"info","type":{"type":"struct","fields":[
  {"name":"city","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":4,"delta.columnMapping.physicalName":"col-ddd"}}]},
 "nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-ccc"}}]}`
	want := []string{`{"user_id":1,"name":"ann","info":{"city":"Oslo"}}`, `{"user_id":2,"name":"bob","info":{"city":"Lima"}}`}
	conf := map[string]string{"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "4"}
	for _, protocol := range []string{
		`{"minReaderVersion":2,"minWriterVersion":5}`,
		`{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["columnMapping"],"writerFeatures":["columnMapping"]}`,
	} {
		b := mem.New()
		handTable(t, b, protocol, schema, conf, handFile{path: "part-0.parquet", data: data})
		got, err := scanJSON(t, Open(b, Options{}))
		if err != nil {
			t.Fatalf("%s: %v", protocol, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: rows\n%v\nwant\n%v", protocol, got, want)
		}
	}
}

// TestTypeWidening: a table whose columns were widened (readerFeatures typeWidening, or its
// preview name) reads the files written before the change at the column's current type: int as
// long, float as double, date as timestamp_ntz, decimal(5,2) as decimal(10,4), int as double,
// int as decimal(12,2).
func TestTypeWidening(t *testing.T) {
	type before struct {
		I   int32   `parquet:"i"`
		F   float32 `parquet:"f"`
		D   int32   `parquet:"d,date"`
		Dec int32   `parquet:"dec,decimal(2:5)"`
		N   int32   `parquet:"n"`
		K   int32   `parquet:"k"`
	}
	type after struct {
		I   int64   `parquet:"i"`
		F   float64 `parquet:"f"`
		D   int64   `parquet:"d,timestamp(microsecond)"`
		Dec int64   `parquet:"dec,decimal(4:10)"`
		N   float64 `parquet:"n"`
		K   int64   `parquet:"k,decimal(2:12)"`
	}
	day := int32(19783) // 2024-03-01
	old := parquetOf(t, []before{{I: -7, F: 1.5, D: day, Dec: 12345, N: 3, K: 42}, {I: 2147483647, F: -0.25, D: 0, Dec: -1, N: -4, K: -1}})
	// 2024-03-01T12:00:00 = 19783 days and 12 hours, in microseconds.
	newer := parquetOf(t, []after{{I: 1 << 40, F: 0.1, D: int64(day)*86400_000_000 + 12*3600_000_000, Dec: 1234567, N: 0.5, K: 4200}})
	schema := `{"type":"struct","fields":[
{"name":"i","type":"long","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"integer","toType":"long"}]}},
{"name":"f","type":"double","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"float","toType":"double"}]}},
{"name":"d","type":"timestamp_ntz","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"date","toType":"timestamp_ntz"}]}},
{"name":"dec","type":"decimal(10,4)","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"decimal(5,2)","toType":"decimal(10,4)"}]}},
{"name":"n","type":"double","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"integer","toType":"double"}]}},
{"name":"k","type":"decimal(12,2)","nullable":true,"metadata":{"delta.typeChanges":[{"fromType":"integer","toType":"decimal(12,2)"}]}}]}`
	want := []string{
		`{"i":-7,"f":1.5,"d":"2024-03-01T00:00:00","dec":123.4500,"n":3,"k":42.00}`,
		`{"i":1099511627776,"f":0.1,"d":"2024-03-01T12:00:00","dec":123.4567,"n":0.5,"k":42.00}`,
		`{"i":2147483647,"f":-0.25,"d":"1970-01-01T00:00:00","dec":-0.0100,"n":-4,"k":-1.00}`,
	}
	slices.Sort(want)
	for _, feature := range []string{"typeWidening", "typeWidening-preview"} {
		t.Run(feature, func(t *testing.T) {
			b := mem.New()
			protocol := `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["` + feature + `"],"writerFeatures":["` + feature + `"]}`
			handTable(t, b, protocol, schema, nil, handFile{path: "part-0.parquet", data: old}, handFile{path: "part-1.parquet", data: newer})
			got, err := scanJSON(t, Open(b, Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
	// The old file's stats are in its old types; data skipping must read them at the new
	// types and keep the rows that match.
	oldStats := `{"numRecords":2,"minValues":{"i":-7,"f":-0.25,"d":"1970-01-01","dec":-0.01,"n":-4,"k":-1},` +
		`"maxValues":{"i":2147483647,"f":1.5,"d":"2024-03-01","dec":123.45,"n":3,"k":42},` +
		`"nullCount":{"i":0,"f":0,"d":0,"dec":0,"n":0,"k":0}}`
	b := mem.New()
	handTable(t, b, `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["typeWidening"],"writerFeatures":["typeWidening"]}`, schema, nil,
		handFile{path: "part-0.parquet", data: old, stats: oldStats}, handFile{path: "part-1.parquet", data: newer})
	for _, c := range []struct {
		filter sqlexpr.Expr
		ids    []string
	}{
		{sqlexpr.Ge("d", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)), []string{"-7", "1099511627776"}},
		{sqlexpr.Ge("dec", "123.45"), []string{"-7", "1099511627776"}},
		{sqlexpr.Eq("k", "42.00"), []string{"-7", "1099511627776"}},
		{sqlexpr.Ge("i", int64(2147483647)), []string{"1099511627776", "2147483647"}},
	} {
		var got []string
		for batch, err := range Open(b, Options{}).Scan(t.Context(), ScanOptions{Filter: c.filter}) {
			if err != nil {
				t.Fatal(err)
			}
			for r := range batch.Len() {
				got = append(got, fmt.Sprint(batch.Columns[0].Int64[r]))
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.ids) {
			t.Errorf("filter %v: rows i=%v, want %v", c.filter, got, c.ids)
		}
	}

	// A narrowing the protocol does not allow stays an error naming the column.
	b = mem.New()
	narrowed := strings.Replace(schema, `"decimal(10,4)"`, `"decimal(10,1)"`, 1)
	handTable(t, b, `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["typeWidening"],"writerFeatures":["typeWidening"]}`, narrowed, nil,
		handFile{path: "part-0.parquet", data: old})
	if _, err := scanJSON(t, Open(b, Options{})); !errors.Is(err, pq.ErrBadDataFile) || !strings.Contains(err.Error(), "dec") {
		t.Fatalf("narrowed decimal: %v", err)
	}
}
