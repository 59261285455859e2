package sqlexpr

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

const goldSchema = `{"type":"struct","fields":[
{"name":"window","type":{"type":"struct","fields":[{"name":"start","type":"timestamp","nullable":true,"metadata":{}},{"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"event_type","type":"string","nullable":true,"metadata":{}},
{"name":"count","type":"long","nullable":true,"metadata":{}},
{"name":"day","type":"date","nullable":true,"metadata":{}}]}`

// t0 is the first instant of the test tables (table_test.go in package table has its own).
var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

func goldBatch(t *testing.T) *pq.Batch {
	b, _ := pq.NewBatch(pqtest.MustSchema(t, goldSchema))
	add := func(start time.Time, typ *string, count int64) {
		w := b.Columns[0]
		w.Children[0].AppendTime(start)
		w.Children[1].AppendTime(start.Add(5 * time.Minute))
		w.AppendStruct()
		if typ == nil {
			b.Columns[1].AppendNull()
		} else {
			b.Columns[1].AppendString(*typ)
		}
		b.Columns[2].AppendInt64(count)
		b.Columns[3].AppendInt32(int32(start.Unix() / 86400))
	}
	click, view := "click", "view"
	add(t0, &click, 1)
	add(t0.Add(5*time.Minute), &view, 2)
	add(t0.Add(10*time.Minute), nil, 3)
	add(t0.Add(15*time.Minute+123*time.Microsecond), &click, 4)
	return b
}

func TestPredicateRows(t *testing.T) {
	b := goldBatch(t)
	cases := []struct {
		e    Expr
		want []bool
	}{
		{Eq("window.start", t0.Add(5*time.Minute)), []bool{false, true, false, false}},
		{Ge("window.start", t0.Add(10*time.Minute)), []bool{false, false, true, true}},
		{Lt("count", 3), []bool{true, true, false, false}},
		{Le("count", int64(3)), []bool{true, true, true, false}},
		{Gt("count", 3), []bool{false, false, false, true}},
		{In("event_type", "view", "other"), []bool{false, true, false, false}},
		{IsNull("event_type"), []bool{false, false, true, false}},
		{IsNotNull("event_type"), []bool{true, true, false, true}},
		// NOT over a null comparison stays unknown: the null row matches neither.
		{Not(Eq("event_type", "click")), []bool{false, true, false, false}},
		{Or(Eq("event_type", "click"), Gt("count", 2)), []bool{true, false, true, true}},
		{And(Eq("event_type", "click"), Gt("count", 2)), []bool{false, false, false, true}},
		{Eq("day", "2024-03-01"), []bool{true, true, true, true}},
		{Eq("window.start", "2024-03-01 00:15:00.000123"), []bool{false, false, false, true}},
	}
	for _, c := range cases {
		p, err := Bind(c.e, b.Schema, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if got := p.Eval(b); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.e, got, c.want)
		}
	}
}

func TestPredicateBindErrors(t *testing.T) {
	s := pqtest.MustSchema(t, goldSchema)
	for _, e := range []Expr{Eq("nope", 1), Eq("count", "abc"), Eq("window", 1), Eq("window.start.x", 1), Eq("count", nil), Eq("event_type", 3)} {
		if _, err := Bind(e, s, nil); !errors.Is(err, ErrBadPredicate) {
			t.Errorf("%s: got %v, want ErrBadPredicate", e, err)
		}
	}
}

