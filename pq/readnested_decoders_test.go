package pq_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// The assembler (table/read.go decode / skipPresent over definition and repetition levels)
// for nested columns, under null patterns that make whole pages (and whole row groups) null,
// empty, or present with null children. The oracle is the Go rows the test wrote.

type ndInner struct {
	A *int32  `parquet:"a,optional"`
	B *string `parquet:"b,optional"`
}

type ndWrapL struct {
	X []int32 `parquet:"x,list"`
}

type ndRow struct {
	ID int64              `parquet:"id"`
	S  *ndInner           `parquet:"s,optional"`
	L  []*int64           `parquet:"l,list,optional"`
	LS []ndInner          `parquet:"ls,list"`
	LP []*ndInner         `parquet:"lp,list"`
	M  map[string]*int64  `parquet:"m,optional"`
	MS map[string]ndInner `parquet:"ms"`
	LL []ndWrapL          `parquet:"ll,list,optional"`
}

const ndSchema = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":false,"metadata":{}},
{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"b","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"l","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}},
{"name":"ls","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"b","type":"string","nullable":true,"metadata":{}}]},"containsNull":false},"nullable":false,"metadata":{}},
{"name":"lp","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"b","type":"string","nullable":true,"metadata":{}}]},"containsNull":true},"nullable":false,"metadata":{}},
{"name":"m","type":{"type":"map","keyType":"string","valueType":"long","valueContainsNull":true},"nullable":true,"metadata":{}},
{"name":"ms","type":{"type":"map","keyType":"string","valueType":{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{}},{"name":"b","type":"string","nullable":true,"metadata":{}}]},"valueContainsNull":false},"nullable":false,"metadata":{}},
{"name":"ll","type":{"type":"array","elementType":{"type":"struct","fields":[{"name":"x","type":{"type":"array","elementType":"integer","containsNull":false},"nullable":false,"metadata":{}}]},"containsNull":false},"nullable":true,"metadata":{}}]}`

func ndInnerWant(in *ndInner) any {
	if in == nil {
		return nil
	}
	var a, b any
	if in.A != nil {
		a = *in.A
	}
	if in.B != nil {
		b = *in.B
	}
	return []pq.Field{{Name: "a", Value: a}, {Name: "b", Value: b}}
}

// ndWant is the Column.Value form of each column of r (maps sorted by key).
func ndWant(r *ndRow) []any {
	out := []any{r.ID, ndInnerWant(r.S)}
	if r.L == nil {
		out = append(out, nil)
	} else {
		l := []any{}
		for _, v := range r.L {
			if v == nil {
				l = append(l, nil)
			} else {
				l = append(l, *v)
			}
		}
		out = append(out, l)
	}
	ls := []any{}
	for i := range r.LS {
		ls = append(ls, ndInnerWant(&r.LS[i]))
	}
	lp := []any{}
	for _, p := range r.LP {
		lp = append(lp, ndInnerWant(p))
	}
	out = append(out, ls, lp)
	if r.M == nil {
		out = append(out, nil)
	} else {
		m := []pq.KV{}
		for k, v := range r.M {
			var x any
			if v != nil {
				x = *v
			}
			m = append(m, pq.KV{Key: k, Value: x})
		}
		out = append(out, sortKV(m))
	}
	ms := []pq.KV{}
	for k, v := range r.MS {
		ms = append(ms, pq.KV{Key: k, Value: ndInnerWant(&v)})
	}
	out = append(out, sortKV(ms))
	if r.LL == nil {
		out = append(out, nil)
	} else {
		ll := []any{}
		for _, w := range r.LL {
			x := []any{}
			for _, v := range w.X {
				x = append(x, v)
			}
			ll = append(ll, []pq.Field{{Name: "x", Value: x}})
		}
		out = append(out, ll)
	}
	return out
}

func sortKV(m []pq.KV) []pq.KV {
	sort.Slice(m, func(i, j int) bool { return fmt.Sprint(m[i].Key) < fmt.Sprint(m[j].Key) })
	return m
}

// normalize sorts the entries of map values (KV order in a file is the writer's).
func normalize(v any) any {
	switch x := v.(type) {
	case []pq.KV:
		out := make([]pq.KV, len(x))
		for i, kv := range x {
			out[i] = pq.KV{Key: normalize(kv.Key), Value: normalize(kv.Value)}
		}
		return sortKV(out)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	case []pq.Field:
		out := make([]pq.Field, len(x))
		for i := range x {
			out[i] = pq.Field{Name: x[i].Name, Value: normalize(x[i].Value)}
		}
		return out
	}
	return v
}

// ndRows makes rows in blocks of 150 of one shape each, so that pages and row groups are
// entirely null, entirely empty, present with null children, or mixed.
func ndRows(n int, seed int64) []ndRow {
	rng := rand.New(rand.NewSource(seed))
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	inner := func(mode int) *ndInner {
		switch mode {
		case 0:
			return nil
		case 1:
			return &ndInner{}
		}
		in := &ndInner{}
		if rng.Intn(3) != 0 {
			in.A = i32(rng.Int31n(1000) - 500)
		}
		if rng.Intn(3) != 0 {
			in.B = str(fmt.Sprint("b", rng.Intn(50)))
		}
		return in
	}
	rows := make([]ndRow, n)
	for i := range rows {
		r := &rows[i]
		r.ID = int64(i)
		shape := (i / 150) % 5
		if shape == 4 {
			shape = rng.Intn(4) // mixed
		}
		switch shape {
		case 0: // everything null or empty
		case 1: // present, empty lists and maps, null children
			r.S = &ndInner{}
			r.L = []*int64{}
			r.M = map[string]*int64{}
			r.LL = []ndWrapL{}
			r.LP = []*ndInner{nil}
			r.LS = []ndInner{{}}
			r.MS = map[string]ndInner{"k": {}}
			r.LL = []ndWrapL{{X: []int32{}}}
		case 2: // lists of nulls
			r.S = inner(1)
			r.L = []*int64{nil, nil}
			r.M = map[string]*int64{"a": nil, "b": nil}
			r.LP = []*ndInner{nil, inner(1)}
		case 3: // random
			r.S = inner(rng.Intn(3))
			if rng.Intn(4) != 0 {
				r.L = []*int64{}
				for k := rng.Intn(4); k > 0; k-- {
					if rng.Intn(3) == 0 {
						r.L = append(r.L, nil)
					} else {
						r.L = append(r.L, i64(rng.Int63n(1e12)-5e11))
					}
				}
			}
			for k := rng.Intn(3); k > 0; k-- {
				r.LS = append(r.LS, *inner(1 + rng.Intn(2)))
				r.LP = append(r.LP, inner(rng.Intn(3)))
			}
			if rng.Intn(3) != 0 {
				r.M = map[string]*int64{}
				for k := rng.Intn(3); k > 0; k-- {
					if rng.Intn(2) == 0 {
						r.M[fmt.Sprint("k", k)] = nil
					} else {
						r.M[fmt.Sprint("k", k)] = i64(int64(k))
					}
				}
			}
			if rng.Intn(2) == 0 {
				r.MS = map[string]ndInner{"x": *inner(1 + rng.Intn(2))}
			}
			if rng.Intn(3) != 0 {
				r.LL = []ndWrapL{}
				for k := rng.Intn(3); k > 0; k-- {
					w := ndWrapL{X: []int32{}}
					for j := rng.Intn(3); j > 0; j-- {
						w.X = append(w.X, rng.Int31n(100))
					}
					r.LL = append(r.LL, w)
				}
			}
		}
	}
	return rows
}

// TestDecodersNestedNullPages writes nested rows with tiny pages and small row groups and
// reads them back through the assembler. parquet-go's own reader is asked first, as a check
// that the file holds what the test meant (nil and empty lists and maps kept apart).
func TestDecodersNestedNullPages(t *testing.T) {
	schema, err := txlog.ParseSchema(ndSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range []int{1, 2} {
		for _, rg := range []int64{0, 450, 151} {
			t.Run(fmt.Sprintf("v%d/rg=%d", pv, rg), func(t *testing.T) {
				rows := ndRows(3000, int64(rg)+int64(pv))
				var buf bytes.Buffer
				opts := []parquet.WriterOption{parquet.DataPageVersion(pv), parquet.PageBufferSize(200)}
				if rg > 0 {
					opts = append(opts, parquet.MaxRowsPerRowGroup(rg))
				}
				w := parquet.NewGenericWriter[ndRow](&buf, opts...)
				if _, err := w.Write(rows); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				data := buf.Bytes()
				// Oracle check with parquet-go's generic reader.
				gr := parquet.NewGenericReader[ndRow](bytes.NewReader(data))
				back := make([]ndRow, len(rows))
				n, err := gr.Read(back)
				if err != nil && err != io.EOF {
					t.Fatal(err)
				}
				gr.Close()
				if n != len(rows) {
					t.Fatalf("parquet-go read %d rows back, want %d", n, len(rows))
				}
				generic := 0
				for i := range rows {
					if fmt.Sprint(ndWant(&back[i])) != fmt.Sprint(ndWant(&rows[i])) {
						generic++
					}
				}
				if generic > 0 {
					t.Logf("parquet-go's generic reader differs from the input on %d rows (nil vs empty)", generic)
				}

				batches, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), schema)
				if err != nil {
					t.Fatal(err)
				}
				i := 0
				bad := 0
				for _, b := range batches {
					if err := b.Validate(); err != nil {
						t.Fatalf("batch invalid: %v", err)
					}
					for r := 0; r < b.Len(); r++ {
						got := normalize(b.Row(r))
						want := ndWant(&rows[i])
						if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
							if bad < 5 {
								t.Errorf("row %d:\n got  %#v\n want %#v", i, got, want)
							}
							bad++
						}
						i++
					}
				}
				if i != len(rows) || bad > 0 {
					t.Fatalf("%d rows read (want %d), %d differ", i, len(rows), bad)
				}
			})
		}
	}
}

type ndProbeInner struct {
	A []int64 `parquet:"a,list,optional"`
	C *int64  `parquet:"c,optional"`
}

type ndProbeRow struct {
	ID int64                    `parquet:"id"`
	S  *ndProbeInner            `parquet:"s,optional"`
	L  []*ndProbeInner          `parquet:"l,list,optional"`
	M  map[string]*ndProbeInner `parquet:"m,optional"`
}

// TestDecodersStructWithNoFieldInFile: a struct of the table none of whose fields is in the
// file (fields dropped and others added under column mapping, or a file from a writer with
// another struct layout) is null exactly where the file's struct is null, and otherwise a
// struct of nulls (Spark 4.1, SPARK-53535). The file's struct is told apart through one of its
// own leaves, which may be repeated (several values for one struct) and sit under a list or
// map. Oracle: the rows written.
func TestDecodersStructWithNoFieldInFile(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	inner := func(k int) *ndProbeInner {
		switch k % 5 {
		case 0:
			return nil
		case 1:
			return &ndProbeInner{}
		case 2:
			return &ndProbeInner{A: []int64{}}
		case 3:
			return &ndProbeInner{A: []int64{1, 2, 3}, C: i64(4)}
		}
		return &ndProbeInner{A: []int64{5}}
	}
	var rows []ndProbeRow
	for i := 0; i < 1200; i++ {
		r := ndProbeRow{ID: int64(i), S: inner(i)}
		if i%7 != 0 {
			r.L = []*ndProbeInner{}
			for k := 0; k < i%4; k++ {
				r.L = append(r.L, inner(i+k))
			}
		}
		if i%3 != 0 {
			r.M = map[string]*ndProbeInner{"k": inner(i + 1)}
		}
		rows = append(rows, r)
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[ndProbeRow](&buf, parquet.PageBufferSize(256), parquet.MaxRowsPerRowGroup(500))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	st := `{"type":"struct","fields":[{"name":"b","type":"long","nullable":true,"metadata":{}}]}`
	schema, err := txlog.ParseSchema(`{"type":"struct","fields":[
{"name":"s","type":` + st + `,"nullable":true,"metadata":{}},
{"name":"l","type":{"type":"array","elementType":` + st + `,"containsNull":true},"nullable":true,"metadata":{}},
{"name":"m","type":{"type":"map","keyType":"string","valueType":` + st + `,"valueContainsNull":true},"nullable":true,"metadata":{}},
{"name":"id","type":"long","nullable":false,"metadata":{}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	nulls := func(in *ndProbeInner) any {
		if in == nil {
			return nil
		}
		return []pq.Field{{Name: "b", Value: nil}}
	}
	batches, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), schema)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, b := range batches {
		for r := 0; r < b.Len(); r++ {
			row := &rows[i]
			var l, m any
			if row.L != nil {
				ls := []any{}
				for _, e := range row.L {
					ls = append(ls, nulls(e))
				}
				l = ls
			}
			if row.M != nil {
				m = []pq.KV{{Key: "k", Value: nulls(row.M["k"])}}
			}
			want := []any{nulls(row.S), l, m, row.ID}
			if got := b.Row(r); fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
				t.Fatalf("row %d:\n got  %#v\n want %#v", i, got, want)
			}
			i++
		}
	}
	if i != len(rows) {
		t.Fatalf("%d rows, want %d", i, len(rows))
	}
}
