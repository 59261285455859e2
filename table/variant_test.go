package table

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
)

// A hand encoder of the Parquet Variant binary format (VariantEncoding.md), written from the
// spec for these tests so that the oracle does not come from the decoder under test (which
// is parquet-go's). Sizes are one byte: enough for small values.

// vMetadata encodes a dictionary of sorted field names (version 1, sorted, 1-byte offsets).
func vMetadata(names ...string) []byte {
	out := []byte{1 | 1<<4, byte(len(names))}
	off := 0
	out = append(out, 0)
	for _, n := range names {
		off += len(n)
		out = append(out, byte(off))
	}
	for _, n := range names {
		out = append(out, n...)
	}
	return out
}

func vPrim(typ byte, payload ...byte) []byte { return append([]byte{typ << 2}, payload...) }
func vShort(s string) []byte                 { return append([]byte{byte(len(s))<<2 | 1}, s...) }
func vInt8(v int8) []byte                    { return vPrim(3, byte(v)) }
func vInt64(v int64) []byte                  { return vPrim(6, binary.LittleEndian.AppendUint64(nil, uint64(v))...) }
func vDouble(f float64) []byte {
	return vPrim(7, binary.LittleEndian.AppendUint64(nil, math.Float64bits(f))...)
}
func vDecimal4(unscaled int32, scale byte) []byte {
	return vPrim(8, append([]byte{scale}, binary.LittleEndian.AppendUint32(nil, uint32(unscaled))...)...)
}
func vDate(days int32) []byte {
	return vPrim(11, binary.LittleEndian.AppendUint32(nil, uint32(days))...)
}
func vTimestamp(micros int64) []byte {
	return vPrim(12, binary.LittleEndian.AppendUint64(nil, uint64(micros))...)
}
func vString(s string) []byte {
	return vPrim(16, append(binary.LittleEndian.AppendUint32(nil, uint32(len(s))), s...)...)
}
func vBinary(b []byte) []byte {
	return vPrim(15, append(binary.LittleEndian.AppendUint32(nil, uint32(len(b))), b...)...)
}

// vObject encodes an object; ids are dictionary ids, given in the order of their names.
func vObject(ids []byte, values ...[]byte) []byte {
	out := []byte{2, byte(len(ids))} // 1-byte ids and offsets, not large
	out = append(out, ids...)
	off := 0
	out = append(out, 0)
	for _, v := range values {
		off += len(v)
		out = append(out, byte(off))
	}
	for _, v := range values {
		out = append(out, v...)
	}
	return out
}

func vArray(values ...[]byte) []byte {
	out := []byte{3, byte(len(values))}
	off := 0
	out = append(out, 0)
	for _, v := range values {
		off += len(v)
		out = append(out, byte(off))
	}
	for _, v := range values {
		out = append(out, v...)
	}
	return out
}

type variantGroup struct {
	Metadata []byte `parquet:"metadata"`
	Value    []byte `parquet:"value"`
}

type variantRow struct {
	ID int64         `parquet:"id"`
	V  *variantGroup `parquet:"v,optional"`
}

// TestVariantType: a variant column (readerFeatures variantType or its preview name) reads as
// its JSON text: printed inline by AppendJSONRow (what `table scan --format jsonl` prints),
// and a string to the pipeline.
func TestVariantType(t *testing.T) {
	meta := vMetadata("a", "b", "c", "d", "e", "s")
	nested := vObject([]byte{0, 1, 2, 5},
		vInt8(1),
		vArray(vPrim(1), vPrim(0), vShort("x")),
		vObject([]byte{3, 4}, vDecimal4(125, 1), vDate(19783)),
		vString(`héllo "q"`))
	rows := []variantRow{
		{1, &variantGroup{meta, nested}},
		{2, &variantGroup{vMetadata(), vTimestamp(1709294400_000_000)}}, // 2024-03-01T12:00:00Z
		{3, nil},
		{4, &variantGroup{vMetadata(), vArray(vDouble(0.1), vInt64(-1<<40), vDecimal4(-5, 3), vBinary([]byte{0xff, 0}), vPrim(2))}},
	}
	want := []string{
		`{"id":1,"v":{"a":1,"b":[true,null,"x"],"c":{"d":12.5,"e":"2024-03-01"},"s":"héllo \"q\""}}`,
		`{"id":2,"v":"2024-03-01 12:00:00+00:00"}`,
		`{"id":3,"v":null}`,
		`{"id":4,"v":[0.1,-1099511627776,-0.005,"/wA=",false]}`,
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}},
{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`
	for _, feature := range []string{"variantType", "variantType-preview"} {
		t.Run(feature, func(t *testing.T) {
			b := mem.New()
			protocol := `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["` + feature + `"],"writerFeatures":["` + feature + `"]}`
			handTable(t, b, protocol, schema, nil, handFile{path: "part-0.parquet", data: parquetOf(t, rows)})
			got, err := scanJSON(t, Open(b, Options{}))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			for _, line := range got {
				if !json.Valid([]byte(line)) {
					t.Errorf("not JSON: %s", line)
				}
			}
			// The pipeline sees the variant as a string column holding that JSON text.
			for batch, err := range Open(b, Options{}).Scan(t.Context(), ScanOptions{Columns: []string{"v"}}) {
				if err != nil {
					t.Fatal(err)
				}
				c := batch.Columns[0]
				if c.Kind != pq.KindBytes || c.StringAt(1) != `"2024-03-01 12:00:00+00:00"` {
					t.Fatalf("variant column: kind %v, row 1 %q", c.Kind, c.StringAt(1))
				}
			}
		})
	}
	// A corrupt value is a bad data file naming the column, never a crash.
	b := mem.New()
	bad := []variantRow{{1, &variantGroup{meta, []byte{2, 9, 0}}}}
	handTable(t, b, `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["variantType"],"writerFeatures":["variantType"]}`, schema, nil,
		handFile{path: "part-0.parquet", data: parquetOf(t, bad)})
	if _, err := scanJSON(t, Open(b, Options{})); !errors.Is(err, pq.ErrBadDataFile) || !strings.Contains(err.Error(), "column v") {
		t.Fatalf("corrupt variant: %v", err)
	}
}