// TestPredicateSkipping checks pruning decisions against stats written by our writer, with
// timestamp maxima truncated to milliseconds by another writer.
func TestPredicateSkipping(t *testing.T) {
	s := pqtest.MustSchema(t, goldSchema)
	str := func(v string) *string { return &v }
	// window.start in [00:00, 00:15:00.000123]; the stats max is truncated to 00:15:00.000.
	add := &txlog.Add{Stats: `{"numRecords":4,"minValues":{"window":{"start":"2024-03-01T00:00:00.000Z"},"event_type":"click","count":1},` +
		`"maxValues":{"window":{"start":"2024-03-01T00:15:00.000Z"},"event_type":"view","count":4},` +
		`"nullCount":{"window":{"start":0},"event_type":1,"count":0}}`,
		PartitionValues: map[string]*string{"day": str("2024-03-01")}}
	cases := []struct {
		e        Expr
		mayMatch bool
		allMatch bool
	}{
		{Eq("window.start", t0.Add(15*time.Minute+123*time.Microsecond)), true, false}, // inside the widened max
		{Gt("window.start", t0.Add(15*time.Minute+999*time.Microsecond)), false, false},
		{Ge("window.start", t0), true, true},
		{Lt("count", 1), false, false},
		{Le("count", 4), true, true},
		{In("event_type", "a", "b"), false, false},
		{In("event_type", "dog"), true, false},
		{IsNull("event_type"), true, false},
		{IsNull("count"), false, false},
		{IsNotNull("count"), true, true},
		{Eq("day", "2024-03-02"), false, false},
		{Eq("day", "2024-03-01"), true, true},
		{Not(Eq("day", "2024-03-01")), false, false},
		{And(Eq("day", "2024-03-01"), Gt("count", 10)), false, false},
		{Or(Eq("day", "2024-03-02"), Gt("count", 3)), true, false},
		{Not(Lt("count", 100)), false, false},
	}
	for _, c := range cases {
		p, err := Bind(c.e, s, []string{"day"})
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if got := p.MayMatch(add); got != c.mayMatch {
			t.Errorf("MayMatch(%s) = %v, want %v", c.e, got, c.mayMatch)
		}
		if got := p.AllMatch(add); got != c.allMatch {
			t.Errorf("AllMatch(%s) = %v, want %v", c.e, got, c.allMatch)
		}
	}
	// Without stats nothing can be skipped except by partition.
	p, _ := Bind(Gt("count", 100), s, []string{"day"})
	if !p.MayMatch(&txlog.Add{PartitionValues: map[string]*string{"day": str("2024-03-01")}}) {
		t.Error("a file without stats was skipped")
	}
	if p.OnlyPartitionColumns() {
		t.Error("count is not a partition column")
	}
}

