package sqlexpr

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

const sqlTestSchema = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":true,"metadata":{}},
{"name":"name","type":"string","nullable":true,"metadata":{}},
{"name":"amount","type":"double","nullable":true,"metadata":{}},
{"name":"qty","type":"integer","nullable":true,"metadata":{}},
{"name":"price","type":"decimal(10,2)","nullable":true,"metadata":{}},
{"name":"ok","type":"boolean","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"d","type":"date","nullable":true,"metadata":{}},
{"name":"st","type":{"type":"struct","fields":[{"name":"code","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}}]}`

// sqlTestBatch holds five rows: ordinary values, boundaries (NaN, the int range, negative
// zero-ish decimals), a row of nulls and non-ASCII text.
func sqlTestBatch(t testing.TB) *pq.Batch {
	b, err := pq.NewBatch(pqtest.MustSchema(t, sqlTestSchema))
	if err != nil {
		t.Fatal(err)
	}
	ts := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	dec := func(s string) any {
		d, err := pq.ParseDecimal(s, 2)
		if err != nil {
			t.Fatal(err)
		}
		return pq.Decimal{Unscaled: d, Scale: 2}
	}
	rows := [][]any{
		{int64(1), "Alice", 10.5, 3, dec("12.50"), true, ts("2024-03-01 10:00:00"), ts("2024-03-01 00:00:00"), "DE"},
		{int64(2), "bob ", -1.0, 0, dec("0.00"), false, ts("2024-03-01 11:30:00"), ts("2024-02-29 00:00:00"), "FR"},
		{int64(3), nil, nil, nil, nil, nil, nil, nil, nil},
		{int64(4), "  x_y%z ", math.NaN(), math.MaxInt32, dec("99999999.99"), true, ts("2024-03-02 00:00:00"), ts("2024-03-02 00:00:00"), nil},
		{int64(-5), "Ünïcode", 0.0, math.MinInt32, dec("-0.01"), false, ts("1970-01-01 00:00:00"), ts("1970-01-01 00:00:00"), "de"},
	}
	for ri, row := range rows {
		for k, v := range row[:8] {
			if err := b.Columns[k].AppendValue(v); err != nil {
				t.Fatalf("row %d col %d: %v", ri, k, err)
			}
		}
		st := b.Columns[8]
		if ri == 2 {
			st.AppendNull()
			continue
		}
		if row[8] == nil {
			st.Children[0].AppendNull()
		} else {
			st.Children[0].AppendString(row[8].(string))
		}
		st.AppendStruct()
	}
	return b
}

var sqlTestNow = time.Date(2024, 3, 2, 6, 0, 0, 0, time.UTC)

// outcomes renders a result as one letter per row: T true, F false, N null.
func outcomes(val, null []bool) string {
	var sb strings.Builder
	for i, v := range val {
		switch {
		case null != nil && null[i]:
			sb.WriteByte('N')
		case v:
			sb.WriteByte('T')
		default:
			sb.WriteByte('F')
		}
	}
	return sb.String()
}

// The expected outcomes are worked out by hand from Spark SQL's rules (three-valued logic,
// implicit casts, NaN above every number, wrapping int arithmetic, NULL on division by zero);
// tests/interop checks the same constructs against Spark itself.
func TestSQLEval(t *testing.T) {
	b := sqlTestBatch(t)
	cases := []struct{ expr, want string }{
		{"id > 2", "FFTTF"},
		{"amount >= 0", "TFNTT"},
		{"name IS NULL", "FFTFF"},
		{"name is not null", "TTFTT"},
		{"name IN ('Alice', 'bob')", "TFNFF"},
		{"name NOT IN ('Alice', NULL)", "FNNNN"},
		{"name IN ('Alice', NULL)", "TNNNN"},
		{"qty BETWEEN 0 AND 3", "TTNFF"},
		{"qty NOT BETWEEN 0 AND 3", "FFNTT"},
		{"name LIKE 'A%'", "TFNFF"},
		{`name LIKE '%x\_y\%z%'`, "FFNTF"},
		{"name LIKE '_ob_'", "FTNFF"},
		{"name NOT LIKE '%o%'", "TFNTF"},
		{"name LIKE '%c%e'", "TFNFT"},
		{"name LIKE NULL", "NNNNN"},
		{"lower(name) = 'alice'", "TFNFF"},
		{"upper(name) = 'BOB '", "FTNFF"},
		{"trim(name) = 'bob'", "FTNFF"},
		{"trim(name) = 'x_y%z'", "FFNTF"},
		{"length(name) = 7", "FFNFT"},
		{"length(qty) = 1", "TTNFF"},
		{"abs(id) = 5", "FFFFT"},
		{"abs(qty) < 0", "FFNFT"},
		{"coalesce(name, 'none') = 'none'", "FFTFF"},
		{"coalesce(qty, 'x') = 'x'", "FFTFF"},
		{"id + 1 = 2", "TFFFF"},
		{"qty + 1 < 0", "FFNTT"},
		{"-qty < 0", "TFNTT"},
		{"id / 2 = 0.5", "TFFFF"},
		{"id % 2 = 1", "TFTFF"},
		{"id / 0 IS NULL", "TTTTT"},
		{"id % 0 IS NULL", "TTTTT"},
		{"price > 12.49", "TFNTF"},
		{"price * 2 = 25", "TFNFF"},
		{"price + 0.01 = 12.51", "TFNFF"},
		{"price - 0.01 < 0", "FTNFT"},
		{"price / 2 = 6.25", "TFNFF"}, // decimal(21,13): 99999999.99 / 2 needs 21 digits
		{"price / 3 > 4.16", "TFNTF"},
		{"price * price > 100", "TFNTF"},
		{"price * price * price * price > 1e30", "FFNTF"}, // decimal(38,8) after Spark's precision adjustment
		{"-price < 0", "TFNTF"},
		{"abs(price) = 0.01", "FFNFT"},
		{"coalesce(price, 0) = 0", "FTTFF"},
		{"price IN (12.5, 0)", "TTNFF"},
		{"12345678901234567890123 + 1 > 12345678901234567890123", "TTTTT"},
		{"price % 5 = 2.5", "TFNFF"},
		{"ok", "TFNTF"},
		{"NOT ok", "FTNFT"},
		{"ok AND amount > 0", "TFNTF"},
		{"name IS NULL OR amount > 0", "TFTTF"},
		{"name IS NOT NULL AND amount > 0", "TFFTF"},
		{"amount > 0 OR ok", "TFNTF"},
		{"NOT (amount > 0 AND ok)", "FTNFT"},
		{"ts >= TIMESTAMP '2024-03-01 11:00:00'", "FTNTF"},
		{"ts > '2024-03-01 10:30'", "FTNTF"},
		{"d = DATE '2024-02-29'", "FTNFF"},
		{"d = '2024-02-29'", "FTNFF"},
		{"d < ts", "TTNFF"},
		{"ts > current_timestamp() - INTERVAL '1' DAY", "TTNTF"},
		{"current_timestamp - ts < INTERVAL 12 HOURS", "FFNTF"},
		{"ts + INTERVAL '30' MINUTE = TIMESTAMP '2024-03-01 10:30:00'", "TFNFF"},
		{"st.code IN ('DE', 'FR')", "TTNNF"},
		{"`st`.`code` = 'de'", "FFNNT"},
		{"ST.CODE = 'de'", "FFNNT"},
		{"id = '1'", "TFFFF"},
		{"id = ' 1 '", "TFFFF"},
		{"id = 'x'", "NNNNN"},
		{"amount = '10.5'", "TFNFF"},
		{"qty IN ('3', 0)", "TTNFF"},
		{"NULL = NULL", "NNNNN"},
		{"NULL IS NULL", "TTTTT"},
		{"amount * 2 > 20", "TFNTF"},
		{"amount = amount", "TTNTT"},
		{"amount <> 0", "TTNTF"},
		{"amount != 0", "TTNTF"},
		{"amount == 10.5", "TFNFF"},
		{"1.5 + 2.25 = 3.75", "TTTTT"},
		{"0.1 + 0.2 = 0.3", "TTTTT"},
		{"0.1D + 0.2D = 0.3D", "FFFFF"},
		{"1 / 3 > 0.33", "TTTTT"},
		{"2147483647 + 1 < 0", "TTTTT"},
		{"2147483648 > 0", "TTTTT"},
		{"-2147483648 < 0", "TTTTT"},
		{"10L * 3 = 30", "TTTTT"},
		{"1e2 = 100", "TTTTT"},
		{"'a' 'b' = 'ab'", "TTTTT"},
		{"'it\\'s' = \"it's\"", "TTTTT"},
		{"TRUE AND NULL", "NNNNN"},
		{"FALSE AND NULL", "FFFFF"},
		{"TRUE OR NULL", "TTTTT"},
		{"'5' + 1 = 6", "TTTTT"},
		{"id IN (1, 2, id + 10)", "TTFFF"},
		{"coalesce(NULL, NULL, id) = id", "TTTTT"},
		{"name LIKE lower(name)", "FTNTF"},
	}
	for _, c := range cases {
		e, err := ParseSQL(c.expr)
		if err != nil {
			t.Errorf("%s: parse: %v", c.expr, err)
			continue
		}
		p, err := CompileSQL(e, b.Schema)
		if err != nil {
			t.Errorf("%s: compile: %v", c.expr, err)
			continue
		}
		// Twice: the program keeps buffers between batches and must not carry results over.
		for range 2 {
			if got := outcomes(p.Eval(b, sqlTestNow)); got != c.want {
				t.Errorf("%s = %s, want %s", c.expr, got, c.want)
				break
			}
		}
	}
}

// Predicate.Eval (scans, replaceWhere) keeps only the rows where the SQL expression is true.
func TestSQLAsPredicate(t *testing.T) {
	b := sqlTestBatch(t)
	e, err := ParseSQL("amount >= 0 AND name LIKE '%e'")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Bind(e, b.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Eval(b)
	want := []bool{true, false, false, false, true}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Eval = %v, want %v", got, want)
		}
	}
	if p.String() != "amount >= 0 AND name LIKE '%e'" {
		t.Errorf("String = %q", p.String())
	}
}

func TestSQLParseErrors(t *testing.T) {
	cases := []struct {
		expr     string
		pos      int
		expected string
	}{
		{"amount >", 9, "a column, a literal"},
		{"amount > 'abc", 10, "a closing '"},
		{"foo(amount) > 1", 1, "a known function"},
		{"amount IS 5", 11, "NULL after IS"},
		{"amount IN 1", 11, "( after IN"},
		{"amount IN (1 2)", 14, ", or ) in the IN list"},
		{"amount BETWEEN 1 2", 18, "AND in BETWEEN"},
		{"amount NOT 5", 12, "IN, BETWEEN or LIKE after NOT"},
		{"(amount > 1", 12, "an operator or )"},
		{"amount > 1 1", 12, "or the end of the expression"},
		{"amount # 1", 8, "a column, a literal, an operator"},
		{"length(a, b) > 1", 1, "1 argument(s) for length"},
		{"coalesce() IS NULL", 1, "at least 1 argument(s) for coalesce"},
		{"ts > INTERVAL '1' WEEK", 19, "an interval unit"},
		{"ts > INTERVAL 'x' DAY", 15, "a number of day"},
		{"ts > TIMESTAMP 'nope'", 16, "a timestamp"},
		{"d = DATE '2024-02-30'", 10, "a date"},
		{"x = 1.2.3", 5, "at most one decimal point"},
		{"x = 12abc", 5, "a number"},
		{"a <=> b", 3, "other than <=>"},
		{"a || b = 'x'", 3, "other than ||"},
		{"ts < current_timestamp(1)", 24, "current_timestamp takes no argument"},
		{"`a = 1", 1, "a closing `"},
		{"x = 1234567890123456789012345678901234567890.5", 5, "a decimal of at most 38 digits"},
		{"x = 99999999999999999999L", 5, "within the range of its suffix"},
		{"x = 1.5L", 5, "an integer before the suffix"},
		{"", 1, "a column, a literal"},
		{"a AND", 6, "a column, a literal"},
		{"st. = 1", 5, "a field name after ."},
		{"NOT", 4, "a column, a literal"},
		{"a = AND", 5, "a column, a literal"},
	}
	for _, c := range cases {
		_, err := ParseSQL(c.expr)
		var se *SQLError
		if !errors.As(err, &se) || !errors.Is(err, ErrSQLSyntax) {
			t.Errorf("%q: err = %v, want a *SQLError", c.expr, err)
			continue
		}
		if se.Pos != c.pos || !strings.Contains(se.Expected, c.expected) {
			t.Errorf("%q: got position %d expected %q, want position %d expected ~%q", c.expr, se.Pos, se.Expected, c.pos, c.expected)
		}
		if !strings.Contains(err.Error(), "position") || !strings.Contains(err.Error(), "found") {
			t.Errorf("%q: message %q lacks the position or what was found", c.expr, err)
		}
	}
}

func TestSQLBindErrors(t *testing.T) {
	schema := pqtest.MustSchema(t, sqlTestSchema)
	cases := []struct{ expr, want string }{
		{"nosuch > 1", "column nosuch does not exist"},
		{"st.nope = 'x'", "column st.nope does not exist"},
		{"id.x = 1", "id is not a struct"},
		{"st = 1", "which expressions cannot use"},
		{"amount", "expected a boolean expression, found double"},
		{"length(name) AND ok", "a boolean operand of AND, found int"},
		{"ok OR name", "a boolean operand of OR, found string"},
		{"ok = ts", "comparable operands, found boolean = timestamp"},
		{"NOT amount", "a boolean operand of NOT"},
		{"ts + 1 > ts", "operands of addition"},
		{"ts * 2 > ts", "operands of multiplication"},
		{"ok LIKE 'x'", "a string in LIKE"},
		{"abs(ts) > 0", "a numeric argument of abs"},
		{"coalesce(ok, 1) = 1", "arguments of coalesce of one type"},
		{"id IN (ok)", "comparable with bigint in IN"},
		{"-ts < 0", "a number or an interval after unary minus"},
		{"length(INTERVAL 1 DAY) = 1", "a string or binary argument of length"},
	}
	for _, c := range cases {
		e, err := ParseSQL(c.expr)
		if err != nil {
			t.Errorf("%q: parse: %v", c.expr, err)
			continue
		}
		_, err = CompileSQL(e, schema)
		if !errors.Is(err, ErrBadPredicate) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "position") {
			t.Errorf("%q: err = %v, want ErrBadPredicate with %q and a position", c.expr, err, c.want)
		}
	}
}

// Literal typing follows Spark: the canonical form shows each literal's type.
func TestSQLLiteralTypes(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"1 = 1", "(1 = 1)"},
		{"x = 3000000000", "(x = 3000000000L)"},
		{"x = 10L", "(x = 10L)"},
		{"x = 1.50", "(x = 1.50BD)"},
		{"x = .5", "(x = 0.5BD)"},
		{"x = 1e3", "(x = 1000D)"},
		{"x = 1.5D", "(x = 1.5D)"},
		{"x = 99999999999999999", "(x = 99999999999999999L)"},
		{"x = 12345678901234567890", "(x = 12345678901234567890BD)"},
		{"x = INTERVAL '1.5' MINUTE", "(x = INTERVAL '90.000000' SECOND)"},
		{"x = DATE '2024-02-29'", "(x = DATE '2024-02-29')"},
		{"x = TIMESTAMP '2024-02-29 10:00:00.5'", "(x = TIMESTAMP '2024-02-29 10:00:00.5')"},
		{"x = TIMESTAMP '2024-02-29T10:00:00+01:00'", "(x = TIMESTAMP '2024-02-29 09:00:00')"},
		{"x = 'a\\nb'", "(x = 'a\nb')"},
		{"a = 1 AND b = 2 OR NOT c", "(((a = 1) AND (b = 2)) OR (NOT c))"},
		{"a + b * c - d / e % f = 1", "(((a + (b * c)) - ((d / e) % f)) = 1)"},
		{"NOT a = b", "(NOT (a = b))"},
		{"a = b IS NULL", "((a = b) IS NULL)"},
		{"x BETWEEN 1 + 1 AND 3", "(x BETWEEN (1 + 1) AND 3)"},
		{"now() > ts", "(current_timestamp() > ts)"},
		{"char_length(x) = lcase(y)", "(length(x) = lower(y))"},
	}
	for _, c := range cases {
		e, err := ParseSQL(c.expr)
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		if got := e.(*sqlPred).Canonical(); got != c.want {
			t.Errorf("%q: canonical %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestSQLLikePatterns(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"a%", "abc", true}, {"%c", "abc", true}, {"%b%", "abc", true}, {"abc", "abc", true},
		{"ab", "abc", false}, {"a_c", "abc", true}, {"a_c", "ac", false}, {"_", "é", true},
		{"%a%b%c%", "xaybzc", true}, {"%a%b%c%", "xaybz", false}, {"a%%c", "ac", true},
		{`a\%`, "a%", true}, {`a\%`, "ab", false}, {`\\`, `\`, true}, {"", "", true}, {"", "a", false},
		{"%", "", true}, {"_%_", "a", false}, {"_%_", "ab", true}, {"%aa", "aaa", true},
	}
	for _, c := range cases {
		lp, ok := compileLike([]byte(c.pat))
		if !ok {
			t.Errorf("%q: invalid", c.pat)
			continue
		}
		if got := lp.match([]byte(c.s)); got != c.want {
			t.Errorf("%q LIKE %q = %v, want %v", c.s, c.pat, got, c.want)
		}
	}
	for _, bad := range []string{`a\`, `\a`} {
		if _, ok := compileLike([]byte(bad)); ok {
			t.Errorf("%q: accepted, want an invalid escape", bad)
		}
	}
}

// FuzzParseSQL: any text either parses or fails with a *SQLError that names a position
// inside the text (or just after it), or with an *SQLLimitError; a parsed text's canonical
// form parses again to itself (unless its parentheses pass MaxSQLDepth), and binding and
// evaluating never panic. A cancelled context stops any text.
func FuzzParseSQL(f *testing.F) {
	for _, s := range []string{"id > 2", "name LIKE 'a%' AND amount BETWEEN 1 AND 2", "coalesce(qty, 'x') = 'x'",
		"ts > current_timestamp() - INTERVAL '1' DAY", "NOT (ok OR st.code IN ('DE', NULL))", "price * 2.5 / 0 IS NULL",
		"`st`.`code` = \"x\"", "1e400 > 0", "x = 1.2.3", "length(trim(upper(name))) % 3 = -1",
		// The limits and the shapes that were slow.
		strings.Repeat("(", MaxSQLDepth+1) + "ok" + strings.Repeat(")", MaxSQLDepth+1),
		strings.Repeat("(", MaxSQLDepth) + "ok" + strings.Repeat(")", MaxSQLDepth),
		strings.Repeat("NOT ", MaxSQLDepth+1) + "ok", strings.Repeat("(NOT ", 501) + "ok" + strings.Repeat(")", 501),
		"id = " + strings.Repeat("- ", MaxSQLDepth) + "1", "ok" + strings.Repeat(" BETWEEN false AND true", 30),
		"id IN (" + strings.Repeat("1, ", 100) + "NULL, id)", "name IN (" + strings.Repeat("'a' 'b', ", 50) + "'c')",
		"amount IN (" + strings.Repeat("0.5D, -0.0D, ", 20) + "1)", "price NOT IN (" + strings.Repeat("1.25, ", 20) + "NULL)",
		"x = " + strings.Repeat("1", 200) + "BD", "ts > INTERVAL '" + strings.Repeat("1", 100) + "' SECOND",
		// The function library (issue 36): one of each group, nested as computed columns nest them.
		"upper(substr(name, -3, 2)) = concat_ws('-', lpad(name, 5, 'é'), split_part(name, ',', -1))",
		"regexp_replace(name, '(a+)', '<$1>', 2) = 'x' OR regexp_extract(name, 'a(b)?', 1) = ''",
		"round(price, -1) > bround(amount, 2) AND floor(amount) < ceil(price) AND pmod(qty, 3) = log(2, 8)",
		"nullif(qty, 0) IS NULL OR greatest(id, qty, 1) = least(amount, price) OR if(ok, 1, nvl2(name, 2, 3)) = 1",
		"date_trunc('week', ts) < to_timestamp(name, 'dd/MM/yyyy HH:mm:ssXXX') AND datediff(d, '2024-01-01') > year(ts)",
		"unix_timestamp(ts) = unix_micros(timestamp_seconds(id)) AND date_add(d, qty) <> trunc(d, 'MM')",
		"get_json_object(name, '$.a.b[0]') = instr(translate(name, 'ab', 'x'), repeat('x', 2))",
		"lenght(name) = 1", "current_date() = d", "concat() = ''",
		"CASE qty WHEN 1 THEN CAST(amount AS int) WHEN 2 THEN 3 ELSE CAST(name AS decimal(5,2)) END > 0",
		"CASE WHEN ok THEN CAST(ts AS date) END = d"} {
		f.Add(s)
	}
	b := sqlTestBatch(f)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseSQLContext(cancelled, s); !errors.Is(err, context.Canceled) && len(s) <= MaxSQLBytes {
			t.Fatalf("%q: with a cancelled context: %v", s, err)
		}
		e, err := ParseSQL(s)
		if err != nil {
			var se *SQLError
			var le *SQLLimitError
			switch {
			case errors.As(err, &le):
				if le.Pos < 0 || le.Pos > len([]rune(s))+1 || le.Found != 0 && le.Found <= le.Max {
					t.Fatalf("%q: limit error %+v", s, *le)
				}
			case !errors.As(err, &se):
				t.Fatalf("%q: error %v is not a *SQLError", s, err)
			case se.Pos < 1 || se.Pos > len([]rune(s))+1:
				t.Fatalf("%q: position %d outside the text", s, se.Pos)
			}
			return
		}
		canon := e.(*sqlPred).Canonical()
		e2, err := ParseSQL(canon)
		if errors.Is(err, ErrSQLLimit) {
			return // the canonical form parenthesizes every operator: a long chain nests deep
		}
		if err != nil {
			t.Fatalf("%q: canonical %q does not parse: %v", s, canon, err)
		}
		if c2 := e2.(*sqlPred).Canonical(); c2 != canon {
			t.Fatalf("%q: canonical %q reparses as %q", s, canon, c2)
		}
		p, err := CompileSQL(e, b.Schema)
		if err != nil {
			return
		}
		val, null := p.Eval(b, sqlTestNow)
		if len(val) != b.Len() || null != nil && len(null) != b.Len() {
			t.Fatalf("%q: %d values, %d nulls for %d rows", s, len(val), len(null), b.Len())
		}
	})
}
