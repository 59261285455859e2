package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

// widenCase is one widening Delta's typeWidening allows: values written at the old type before
// the change and at the new type after, and how each reads at the new type (the oracle: the
// literal value, written by hand).
type widenCase struct {
	from, to       txlog.DataType
	before, after  []any
	wantBefore     []string // JSON of the old rows read at the new type
	wantAfter      []string
	probe          any    // a value at the new type equal to before[0], for filters
	extraFeature   string // a feature the new type needs besides typeWidening
	fromJSON, toJS string // the type names delta.typeChanges records
}

func prim(name string) txlog.DataType { return txlog.PrimitiveType{Name: name} }

func widenCases() []widenCase {
	dec := func(p, s int) txlog.DataType { return txlog.DecimalType{Precision: p, Scale: s} }
	d := func(s string, scale int) pq.Decimal {
		v, err := pq.ParseDecimal(s, scale)
		if err != nil {
			panic(err)
		}
		return pq.Decimal{Unscaled: v, Scale: scale}
	}
	return []widenCase{
		{from: prim(txlog.TypeByte), to: prim(txlog.TypeShort), before: []any{int32(-128), int32(127)}, after: []any{int32(32767)},
			probe: int64(-128), wantBefore: []string{"-128", "127"}, wantAfter: []string{"32767"}, fromJSON: "byte", toJS: "short"},
		{from: prim(txlog.TypeShort), to: prim(txlog.TypeInteger), before: []any{int32(-32768)}, after: []any{int32(2147483647)},
			probe: int64(-32768), wantBefore: []string{"-32768"}, wantAfter: []string{"2147483647"}, fromJSON: "short", toJS: "integer"},
		{from: prim(txlog.TypeInteger), to: prim(txlog.TypeLong), before: []any{int32(-2147483648), int32(7)}, after: []any{int64(1) << 40},
			probe: int64(-2147483648), wantBefore: []string{"-2147483648", "7"}, wantAfter: []string{"1099511627776"}, fromJSON: "integer", toJS: "long"},
		{from: prim(txlog.TypeByte), to: prim(txlog.TypeLong), before: []any{int32(-5)}, after: []any{int64(-1) << 50},
			probe: int64(-5), wantBefore: []string{"-5"}, wantAfter: []string{"-1125899906842624"}, fromJSON: "byte", toJS: "long"},
		{from: prim(txlog.TypeFloat), to: prim(txlog.TypeDouble), before: []any{float32(1.5), float32(-0.25)}, after: []any{0.1},
			probe: 1.5, wantBefore: []string{"1.5", "-0.25"}, wantAfter: []string{"0.1"}, fromJSON: "float", toJS: "double"},
		{from: prim(txlog.TypeInteger), to: prim(txlog.TypeDouble), before: []any{int32(-123456)}, after: []any{0.5},
			probe: -123456.0, wantBefore: []string{"-123456"}, wantAfter: []string{"0.5"}, fromJSON: "integer", toJS: "double"},
		// 2024-03-01 is day 19783.
		{from: prim(txlog.TypeDate), to: prim(txlog.TypeTimestampNTZ), before: []any{int32(19783)}, after: []any{int64(19783)*86400_000_000 + 12*3600_000_000},
			probe: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC), wantBefore: []string{`"2024-03-01T00:00:00"`}, wantAfter: []string{`"2024-03-01T12:00:00"`}, extraFeature: "timestampNtz", fromJSON: "date", toJS: "timestamp_ntz"},
		{from: dec(5, 2), to: dec(10, 4), before: []any{d("123.45", 2), d("-0.01", 2)}, after: []any{d("123456.7891", 4)},
			probe: "123.45", wantBefore: []string{"123.4500", "-0.0100"}, wantAfter: []string{"123456.7891"}, fromJSON: "decimal(5,2)", toJS: "decimal(10,4)"},
		{from: prim(txlog.TypeInteger), to: dec(12, 2), before: []any{int32(42), int32(-1)}, after: []any{d("9999999999.99", 2)},
			probe: "42.00", wantBefore: []string{"42.00", "-1.00"}, wantAfter: []string{"9999999999.99"}, fromJSON: "integer", toJS: "decimal(12,2)"},
		{from: prim(txlog.TypeLong), to: dec(20, 0), before: []any{int64(9223372036854775807)}, after: []any{d("99999999999999999999", 0)},
			probe: "9223372036854775807", wantBefore: []string{"9223372036854775807"}, wantAfter: []string{"99999999999999999999"}, fromJSON: "long", toJS: "decimal(20,0)"},
	}
}