// TestSkippingAgreesWithRows writes files with our writer and checks, for many predicates,
// that a skipped file never holds a matching row.
func TestSkippingAgreesWithRows(t *testing.T) {
	b := goldBatch(t)
	_, stats, err := pq.EncodeFile(b.Schema, []*pq.Batch{b}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	add := &txlog.Add{Stats: stats, PartitionValues: map[string]*string{}}
	var exprs []Expr
	for m := 0; m < 20; m++ {
		at := t0.Add(time.Duration(m)*time.Minute + 123*time.Microsecond)
		for _, op := range []CmpOp{OpEq, OpLt, OpLe, OpGt, OpGe} {
			exprs = append(exprs, Cmp("window.start", op, at), Cmp("count", op, m/3), Not(Cmp("window.end", op, at)))
		}
	}
	for _, e := range exprs {
		p, err := Bind(e, b.Schema, nil)
		if err != nil {
			t.Fatal(err)
		}
		any, all := false, true
		for _, m := range p.Eval(b) {
			any = any || m
			all = all && m
		}
		if any && !p.MayMatch(add) {
			t.Errorf("%s: skipped a file with matching rows", e)
		}
		if p.AllMatch(add) && !all {
			t.Errorf("%s: AllMatch but some rows do not match", e)
		}
	}
}

// TestPredicateRowsNaN: a NaN compares false with every literal, so NOT(c = x) holds for it,
// as in IEEE 754 and Arrow (the reader differential test against pyarrow found `c != x`
// dropping NaN rows), and a file whose statistics say min = max = x may still hold NaNs.
func TestPredicateRowsNaN(t *testing.T) {
	b, _ := pq.NewBatch(pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"x","type":"double","nullable":true,"metadata":{}}]}`))
	for _, v := range []float64{1.5, math.NaN(), 2} {
		b.Columns[0].AppendFloat64(v)
	}
	for _, c := range []struct {
		e    Expr
		want []bool
	}{
		{Eq("x", 1.5), []bool{true, false, false}},
		{Not(Eq("x", 1.5)), []bool{false, true, true}},
		{Lt("x", 2.0), []bool{true, false, false}},
		{Ge("x", 1.5), []bool{true, false, true}},
		{In("x", 1.5, 2.0), []bool{true, false, true}},
		{Not(In("x", 1.5)), []bool{false, true, true}},
		// A NaN literal equals nothing, in IN as in =.
		{Eq("x", math.NaN()), []bool{false, false, false}},
		{In("x", math.NaN()), []bool{false, false, false}},
		{In("x", math.NaN(), 2.0), []bool{false, false, true}},
		{Not(In("x", math.NaN())), []bool{true, true, true}},
	} {
		p, err := Bind(c.e, b.Schema, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if got := p.Eval(b); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.e, got, c.want)
		}
	}
	p, err := Bind(Not(Eq("x", 1.5)), b.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	stats := `{"numRecords":2,"minValues":{"x":1.5},"maxValues":{"x":1.5},"nullCount":{"x":0}}`
	if !p.MayMatch(&txlog.Add{Path: "f.parquet", Stats: stats, PartitionValues: map[string]*string{}}) {
		t.Error("NOT(x = 1.5) skipped a file with min = max = 1.5, which may hold NaNs")
	}
	p, err = Bind(Not(In("x", 1.5, 3.0)), b.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.MayMatch(&txlog.Add{Path: "f.parquet", Stats: stats, PartitionValues: map[string]*string{}}) {
		t.Error("NOT(x IN (1.5, 3)) skipped a file with min = max = 1.5, which may hold NaNs")
	}
}

// TestKleeneTables pins AND and OR in three-valued logic against their written-out tables.
func TestKleeneTables(t *testing.T) {
	vals := []uint8{outTrue, outFalse, outNull}
	// The tables, rows x and columns y in the order T, F, N.
	and := [3][3]uint8{
		{outTrue, outFalse, outNull},
		{outFalse, outFalse, outFalse},
		{outNull, outFalse, outNull},
	}
	or := [3][3]uint8{
		{outTrue, outTrue, outTrue},
		{outTrue, outFalse, outNull},
		{outTrue, outNull, outNull},
	}
	for i, x := range vals {
		for j, y := range vals {
			if got := kleene(true, x, y); got != and[i][j] {
				t.Errorf("kleene AND(%d, %d) = %d, want %d", x, y, got, and[i][j])
			}
			if got := kleene(false, x, y); got != or[i][j] {
				t.Errorf("kleene OR(%d, %d) = %d, want %d", x, y, got, or[i][j])
			}
		}
	}
}

// TestIntLiterals checks that an integer column takes a literal of every Go signed integer
// type at its value, and refuses other kinds of literal.
func TestIntLiterals(t *testing.T) {
	b := goldBatch(t)
	for _, v := range []any{int(3), int64(3), int32(3), int16(3), int8(3)} {
		p, err := Bind(Eq("count", v), b.Schema, nil)
		if err != nil {
			t.Errorf("count = %T: %v", v, err)
			continue
		}
		if got, want := p.Eval(b), []bool{false, false, true, false}; !slices.Equal(got, want) {
			t.Errorf("count = %T(3): got %v, want %v", v, got, want)
		}
	}
	for _, v := range []any{uint(3), "x3", 3.5} {
		if _, err := Bind(Eq("count", v), b.Schema, nil); !errors.Is(err, ErrBadPredicate) {
			t.Errorf("count = %T %v: got %v, want ErrBadPredicate", v, v, err)
		}
	}
}
