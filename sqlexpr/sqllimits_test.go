package sqlexpr

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

// Each limit of ParseSQL is an *SQLLimitError that names the limit and the value found
// (counted here from the way the text was built, not by the parser); a text at a limit
// still parses.
func TestSQLLimits(t *testing.T) {
	items := 130_000 // "x IN (1,1,...,1)": x IN ( + items numbers + items-1 commas + )
	inList := "x IN (" + strings.Repeat("1,", items-1) + "1)"
	nested := func(n int) string { return strings.Repeat("(", n) + "x" + strings.Repeat(")", n) }
	cases := []struct {
		name, text string
		limit      string
		max, found int
		pos        int
		msg        []string
	}{
		{"length", "x = '" + strings.Repeat("a", MaxSQLBytes) + "'", "length", MaxSQLBytes, MaxSQLBytes + 6, 0,
			[]string{fmt.Sprint(MaxSQLBytes + 6), fmt.Sprint(MaxSQLBytes), "bytes"}},
		{"tokens", inList, "tokens", MaxSQLTokens, 3 + items + items - 1 + 1, 0,
			[]string{fmt.Sprint(3 + 2*items), fmt.Sprint(MaxSQLTokens), "tokens"}},
		{"parentheses", nested(MaxSQLDepth + 1), "depth", MaxSQLDepth, MaxSQLDepth + 1, MaxSQLDepth + 1,
			[]string{fmt.Sprintf("nested %d deep", MaxSQLDepth+1), fmt.Sprintf("at most %d", MaxSQLDepth)}},
		{"parentheses far deeper", nested(100_000), "depth", MaxSQLDepth, 100_000, MaxSQLDepth + 1,
			[]string{"nested 100000 deep"}},
		{"function calls", strings.Repeat("abs(", MaxSQLDepth+1) + "x" + strings.Repeat(")", MaxSQLDepth+1) + " > 0",
			"depth", MaxSQLDepth, MaxSQLDepth + 1, 4*MaxSQLDepth + 4, []string{"nested"}},
		{"NOT", strings.Repeat("NOT ", MaxSQLDepth+1) + "x", "depth", MaxSQLDepth, 0, 4*MaxSQLDepth + 1,
			[]string{fmt.Sprintf("deeper than %d", MaxSQLDepth)}},
		{"signs", "x = " + strings.Repeat("- ", MaxSQLDepth+1) + "1", "depth", MaxSQLDepth, 0, 5 + 2*MaxSQLDepth,
			[]string{"deeper than"}},
		{"parentheses and NOT", strings.Repeat("(NOT ", 600) + "x" + strings.Repeat(")", 600), "depth", MaxSQLDepth, 0, 5*500 + 1,
			[]string{"deeper than"}},
	}
	for _, c := range cases {
		_, err := ParseSQL(c.text)
		var le *SQLLimitError
		if !errors.As(err, &le) || !errors.Is(err, ErrSQLLimit) {
			t.Errorf("%s: err = %.200v, want an *SQLLimitError", c.name, err)
			continue
		}
		if le.Limit != c.limit || le.Max != c.max || le.Found != c.found || le.Pos != c.pos {
			t.Errorf("%s: got %+v, want limit %s max %d found %d position %d", c.name, *le, c.limit, c.max, c.found, c.pos)
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: message %q lacks %q", c.name, err, m)
			}
		}
	}
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[{"name":"x","type":"boolean","nullable":true,"metadata":{}}]}`)
	for _, text := range []string{
		nested(MaxSQLDepth),
		strings.Repeat("NOT ", MaxSQLDepth) + "x",
		"x IN (" + strings.Repeat("TRUE,", MaxSQLTokens/2-3) + "TRUE)",
		"x = '" + strings.Repeat("a", MaxSQLBytes-7) + "'",
	} {
		e, err := ParseSQL(text)
		if err != nil {
			t.Errorf("%.40s... (%d bytes): %.300v", text, len(text), err)
			continue
		}
		if _, err := CompileSQL(e, schema); err != nil && !strings.Contains(err.Error(), "comparable") {
			t.Errorf("%.40s...: compile: %.300v", text, err)
		}
	}
}

// A long literal or name in an error is cut: the message stays one readable line.
func TestSQLErrorsQuoteLittle(t *testing.T) {
	long := strings.Repeat("z", 100_000)
	for _, text := range []string{"x = 1 " + long, "x = 1 '" + long + "'", "x = 1 `" + long + "`", "x = " + long + "(1)"} {
		_, err := ParseSQL(text)
		if err == nil || len(err.Error()) > 2*maxErrorSQL+200 {
			t.Errorf("%.20s...: error of %d bytes: %.300v", text, len(fmt.Sprint(err)), err)
		}
	}
	e, err := ParseSQL("(" + sqlOrChain(5000) + ") + 1 > 0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = CompileSQL(e, pqtest.MustSchema(t, pqtest.BenchSchema))
	if !errors.Is(err, ErrBadPredicate) || len(err.Error()) > 2*maxErrorSQL+200 || !strings.Contains(err.Error(), "…") {
		t.Errorf("bind error of %d bytes: %.400v", len(fmt.Sprint(err)), err)
	}
}

// countingCtx counts the calls of Err and reports Canceled from call cancelAt on (0: never):
// it shows where the parser looks at its context, without a clock.
type countingCtx struct {
	context.Context
	calls, cancelAt int
}

func (c *countingCtx) Err() error {
	c.calls++
	if c.cancelAt > 0 && c.calls >= c.cancelAt {
		return context.Canceled
	}
	return nil
}

// ParseSQLContext and CompileSQLContext look at their context all along a large text and stop
// at the first look after it ends, with its error.
func TestSQLContextStopsParse(t *testing.T) {
	text := sqlInList(50_000) // ~100,000 tokens
	schema := pqtest.MustSchema(t, pqtest.BenchSchema)
	full := &countingCtx{Context: context.Background()}
	e, err := ParseSQLContext(full, text)
	if err != nil {
		t.Fatal(err)
	}
	// At least once per ctxCheckEvery tokens while lexing, and again while parsing.
	if min := 100_000/ctxCheckEvery + 50_000/ctxCheckEvery; full.calls < min {
		t.Fatalf("the parser looked at its context %d times over 100,000 tokens, want >= %d", full.calls, min)
	}
	for _, at := range []int{1, 2, full.calls / 2, full.calls} {
		ctx := &countingCtx{Context: context.Background(), cancelAt: at}
		_, err := ParseSQLContext(ctx, text)
		if !errors.Is(err, context.Canceled) || ctx.calls != at {
			t.Errorf("cancelled at look %d of %d: err %v after %d looks, want context.Canceled at once", at, full.calls, err, ctx.calls)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseSQLContext(ctx, "x > 1"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}

	fullBind := &countingCtx{Context: context.Background()}
	if _, err := CompileSQLContext(fullBind, e, schema); err != nil {
		t.Fatal(err)
	}
	if fullBind.calls < 50_000/ctxCheckEvery {
		t.Fatalf("binding looked at its context %d times over 50,000 nodes", fullBind.calls)
	}
	for _, at := range []int{1, fullBind.calls} {
		ctx := &countingCtx{Context: context.Background(), cancelAt: at}
		_, err := CompileSQLContext(ctx, e, schema)
		if !errors.Is(err, context.Canceled) || ctx.calls != at {
			t.Errorf("bind cancelled at look %d of %d: err %v after %d looks", at, fullBind.calls, err, ctx.calls)
		}
	}
}

// A chain of BETWEENs binds its operand once: it took time exponential in the chain's length
// (2^40 binds here), and evaluates as nested BETWEENs do.
func TestSQLBetweenChain(t *testing.T) {
	b := sqlTestBatch(t)
	text := "ok" + strings.Repeat(" BETWEEN false AND true", 40)
	e, err := ParseSQL(text)
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompileSQL(e, b.Schema)
	if err != nil {
		t.Fatal(err)
	}
	// ok is T F N T F; (v BETWEEN false AND true) is true for any non-null boolean.
	for range 2 {
		if got := outcomes(p.Eval(b, sqlTestNow)); got != "TTNTT" {
			t.Errorf("%s = %s, want TTNTT", text[:40], got)
		}
	}
	for _, c := range []struct{ expr, want string }{
		{"qty + 1 BETWEEN 1 AND 4", "TTNFF"},
		{"qty + 1 NOT BETWEEN 1 AND 4", "FFNTT"},
		{"(qty BETWEEN 0 AND 3) BETWEEN true AND true", "TTNFF"},
		{"lower(name) BETWEEN 'a' AND 'c'", "TTNFF"},
	} {
		e, err := ParseSQL(c.expr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := CompileSQL(e, b.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := outcomes(p.Eval(b, sqlTestNow)); got != c.want {
			t.Errorf("%s = %s, want %s", c.expr, got, c.want)
		}
	}
}

// IN over long lists (a hash set) and short ones (compared one by one) agrees with a
// row-by-row oracle written here from SQL's rule: true when x equals an item, else NULL when x
// or an item is NULL, else false; NOT IN negates, NULL stays NULL. Doubles follow Spark:
// NaN equals NaN, -0.0 equals 0.0.
func TestSQLInListOracle(t *testing.T) {
	schema := pqtest.MustSchema(t, `{"type":"struct","fields":[
{"name":"i","type":"long","nullable":true,"metadata":{}},
{"name":"s","type":"string","nullable":true,"metadata":{}},
{"name":"f","type":"double","nullable":true,"metadata":{}},
{"name":"d","type":"decimal(10,2)","nullable":true,"metadata":{}},
{"name":"b","type":"boolean","nullable":true,"metadata":{}}]}`)
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	const rows = 600
	doubles := func(r int) float64 {
		switch r % 7 {
		case 0:
			return math.NaN()
		case 1:
			return math.Copysign(0, -1)
		}
		return float64(r%300) / 4
	}
	for r := range rows {
		if r%11 == 5 {
			for _, c := range b.Columns {
				c.AppendNull()
			}
			continue
		}
		b.Columns[0].AppendInt64(int64(r % 300))
		b.Columns[1].AppendString(fmt.Sprintf("v%d", r%300))
		b.Columns[2].AppendFloat64(doubles(r))
		if err := b.Columns[3].AppendValue(pq.Decimal{Unscaled: pq.Decimal128{Lo: uint64(r % 300 * 25)}, Scale: 2}); err != nil {
			t.Fatal(err)
		}
		b.Columns[4].AppendBool(r%3 == 0)
	}
	type listCase struct {
		col   string
		items func(k int) (sql string, match func(r int) bool) // item k as SQL and which rows it equals
	}
	isNullRow := func(r int) bool { return r%11 == 5 }
	cases := []listCase{
		{"i", func(k int) (string, func(int) bool) {
			return fmt.Sprint(2 * k), func(r int) bool { return r%300 == 2*k }
		}},
		{"s", func(k int) (string, func(int) bool) {
			return fmt.Sprintf("'v%d'", 3*k), func(r int) bool { return r%300 == 3*k }
		}},
		{"f", func(k int) (string, func(int) bool) {
			if k == 0 {
				// -0.0 equals 0.0; NaN (rows r%7 == 0) equals no number.
				return "0.0D", func(r int) bool { return r%7 == 1 || r%7 > 1 && r%300 == 0 }
			}
			v := float64(5*k) / 4
			return fmt.Sprintf("%gD", v), func(r int) bool { return r%7 > 1 && float64(r%300)/4 == v }
		}},
		{"d", func(k int) (string, func(int) bool) {
			return fmt.Sprintf("%d.%02d", k*25/100, k*25%100), func(r int) bool { return r%300 == k }
		}},
		{"b", func(k int) (string, func(int) bool) {
			return "TRUE", func(r int) bool { return r%3 == 0 }
		}},
	}
	for _, c := range cases {
		for _, n := range []int{1, smallStringInList + 1, smallInList, smallInList + 1, 200} {
			for _, withNull := range []bool{false, true} {
				for _, not := range []bool{false, true} {
					var items []string
					var matches []func(int) bool
					for k := range n {
						s, m := c.items(k)
						items = append(items, s)
						matches = append(matches, m)
					}
					if withNull {
						items = append(items[:len(items)/2], append([]string{"NULL"}, items[len(items)/2:]...)...)
					}
					kw := " IN ("
					if not {
						kw = " NOT IN ("
					}
					text := c.col + kw + strings.Join(items, ", ") + ")"
					want := make([]byte, rows)
					for r := range rows {
						found := false
						for _, m := range matches {
							found = found || m(r)
						}
						switch {
						case isNullRow(r) || !found && withNull:
							want[r] = 'N'
						case found != not:
							want[r] = 'T'
						default:
							want[r] = 'F'
						}
					}
					e, err := ParseSQL(text)
					if err != nil {
						t.Fatalf("%.80s: %v", text, err)
					}
					p, err := CompileSQL(e, schema)
					if err != nil {
						t.Fatalf("%.80s: %v", text, err)
					}
					for range 2 {
						val, null := p.Eval(b, sqlTestNow)
						if got := outcomes(val, null); got != string(want) {
							t.Fatalf("%.80s (%d items):\n got %s\nwant %s", text, n, got, want)
						}
						if !withNull && null != nil {
							for r, isNull := range null {
								if isNull && !isNullRow(r) {
									t.Fatalf("%.80s: row %d null", text, r)
								}
							}
						}
					}
				}
			}
		}
	}
	// Items that are not literals are compared row by row beside the set.
	e, err := ParseSQL("i IN (" + strings.Repeat("1000, ", 20) + "i + 0, NULL)")
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompileSQL(e, schema)
	if err != nil {
		t.Fatal(err)
	}
	got := outcomes(p.Eval(b, sqlTestNow))
	for r := range rows {
		if want := map[bool]byte{true: 'N', false: 'T'}[isNullRow(r)]; got[r] != want {
			t.Fatalf("row %d: %c, want %c", r, got[r], want)
		}
	}
}
