package silver

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTransformApply: computed columns appended in order (one reading another), a computed
// event time validated as a declared one, and the filter's outcomes in both modes after the
// drop expectations; expected per row by construction of expectBatch.
func TestTransformApply(t *testing.T) {
	b := expectBatch(t, 20)
	for _, drop := range []bool{false, true} {
		tr := Transform{
			Columns: []ComputedColumn{
				{Name: "kind", Expr: "upper(event_type)"},
				{Name: "kind_len", Expr: "length(kind)"},
				{Name: "at", Expr: "coalesce(event_time, _ingest_time)"},
			},
			Filter: &Filter{Name: "no_login", Expr: "kind <> 'LOGIN'", Drop: drop},
		}
		x, err := NewTransformer(context.Background(), tr, b.Schema)
		if err != nil {
			t.Fatal(err)
		}
		out, err := x.Apply(b, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range out.Schema.Fields[len(b.Schema.Fields):] {
			names = append(names, f.Name+":"+f.Type.TypeName())
		}
		if got := strings.Join(names, " "); got != "kind:string kind_len:integer at:timestamp" {
			t.Fatalf("computed columns %s", got)
		}
		if len(b.Columns) != len(b.Schema.Fields) {
			t.Fatal("Apply changed its input batch")
		}
		exp, err := NewExpectations([]Expectation{{Name: "non_negative", Expect: "amount >= 0", OnViolation: Drop}})
		if err != nil {
			t.Fatal(err)
		}
		rules := Rules{EventTime: "at"}
		c := rules.Bind(out)
		if err := exp.Apply(&c, out, time.Now()); err != nil {
			t.Fatal(err)
		}
		x.ApplyFilter(&c, out, time.Now())
		types := []string{"click", "view", "purchase", "signup", "login"}
		for i := range out.Len() {
			if got, want := out.Column("kind").StringAt(i), strings.ToUpper(types[i%5]); got != want {
				t.Errorf("row %d: kind %q, want %q", i, got, want)
			}
			if got, want := out.Column("kind_len").Int32[i], int32(len(types[i%5])); got != want {
				t.Errorf("row %d: kind_len %d, want %d", i, got, want)
			}
			negative := i <= 4 || i%10 == 3 // amount is i%200-5, NULL on rows 3, 13
			login := i%5 == 4
			wantReason, wantDropped := "", false
			switch {
			case negative:
				wantReason = "expectation:non_negative"
			case login && !drop:
				wantReason = "filtered:no_login"
			case login:
				wantDropped = true
			}
			if got := c.Reject(i); got != wantReason {
				t.Errorf("drop=%v row %d: reason %q, want %q", drop, i, got, wantReason)
			}
			if got := c.Dropped(i); got != wantDropped {
				t.Errorf("drop=%v row %d: dropped %v, want %v", drop, i, got, wantDropped)
			}
			if wantReason == "filtered:no_login" {
				if d := c.Detail(i, wantReason); d != "filter no_login (on_filter: reject): kind <> 'LOGIN' is false or NULL" {
					t.Errorf("row %d: detail %q", i, d)
				}
			}
		}
	}
}

// TestTransformerErrors: a compile error names the column or the filter.
func TestTransformerErrors(t *testing.T) {
	b := expectBatch(t, 1)
	for _, c := range []struct {
		tr   Transform
		want string
	}{
		{Transform{Columns: []ComputedColumn{{Name: "a", Expr: "nope + 1"}}}, `silver: computed column "a": `},
		{Transform{Filter: &Filter{Name: "f", Expr: "amount"}}, `silver: filter "f": `},
	} {
		if _, err := NewTransformer(context.Background(), c.tr, b.Schema); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %s...", c.tr, err, c.want)
		}
	}
}

// BenchmarkTransform: the computed columns and the filter per batch of 64k rows, against a
// baseline measured in the same run: one drop expectation over the same batch.
func BenchmarkTransform(b *testing.B) {
	batch := expectBatch(b, 1<<16)
	b.Run("baseline-expectation", func(b *testing.B) {
		exp, err := NewExpectations([]Expectation{{Name: "e", Expect: "event_type <> 'login'", OnViolation: Drop}})
		if err != nil {
			b.Fatal(err)
		}
		rules := Rules{EventTime: "event_time"}
		for b.Loop() {
			c := rules.Bind(batch)
			if err := exp.Apply(&c, batch, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batch.Len()), "ns/row")
	})
	b.Run("transform-3-columns-filter", func(b *testing.B) {
		x, err := NewTransformer(context.Background(), Transform{
			Columns: []ComputedColumn{{Name: "kind", Expr: "upper(trim(event_type))"}, {Name: "cents", Expr: "amount * 100"},
				{Name: "id", Expr: "lower(event_id)"}},
			Filter: &Filter{Name: "f", Expr: "kind <> 'LOGIN'"},
		}, batch.Schema)
		if err != nil {
			b.Fatal(err)
		}
		rules := Rules{EventTime: "event_time"}
		for b.Loop() {
			out, err := x.Apply(batch, time.Now())
			if err != nil {
				b.Fatal(err)
			}
			c := rules.Bind(out)
			x.ApplyFilter(&c, out, time.Now())
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(batch.Len()), "ns/row")
	})
}