func widenSchema(c txlog.DataType) *txlog.StructType {
	return &txlog.StructType{Fields: []txlog.StructField{{Name: "id", Type: prim(txlog.TypeString), Nullable: true},
		{Name: "c", Type: c, Nullable: true}}}
}

func appendWiden(t *testing.T, tbl *Table, typ txlog.DataType, prefix string, vals []any) {
	t.Helper()
	b, err := pq.NewBatch(widenSchema(typ))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		b.Columns[0].AppendString(fmt.Sprintf("%s%d", prefix, i))
		if err := b.Columns[1].AppendValue(v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tbl.Append(t.Context(), []*pq.Batch{b}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// widenRows scans the table and renders each row as id=<json of c>, sorted, reading c with a
// filter-free scan and (when filter is set) with one that data skipping must not lose.
func widenRows(t *testing.T, tbl *Table, filter sqlexpr.Expr) []string {
	t.Helper()
	var out []string
	for b, err := range tbl.Scan(t.Context(), ScanOptions{Filter: filter}) {
		if err != nil {
			t.Fatal(err)
		}
		for r := range b.Len() {
			out = append(out, b.Columns[0].Value(r).(string)+"="+string(pq.AppendJSONValue(nil, b.Columns[1], r)))
		}
	}
	slices.Sort(out)
	return out
}

// TestEvolveWidens: for each widening the protocol lists, EvolveWith(TypeWidening) changes the
// column's type in one commit that carries the protocol (reader 3, writer 7, typeWidening in
// both feature lists, the legacy features kept), delta.typeChanges on the field and
// delta.enableTypeWidening=true; the rows written before read at the new type (also through
// data skipping on the old files' stats), rows of the new type append, and a second call
// commits nothing. Without the option the same change is ErrIncompatibleSchema.
// checkWidenedRows reads the rows written before (prefix a) and after (prefix b) the widening at
// the new type: all of them, with a filter true for every row (data skipping reads the old file's
// stats, written at the old type, at the new one), and with an equality probe that only the first
// old row matches.
func checkWidenedRows(t *testing.T, tbl *Table, c widenCase) {
	t.Helper()
	var want []string
	for i, v := range c.wantBefore {
		want = append(want, fmt.Sprintf("a%d=%s", i, v))
	}
	for i, v := range c.wantAfter {
		want = append(want, fmt.Sprintf("b%d=%s", i, v))
	}
	slices.Sort(want)
	if got := widenRows(t, tbl, nil); !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if got := widenRows(t, tbl, sqlexpr.Not(sqlexpr.IsNull("c"))); !slices.Equal(got, want) {
		t.Errorf("rows with c IS NOT NULL %v, want %v", got, want)
	}
	if got, w := widenRows(t, tbl, sqlexpr.Eq("c", c.probe)), []string{"a0=" + c.wantBefore[0]}; !slices.Equal(got, w) {
		t.Errorf("rows with c = %v: %v, want %v", c.probe, got, w)
	}
}

func TestEvolveWidens(t *testing.T) {
	for _, c := range widenCases() {
		t.Run(c.fromJSON+"_to_"+c.toJS, func(t *testing.T) {
			ctx := t.Context()
			tbl := Open(mem.New(), Options{})
			if _, err := tbl.Create(ctx, widenSchema(c.from), nil, map[string]string{"keep": "me"}); err != nil {
				t.Fatal(err)
			}
			appendWiden(t, tbl, c.from, "a", c.before)
			before, _ := tbl.Latest(ctx)

			if _, err := tbl.Evolve(ctx, widenSchema(c.to), nil); !errors.Is(err, ErrIncompatibleSchema) {
				t.Fatalf("Evolve without TypeWidening: %v, want ErrIncompatibleSchema", err)
			}
			ev, err := tbl.EvolveWith(ctx, widenSchema(c.to), nil, EvolveOptions{TypeWidening: true})
			if err != nil {
				t.Fatal(err)
			}
			if !ev.Changed || ev.Version != before.Version()+1 || !slices.Equal(ev.Widened, []string{"c"}) {
				t.Fatalf("evolution %+v, want column c widened in version %d", ev, before.Version()+1)
			}
			snap, _ := tbl.Latest(ctx)
			p := snap.Protocol()
			wantFeatures := []string{"typeWidening"}
			if c.extraFeature != "" {
				wantFeatures = append(wantFeatures, c.extraFeature)
			}
			for _, f := range wantFeatures {
				if p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || !slices.Contains(p.ReaderFeatures, f) || !slices.Contains(p.WriterFeatures, f) {
					t.Errorf("protocol %+v, want reader 3 / writer 7 with %s in both lists", p, f)
				}
			}
			// The table was at writer 2: its implied features stay supported.
			if !slices.Contains(p.WriterFeatures, "appendOnly") || !slices.Contains(p.WriterFeatures, "invariants") {
				t.Errorf("writer features %v lost writer 2's appendOnly and invariants", p.WriterFeatures)
			}
			if conf := snap.Metadata().Configuration; conf["delta.enableTypeWidening"] != "true" || conf["keep"] != "me" {
				t.Errorf("configuration %v, want delta.enableTypeWidening=true and the old properties", conf)
			}
			schema, _ := snap.Schema()
			f := schema.Field("c")
			if !TypeEqual(f.Type, c.to) {
				t.Fatalf("column c is %s, want %s", pq.TypeString(f.Type), pq.TypeString(c.to))
			}
			var changes []map[string]any
			if err := json.Unmarshal(f.Metadata["delta.typeChanges"], &changes); err != nil {
				t.Fatalf("delta.typeChanges %s: %v", f.Metadata["delta.typeChanges"], err)
			}
			if len(changes) != 1 || changes[0]["fromType"] != c.fromJSON || changes[0]["toType"] != c.toJS {
				t.Errorf("delta.typeChanges %v, want [{fromType: %s, toType: %s}]", changes, c.fromJSON, c.toJS)
			}

			appendWiden(t, tbl, c.to, "b", c.after)
			checkWidenedRows(t, tbl, c)

			again, err := tbl.EvolveWith(ctx, widenSchema(c.to), nil, EvolveOptions{TypeWidening: true})
			if err != nil || again.Changed {
				t.Fatalf("second EvolveWith: %+v, %v; want nothing committed", again, err)
			}
		})
	}
}

// TestEvolveRefusesNonWidening: with TypeWidening on, what the protocol does not list as a
// widening (narrowing, a lost decimal digit, another type, NOT NULL added) is still refused,
// naming the column, and nothing is committed.
func TestEvolveRefusesNonWidening(t *testing.T) {
	dec := func(p, s int) txlog.DataType { return txlog.DecimalType{Precision: p, Scale: s} }
	for _, c := range []struct {
		from, to txlog.DataType
	}{
		{prim(txlog.TypeLong), prim(txlog.TypeInteger)},
		{prim(txlog.TypeDouble), prim(txlog.TypeFloat)},
		{prim(txlog.TypeLong), prim(txlog.TypeDouble)}, // Delta lists byte, short and int to double only
		{prim(txlog.TypeInteger), prim(txlog.TypeString)},
		{prim(txlog.TypeInteger), dec(9, 0)},
		{prim(txlog.TypeLong), dec(19, 0)},
		{dec(10, 2), dec(11, 4)}, // scale grows more than precision: integer digits lost
		{dec(10, 2), dec(10, 1)},
		{prim(txlog.TypeTimestamp), prim(txlog.TypeTimestampNTZ)},
		{prim(txlog.TypeDate), prim(txlog.TypeTimestamp)},
	} {
		t.Run(pq.TypeString(c.from)+"_to_"+pq.TypeString(c.to), func(t *testing.T) {
			tbl := Open(mem.New(), Options{})
			v0, err := tbl.Create(t.Context(), widenSchema(c.from), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tbl.EvolveWith(t.Context(), widenSchema(c.to), nil, EvolveOptions{TypeWidening: true})
			if !errors.Is(err, ErrIncompatibleSchema) || !strings.Contains(err.Error(), "column c changed from") {
				t.Fatalf("error %v, want ErrIncompatibleSchema naming column c", err)
			}
			if s, _ := tbl.Latest(t.Context()); s.Version() != v0 {
				t.Errorf("a refused widening committed version %d", s.Version())
			}
		})
	}
	// Widening and NOT NULL at once: refused.
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(t.Context(), widenSchema(prim(txlog.TypeInteger)), nil, nil); err != nil {
		t.Fatal(err)
	}
	want := widenSchema(prim(txlog.TypeLong))
	want.Fields[1].Nullable = false
	if _, err := tbl.EvolveWith(t.Context(), want, nil, EvolveOptions{TypeWidening: true}); !errors.Is(err, ErrIncompatibleSchema) {
		t.Fatalf("widening to NOT NULL: %v, want ErrIncompatibleSchema", err)
	}
}

// TestEvolveWidenKeepsHistory: a second widening of the same column appends to its
// delta.typeChanges (writers must preserve it), a column added later does not disturb it, and
// a table already at writer 7 with other features keeps them.
func TestEvolveWidenKeepsHistory(t *testing.T) {
	ctx := t.Context()
	tbl := Open(mem.New(), Options{})
	if _, err := tbl.Create(ctx, widenSchema(prim(txlog.TypeShort)), nil, nil); err != nil {
		t.Fatal(err)
	}
	appendWiden(t, tbl, prim(txlog.TypeShort), "a", []any{int32(-3)})
	for _, to := range []string{txlog.TypeInteger, txlog.TypeLong} {
		if _, err := tbl.EvolveWith(ctx, widenSchema(prim(to)), nil, EvolveOptions{TypeWidening: true}); err != nil {
			t.Fatal(err)
		}
	}
	grown := widenSchema(prim(txlog.TypeLong))
	grown.Fields = append(grown.Fields, txlog.StructField{Name: "ts", Type: prim(txlog.TypeTimestampNTZ), Nullable: true})
	if _, err := tbl.Evolve(ctx, grown, nil); err != nil {
		t.Fatal(err)
	}
	snap, _ := tbl.Latest(ctx)
	schema, _ := snap.Schema()
	got := string(schema.Field("c").Metadata["delta.typeChanges"])
	want := `[{"fromType":"short","toType":"integer"},{"fromType":"integer","toType":"long"}]`
	if got != want {
		t.Errorf("delta.typeChanges %s, want %s", got, want)
	}
	if p := snap.Protocol(); !slices.Contains(p.ReaderFeatures, "typeWidening") || !slices.Contains(p.ReaderFeatures, "timestampNtz") {
		t.Errorf("protocol %+v, want typeWidening and timestampNtz", p)
	}
	if rows := widenRows(t, tbl, sqlexpr.Eq("c", int64(-3))); !slices.Equal(rows, []string{"a0=-3"}) {
		t.Errorf("rows with c = -3: %v", rows)
	}
}

// TestEvolveWidenCrash: a widening killed at every storage call it makes (before the call, or
// after it took effect unseen) leaves the table either as it was or widened, and the rerun
// converges on the same table: one commit, one delta.typeChanges entry, every row readable.
func TestEvolveWidenCrash(t *testing.T) {
	ctx := context.Background()
	for _, after := range []bool{false, true} {
		for n := 1; ; n++ {
			store := mem.New()
			tbl := Open(store, Options{})
			if _, err := tbl.Create(ctx, widenSchema(prim(txlog.TypeInteger)), nil, nil); err != nil {
				t.Fatal(err)
			}
			appendWiden(t, tbl, prim(txlog.TypeInteger), "a", []any{int32(5), int32(-6)})
			fb := objstore.WithFaults(store, objstore.FaultPlan{Faults: []objstore.Fault{{Nth: n, After: after}}})
			_, crashErr := Open(fb, Options{}).EvolveWith(ctx, widenSchema(prim(txlog.TypeLong)), nil, EvolveOptions{TypeWidening: true})
			if fb.Fired() == 0 {
				if crashErr != nil {
					t.Fatal(crashErr)
				}
				if n < 3 {
					t.Fatalf("after=%v: only %d calls to fail; the widening reads and commits through storage", after, n-1)
				}
				t.Logf("after=%v: failed each of %d storage calls", after, n-1)
				break // every call has been failed once
			}
			rerun := Open(store, Options{})
			if _, err := rerun.EvolveWith(ctx, widenSchema(prim(txlog.TypeLong)), nil, EvolveOptions{TypeWidening: true}); err != nil {
				t.Fatalf("call %d failed (after=%v, %v): rerun: %v", n, after, crashErr, err)
			}
			snap, err := rerun.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			schema, _ := snap.Schema()
			if snap.Version() != 2 || !TypeEqual(schema.Field("c").Type, prim(txlog.TypeLong)) ||
				string(schema.Field("c").Metadata["delta.typeChanges"]) != `[{"fromType":"integer","toType":"long"}]` {
				t.Fatalf("call %d failed (after=%v): version %d, column %s %s", n, after, snap.Version(), pq.TypeString(schema.Field("c").Type), schema.Field("c").Metadata["delta.typeChanges"])
			}
			if rows := widenRows(t, rerun, nil); !slices.Equal(rows, []string{"a0=5", "a1=-6"}) {
				t.Fatalf("call %d failed (after=%v): rows %v", n, after, rows)
			}
		}
	}
}

// TestEvolveWidensPartitionColumn: a widened partition column reads the partition values
// written before the change (strings in the old type's form: "2024-03-01" for a date, "1.5"
// for a float) at the new type, and partition pruning on the new type keeps the right files.
func TestEvolveWidensPartitionColumn(t *testing.T) {
	for _, c := range widenCases() {
		t.Run(c.fromJSON+"_to_"+c.toJS, func(t *testing.T) {
			ctx := t.Context()
			tbl := Open(mem.New(), Options{})
			if _, err := tbl.Create(ctx, widenSchema(c.from), []string{"c"}, nil); err != nil {
				t.Fatal(err)
			}
			appendWiden(t, tbl, c.from, "a", c.before)
			if _, err := tbl.EvolveWith(ctx, widenSchema(c.to), nil, EvolveOptions{TypeWidening: true}); err != nil {
				t.Fatal(err)
			}
			appendWiden(t, tbl, c.to, "b", c.after)
			checkWidenedRows(t, tbl, c)
		})
	}
}

// TestAppendToForeignWidenedTable: a table another engine widened (Delta 3.x writes the
// preview feature name and tableVersion in delta.typeChanges) takes appends at the current
// type, keeps the field metadata through a column added later, and reads old and new rows.
func TestAppendToForeignWidenedTable(t *testing.T) {
	type before struct {
		ID string `parquet:"id"`
		C  int32  `parquet:"c"`
	}
	b := mem.New()
	schema := `{"type":"struct","fields":[{"name":"id","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"c","type":"integer","nullable":true,"metadata":{"delta.typeChanges":[{"tableVersion":2,"fromType":"short","toType":"integer"}]}}]}`
	handTable(t, b, `{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["typeWidening-preview"],"writerFeatures":["typeWidening-preview","appendOnly","invariants"]}`,
		schema, map[string]string{"delta.enableTypeWidening": "true"},
		handFile{path: "part-0.parquet", data: parquetOf(t, []before{{ID: "a0", C: -32768}})})
	tbl := Open(b, Options{})
	appendWiden(t, tbl, prim(txlog.TypeInteger), "b", []any{int32(2147483647)})
	grown := widenSchema(prim(txlog.TypeInteger))
	grown.Fields = append(grown.Fields, txlog.StructField{Name: "x", Type: prim(txlog.TypeString), Nullable: true})
	if _, err := tbl.Evolve(t.Context(), grown, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := widenRows(t, tbl, nil), []string{"a0=-32768", "b0=2147483647"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	snap, _ := tbl.Latest(t.Context())
	s, _ := snap.Schema()
	if got := string(s.Field("c").Metadata["delta.typeChanges"]); got != `[{"tableVersion":2,"fromType":"short","toType":"integer"}]` {
		t.Errorf("delta.typeChanges after adding a column: %s", got)
	}
}
