package lakecheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// decodeAndMarshal is how Rows rendered a row before canonicalizer: the row's JSON decoded into
// a map with UseNumber, the dropped keys deleted, the numbers rounded, json.Marshal. It is the
// oracle canonicalizer must match byte for byte.
func decodeAndMarshal(t testing.TB, batch *pq.Batch, i int, drop []string) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(pq.AppendJSONRow(nil, batch, i)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for _, d := range drop {
		delete(m, d)
	}
	out, err := json.Marshal(roundNumbers(m))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestCanonicalRowMatchesDecodeAndMarshal: every column kind the lakes hold (and nested ones),
// nulls, floats that round and that do not, strings that encoding/json escapes differently
// from pq (control characters, HTML characters, U+2028, invalid UTF-8, quotes), keys out of
// order, dropped columns; random rows besides the hand-picked ones.
func TestCanonicalRowMatchesDecodeAndMarshal(t *testing.T) {
	for _, batch := range []*pq.Batch{mixedBatch(t, 400), goldBatch(t, 50)} {
		for _, drop := range [][]string{nil, {"event_id", "nested"}, {"z_amount", "no-such-column", "late_rows"}} {
			var c canonicalizer
			for i := 0; i < batch.Len(); i++ {
				got, err := c.row(batch, i, drop)
				if err != nil {
					t.Fatal(err)
				}
				if want := decodeAndMarshal(t, batch, i, drop); got != want {
					t.Fatalf("row %d, drop %v:\n got %s\nwant %s", i, drop, got, want)
				}
			}
		}
	}
}

// BenchmarkCanonicalRow: the CPU of one row by column and by the decode-and-marshal round trip
// (compare them under -race, as the crash tests run).
func BenchmarkCanonicalRow(b *testing.B) {
	for _, bc := range []struct {
		name  string
		batch *pq.Batch
	}{{"gold", goldBatch(b, 400)}, {"mixed", mixedBatch(b, 400)}} {
		drop := []string{"late_rows", "event_id"}
		b.Run(bc.name+"/columns", func(b *testing.B) {
			var c canonicalizer
			for i := 0; b.Loop(); i++ {
				if _, err := c.row(bc.batch, i%bc.batch.Len(), drop); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/decode-marshal", func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				decodeAndMarshal(b, bc.batch, i%bc.batch.Len(), drop)
			}
		})
	}
}

// goldBatch is n rows shaped as a gold table's: a window struct, keys, aggregates.
func goldBatch(t testing.TB, n int) *pq.Batch {
	t.Helper()
	schema, err := txlog.ParseSchema(`{"type":"struct","fields":[
		{"name":"window","type":{"type":"struct","fields":[
			{"name":"start","type":"timestamp","nullable":true,"metadata":{}},
			{"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"event_type","type":"string","nullable":true,"metadata":{}},
		{"name":"device_id","type":"string","nullable":true,"metadata":{}},
		{"name":"count","type":"long","nullable":true,"metadata":{}},
		{"name":"sum_amount","type":"double","nullable":true,"metadata":{}},
		{"name":"late_rows","type":"long","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for r := range n {
		start := int64(1767225600000000 + r*5_000_000)
		vals := []any{[]pq.Field{{Name: "start", Value: start}, {Name: "end", Value: start + 5_000_000}},
			fmt.Sprintf("type-%d", rng.IntN(5)), fmt.Sprintf("dev-%d", rng.IntN(50)), rng.Int64N(100),
			rng.Float64() * 1000, rng.Int64N(3)}
		for k, v := range vals {
			if err := batch.Columns[k].AppendValue(v); err != nil {
				t.Fatalf("column %d: %v", k, err)
			}
		}
	}
	return batch
}

// mixedBatch is n rows of every column kind: the first rows walk the lists of tricky values,
// the rest draw from them, some values null.
func mixedBatch(t testing.TB, n int) *pq.Batch {
	t.Helper()
	schema, err := txlog.ParseSchema(`{"type":"struct","fields":[
		{"name":"z_amount","type":"double","nullable":true,"metadata":{}},
		{"name":"event_id","type":"string","nullable":true,"metadata":{}},
		{"name":"count","type":"long","nullable":true,"metadata":{}},
		{"name":"a<b>&c","type":"integer","nullable":true,"metadata":{}},
		{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"day","type":"date","nullable":true,"metadata":{}},
		{"name":"ok","type":"boolean","nullable":true,"metadata":{}},
		{"name":"f32","type":"float","nullable":true,"metadata":{}},
		{"name":"price","type":"decimal(12,3)","nullable":true,"metadata":{}},
		{"name":"nested","type":{"type":"struct","fields":[
			{"name":"y","type":"double","nullable":true,"metadata":{}},
			{"name":"x","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"list","type":{"type":"array","elementType":"double","containsNull":true},"nullable":true,"metadata":{}},
		{"name":"raw","type":"binary","nullable":true,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	batch, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	strs := []string{"", "dev-1", `quote " and \ backslash`, "tab\tnew\nline\r\b\f\x01", "<script>&amp;</script>", "a<b", "x>y", "p&q",
		"line\u2028sep", "sep\u2029para", "bad \xff\xfe utf8", "ünïcödé 漢字 🙂", "NaN"}
	floats := []float64{0, math.Copysign(0, -1), 1, 0.1 + 0.2, 1e21, 1e-7, -123.456789012345678, 12345678901234567, math.NaN(),
		math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, 3}
	rng := rand.New(rand.NewPCG(1, 2))
	for r := 0; r < n; r++ {
		pick := func(n int) int { // the first rows walk the lists, the rest draw from them
			if r < 20 {
				return r % n
			}
			return rng.IntN(n)
		}
		null := r >= 20 && rng.IntN(8) == 0
		vals := []any{
			floats[pick(len(floats))], strs[pick(len(strs))], rng.Int64() - rng.Int64(), int32(rng.Uint32()),
			int64(1767225600000000 + rng.Int64N(1e12)), int32(20000 + rng.IntN(500)), r%2 == 0,
			float32(floats[pick(len(floats))]), pq.Decimal{Unscaled: pq.DecimalFromInt64(rng.Int64N(1e9) - 5e8), Scale: 3},
			[]pq.Field{{Name: "y", Value: floats[pick(len(floats))]}, {Name: "x", Value: strs[pick(len(strs))]}},
			[]any{floats[pick(len(floats))], nil, 2.5}, []byte(strs[pick(len(strs))]),
		}
		for k, v := range vals {
			if null && k == r%len(vals) {
				v = nil
			}
			if err := batch.Columns[k].AppendValue(v); err != nil {
				t.Fatalf("column %d: %v", k, err)
			}
		}
	}
	return batch
}
