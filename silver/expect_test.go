package silver

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

func expectBatch(t testing.TB, n int) *pq.Batch {
	str := txlog.PrimitiveType{Name: txlog.TypeString}
	ts := txlog.PrimitiveType{Name: txlog.TypeTimestamp}
	declared := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "event_id", Type: str}, {Name: "event_type", Type: str},
		{Name: "amount", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}}, {Name: "event_time", Type: ts}}}
	b, err := pq.NewBatch(bronze.BronzeSchema(declared))
	if err != nil {
		t.Fatal(err)
	}
	types := []string{"click", "view", "purchase", "signup", "login"}
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i := range n {
		b.Columns[0].AppendString(fmt.Sprintf("evt-%08d", i))
		b.Columns[1].AppendString(types[i%len(types)])
		if i%10 == 3 {
			b.Columns[2].AppendNull()
		} else {
			b.Columns[2].AppendFloat64(float64(i%200) - 5)
		}
		b.Columns[3].AppendInt64(base + int64(i)*1000)
		b.Columns[4].AppendNull()
		b.Columns[5].AppendInt64(base + int64(i)*1000 + 5e6)
		b.Columns[6].AppendString("landing/x.json")
		b.Columns[7].AppendInt64(int64(i) * 100)
	}
	return b
}

// TestExpectationsApply: per-row outcomes of warn and drop, counts, reasons and details, on a
// batch whose violations are known by construction.
func TestExpectationsApply(t *testing.T) {
	b := expectBatch(t, 20)
	x, err := NewExpectations([]Expectation{
		{Name: "non_negative", Expect: "amount >= 0", OnViolation: Drop},        // rows 0-4 negative, 3 and 13 NULL
		{Name: "not_login", Expect: "event_type <> 'login'", OnViolation: Warn}, // rows 4, 9, 14, 19
	})
	if err != nil {
		t.Fatal(err)
	}
	rules := Rules{EventTime: "event_time"}
	c := rules.Bind(b)
	if err := x.Apply(&c, b, time.Now()); err != nil {
		t.Fatal(err)
	}
	for i := range b.Len() {
		negOrNull := i < 5 || i == 13
		login := i%5 == 4
		want := ""
		if negOrNull {
			want = ReasonExpectationPrefix + "non_negative"
		}
		if got := c.Reject(i); got != want {
			t.Errorf("row %d: reason %q, want %q", i, got, want)
		}
		if c.Violated(i) != (negOrNull || login) {
			t.Errorf("row %d: violated %v", i, c.Violated(i))
		}
		d := c.Detail(i, c.Reject(i))
		if negOrNull && login && (!strings.Contains(d, "non_negative (drop)") || !strings.Contains(d, "not_login (warn)")) {
			t.Errorf("row %d: detail %q does not name both expectations", i, d)
		}
	}
	got := x.TakeCounts()
	want := []ExpectationCount{{Name: "non_negative", OnViolation: Drop, Passed: 14, Failed: 6, Dropped: 6},
		{Name: "not_login", OnViolation: Warn, Passed: 16, Failed: 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if again := x.TakeCounts(); again[0].Passed+again[0].Failed != 0 {
		t.Errorf("TakeCounts did not start new counts: %+v", again)
	}
}

// A row the other rules reject is not judged by expectations; fail names the first
// violating row with its source.
func TestExpectationsFail(t *testing.T) {
	b := expectBatch(t, 10)
	x, err := NewExpectations([]Expectation{{Name: "small", Expect: "amount < 3", OnViolation: Fail}})
	if err != nil {
		t.Fatal(err)
	}
	rules := Rules{EventTime: "event_time", Required: []string{"amount"}} // rows 3 (NULL amount) rejected first
	c := rules.Bind(b)
	err = x.Apply(&c, b, time.Now())
	var xe *ExpectationError
	if !errors.As(err, &xe) || !errors.Is(err, ErrExpectationFailed) {
		t.Fatalf("Apply: %v", err)
	}
	// amounts: -5 -4 -3 NULL -1 0 1 2 3 4: rows 8 and 9 violate.
	if xe.Name != "small" || xe.Violations != 2 || xe.SourceOffset != 800 || xe.SourceFile != "landing/x.json" || !strings.Contains(xe.Row, `"amount":3`) {
		t.Errorf("error %+v", xe)
	}
	if c := x.TakeCounts(); c[0].Passed != 7 || c[0].Failed != 2 {
		t.Errorf("counts %+v: the row without amount must not be judged", c)
	}
}

func TestExpectationsErrors(t *testing.T) {
	if _, err := NewExpectations([]Expectation{{Name: "a", Expect: "amount >", OnViolation: Warn}}); err == nil || !strings.Contains(err.Error(), `expectation "a": at position 9`) {
		t.Errorf("parse error: %v", err)
	}
	if _, err := NewExpectations([]Expectation{{Name: "a", Expect: "amount > 0", OnViolation: "skip"}}); err == nil {
		t.Error("unknown action accepted")
	}
	x, err := NewExpectations([]Expectation{{Name: "a", Expect: "nosuch > 0", OnViolation: Warn}})
	if err != nil {
		t.Fatal(err)
	}
	b := expectBatch(t, 1)
	c := (&Rules{EventTime: "event_time"}).Bind(b)
	if err := x.Apply(&c, b, time.Now()); err == nil || !strings.Contains(err.Error(), `expectation "a"`) || !errors.Is(err, sqlexpr.ErrBadPredicate) {
		t.Errorf("bind error: %v", err)
	}
}

var benchExpectations = []Expectation{
	{Name: "non_negative", Expect: "amount IS NULL OR amount >= 0", OnViolation: Drop},
	{Name: "known_type", Expect: "event_type IN ('click', 'view', 'purchase', 'signup')", OnViolation: Warn},
	{Name: "id_length", Expect: "length(event_id) > 4", OnViolation: Drop},
	{Name: "recent", Expect: "event_time > TIMESTAMP '2020-01-01 00:00:00'", OnViolation: Warn},
	{Name: "plausible", Expect: "lower(event_type) LIKE '%i%' OR amount < 1000", OnViolation: Warn},
}

// BenchmarkExpectations evaluates five expectations over 64k-row batches (the rules' Bind
// and Apply, as the stream calls them): ns/event is their cost per event.
func BenchmarkExpectations(b *testing.B) {
	batch := expectBatch(b, 1<<16)
	x, err := NewExpectations(benchExpectations)
	if err != nil {
		b.Fatal(err)
	}
	rules := Rules{EventTime: "event_time", Required: []string{"event_id"}}
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuNanos()
	for range b.N {
		c := rules.Bind(batch)
		if err := x.Apply(&c, batch, now); err != nil {
			b.Fatal(err)
		}
		x.TakeCounts()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.Len()), "ns/event")
	b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N*batch.Len()), "cpu-ns/event")
}
