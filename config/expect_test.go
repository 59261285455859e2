package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/sqlexpr"
)

func TestExpectationsConfig(t *testing.T) {
	p := mustParse(t, minimal+`expectations:
  - {name: non_negative, expect: "amount IS NULL OR amount >= 0", on_violation: drop}
  - {name: known_type, expect: "event_type IN ('click', 'view')"}
  - {name: recent, expect: "event_time > current_timestamp() - INTERVAL '7' DAY", on_violation: fail}
`)
	want := []Expectation{
		{Name: "non_negative", Expect: "amount IS NULL OR amount >= 0", OnViolation: "drop"},
		{Name: "known_type", Expect: "event_type IN ('click', 'view')", OnViolation: "warn"}, // the default
		{Name: "recent", Expect: "event_time > current_timestamp() - INTERVAL '7' DAY", OnViolation: "fail"},
	}
	if len(p.Expectations) != len(want) {
		t.Fatalf("expectations %+v", p.Expectations)
	}
	for i := range want {
		if p.Expectations[i] != want[i] {
			t.Errorf("expectation %d = %+v, want %+v", i, p.Expectations[i], want[i])
		}
	}
}

// Every problem of an expectation is reported at load with its line, field, the
// expectation's name and, for the expression, the position and what was expected.
func TestExpectationsConfigErrors(t *testing.T) {
	cases := []struct{ item, want string }{
		{`{name: a, expect: "amount >", on_violation: drop}`,
			`p.yaml:15: expectations[0].expect: expectation "a": at position 9: expected a column, a literal, a function call, ( or NOT, found the end of the expression`},
		{`{name: a, expect: "amount IN (1, 2", on_violation: drop}`,
			`expectations[0].expect: expectation "a": at position 16: expected , or ) in the IN list`},
		{`{name: a, expect: "amout > 1"}`,
			`expectations[0].expect: expectation "a": at position 1: column amout does not exist (expected one of: event_id, event_type, amount, event_time, _rescued_data`},
		{`{name: a, expect: "amount"}`,
			`expectations[0].expect: expectation "a": at position 1: amount: expected a boolean expression, found double`},
		{`{name: a, expect: "event_time + 1 > 0"}`,
			`expectation "a": at position 1: (event_time + 1): expected operands of addition`},
		{`{name: a, expect: "amount > 0", on_violation: skip}`,
			`expectations[0].on_violation: invalid value "skip": expected warn, drop or fail`},
		{`{name: "a b", expect: "amount > 0"}`, `expectations[0].name: invalid name "a b"`},
		{`{expect: "amount > 0"}`, `expectations[0].name: required`},
		{`{name: a}`, `expectations[0].expect: required: expected a boolean SQL expression`},
		{`{name: a, expect: "amount > 0", on_fail: drop}`, `unknown key "on_fail" in expectations[0]`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(minimal+"expectations:\n  - "+c.item+"\n"), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant ~%s", c.item, err, c.want)
		}
	}
	_, err := Parse([]byte(minimal+"expectations:\n  - {name: a, expect: \"amount > 0\"}\n  - {name: A, expect: \"amount > 1\"}\n"), "p.yaml")
	if err == nil || !strings.Contains(err.Error(), `expectations[1].name: duplicate expectation "A"`) {
		t.Errorf("duplicate names: %v", err)
	}
}

// An expectation over a parser limit fails at load with the file, line, key path, the
// expectation's name, the limit and the value found (each counted here from the text built).
func TestExpectationsConfigLimits(t *testing.T) {
	nested := strings.Repeat("(", sqlexpr.MaxSQLDepth+1) + "amount > 0" + strings.Repeat(")", sqlexpr.MaxSQLDepth+1)
	items := sqlexpr.MaxSQLTokens/2 + 10 // event_type IN ('a', ... ): 2 tokens an item, 4 more
	long := "event_type IN (" + strings.Repeat("'a', ", items-1) + "'a')"
	huge := "event_type = '" + strings.Repeat("x", sqlexpr.MaxSQLBytes) + "'"
	cases := []struct {
		expect string
		want   []string
	}{
		{nested, []string{`p.yaml:18: expectations[2].expect: expectation "positive_amount": at position 1001: parentheses nested 1001 deep`,
			"expected at most 1000 levels"}},
		{strings.Repeat("NOT ", sqlexpr.MaxSQLDepth+1) + "amount > 0", []string{`expectations[2].expect: expectation "positive_amount": at position 4001: nesting deeper than 1000`}},
		{long, []string{`expectations[2].expect: expectation "positive_amount": the expression has ` + fmt.Sprint(2*items+3) + " tokens", fmt.Sprintf("expected at most %d", sqlexpr.MaxSQLTokens)}},
		{huge, []string{`expectations[2].expect: expectation "positive_amount": the expression is ` + fmt.Sprint(len(huge)) + " bytes long", fmt.Sprintf("expected at most %d", sqlexpr.MaxSQLBytes)}},
	}
	for _, c := range cases {
		text := minimal + "expectations:\n  - {name: a, expect: \"amount > 1\"}\n  - {name: b, expect: \"amount > 2\"}\n  - name: positive_amount\n    expect: \"" + c.expect + "\"\n"
		_, err := Parse([]byte(text), "p.yaml")
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%.30s...: err %.300v, want ErrInvalid", c.expect, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%.30s...: error %.400q lacks %q", c.expect, err, w)
			}
		}
		if len(err.Error()) > 1000 {
			t.Errorf("%.30s...: error of %d bytes", c.expect, len(err.Error()))
		}
	}
}

// countingCtx counts the calls of Err and reports Canceled from call cancelAt on (0: never).
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

// A context that ends during the load of a large expectation stops the load where the parser
// looks at it next, with an error that is context.Canceled and not ErrInvalid (the config
// is not bad, only not read); the same context left alone loads the config.
func TestParseContextStopsAtExpectations(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(minimal + "expectations:\n")
	for k := range 4 {
		fmt.Fprintf(&sb, "  - name: known_%d\n    expect: \"event_id IN (", k)
		for i := range 20_000 {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "'evt-%08d'", i)
		}
		sb.WriteString(")\"\n")
	}
	data := []byte(sb.String())
	full := &countingCtx{Context: context.Background()}
	if _, err := ParseContext(full, data, "p.yaml"); err != nil {
		t.Fatal(err)
	}
	// 4 expectations of 40,000 tokens: the parser looks at ctx every few thousand tokens.
	if full.calls < 4*40_000/4096 {
		t.Fatalf("the load looked at its context %d times", full.calls)
	}
	for _, at := range []int{1, 2, full.calls / 3, full.calls - 2} {
		ctx := &countingCtx{Context: context.Background(), cancelAt: at}
		_, err := ParseContext(ctx, data, "p.yaml")
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "p.yaml") {
			t.Errorf("cancelled at look %d of %d: %v, want context.Canceled naming the file", at, full.calls, err)
		}
		// It stops at that look: what is left of the load looks a fixed number of times more
		// (the validation's end and the decoding's), not once per few thousand tokens.
		if ctx.calls > at+4 {
			t.Errorf("cancelled at look %d: %d looks in all, the load went on", at, ctx.calls)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ParseContext(ctx, data, "p.yaml"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: %v", err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadContext(ctx, path); !errors.Is(err, context.Canceled) || errors.Is(err, ErrInvalid) {
		t.Errorf("LoadContext cancelled before: %v", err)
	}
}
