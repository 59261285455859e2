package sqlexpr

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// renderColumn writes each row of a value column as Spark's CAST(... AS STRING) would, "NULL"
// for NULL, joined by |.
func renderColumn(t *testing.T, c *pq.Column) string {
	t.Helper()
	out := make([]string, c.Len)
	for r := range c.Len {
		if c.IsNull(r) {
			out[r] = "NULL"
			continue
		}
		switch c.Type.TypeName() {
		case txlog.TypeDate:
			out[r] = formatDate(int64(c.Int32[r]))
			continue
		case txlog.TypeTimestamp:
			out[r] = formatTimestampSQL(c.Int64[r])
			continue
		}
		switch c.Kind {
		case pq.KindInt32:
			out[r] = strconv.Itoa(int(c.Int32[r]))
		case pq.KindInt64:
			out[r] = strconv.FormatInt(c.Int64[r], 10)
		case pq.KindFloat64:
			out[r] = pq.JavaDouble(c.Float64[r], 64)
		case pq.KindDecimal:
			out[r] = pq.FormatDecimal(c.Decimal[r], c.Type.(txlog.DecimalType).Scale)
		case pq.KindBool:
			out[r] = strconv.FormatBool(c.Bool[r])
		case pq.KindBytes:
			out[r] = c.StringAt(r)
		}
	}
	return strings.Join(out, "|")
}

func evalValue(t *testing.T, b *pq.Batch, text string) (string, string) {
	t.Helper()
	e, err := ParseSQL(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	p, err := CompileSQLValue(context.Background(), e, b.Schema)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	c, err := p.EvalColumn(b, sqlTestNow)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	typ, _ := p.ResultType()
	return renderColumn(t, c), typ.TypeName()
}

// Constant expressions: the expected values and types are what Spark 3.5.8 (UTC session,
// ANSI off) returned for the same SQL, recorded by hand; each row of the test batch gives
// the same value, so row 0 is compared.
func TestSQLFunctionValues(t *testing.T) {
	b := sqlTestBatch(t)
	cases := []struct{ expr, want, typ string }{
		// strings
		{"substr('hello', -3, 2)", "ll", "string"},
		{"substr('hello', 0, 2)", "he", "string"},
		{"substr('hello', -10, 7)", "he", "string"},
		{"substring('héllo', 2)", "éllo", "string"},
		{"left('abc', -1)", "", "string"},
		{"right('abc', 5)", "abc", "string"},
		{"right('abcdef', 2)", "ef", "string"},
		{"concat('a', NULL)", "NULL", "string"},
		{"concat()", "", "string"},
		{"concat('a', 1, TRUE)", "a1true", "string"},
		{"concat_ws(',', 'a', NULL, 'b')", "a,b", "string"},
		{"concat_ws(NULL, 'a')", "NULL", "string"},
		{"replace('abc', '', 'x')", "abc", "string"},
		{"replace('aXbXc', 'X')", "abc", "string"},
		{"regexp_replace('abc', 'b*', '-')", "-a--c-", "string"},
		{"regexp_replace('abcabc', 'b', 'X', 3)", "abcaXc", "string"},
		{"regexp_replace('2024-03-05', '(\\\\d+)-(\\\\d+)-(\\\\d+)', '$3/$2/$1')", "05/03/2024", "string"},
		{"regexp_extract('abc', 'x(y)?', 1)", "", "string"},
		{"regexp_extract('abc', 'a(x)?', 1)", "", "string"},
		{"regexp_extract('id=42;', 'id=(\\\\d+)', 1)", "42", "string"},
		{"rlike('abc', '^a.c$')", "true", "boolean"},
		{"split_part('a,b,,c', ',', 3)", "", "string"},
		{"split_part('a,b,c', '', 1)", "a,b,c", "string"},
		{"split_part('a,b,c', ',', -1)", "c", "string"},
		{"split_part('a,b,c', ',', 5)", "", "string"},
		{"ltrim('  a  ')", "a  ", "string"},
		{"rtrim('  a  ')", "  a", "string"},
		{"lpad('abc', 5, '')", "abc", "string"},
		{"lpad('abc', -1, 'x')", "", "string"},
		{"lpad('abc', 8, 'xy')", "xyxyxabc", "string"},
		{"rpad('abc', 2)", "ab", "string"},
		{"rpad('日', 3, 'ö')", "日öö", "string"},
		{"initcap('hello wORLD  x-y')", "Hello World  X-y", "string"},
		{"reverse('héllo')", "olléh", "string"},
		{"upper('straße ﬁx')", "STRASSE FIX", "string"},
		{"lower('ΟΔΟΣ ΣΑ')", "οδος σα", "string"},
		{"regexp_replace('😀o😀o', 'o', '0', 4)", "😀o😀0", "string"},
		{"instr('abc', '')", "1", "integer"},
		{"instr('héllo', 'l')", "3", "integer"},
		{"locate('', 'abc', 10)", "1", "integer"},
		{"locate('b', 'abc', NULL)", "0", "integer"},
		{"locate('b', 'abcb', 3)", "4", "integer"},
		{"position('c', 'abc')", "3", "integer"},
		{"repeat('ab', -1)", "", "string"},
		{"repeat('ab', 3)", "ababab", "string"},
		{"translate('aabbcc', 'abca', 'xy')", "xxyy", "string"},
		{"startswith('abc', '')", "true", "boolean"},
		{"endswith('abc', 'bc')", "true", "boolean"},
		{"contains('abc', NULL)", "NULL", "boolean"},
		// choice
		{"nullif(1, 1L)", "NULL", "integer"},
		{"nullif(2, 1L)", "2", "integer"},
		{"nvl2(NULL, 1, 'x')", "x", "string"},
		{"if(NULL, 1, 2.5)", "2.5", "decimal(11,1)"},
		{"greatest(1, 2.5, NULL)", "2.5", "decimal(11,1)"},
		{"least(CAST_NAN, 1D)", "1.0", "double"},
		{"greatest(CAST_NAN, 1D)", "NaN", "double"},
		{"ifnull(NULL, 'x')", "x", "string"},
		// numbers
		{"round(2.675D, 2)", "2.68", "double"},
		{"round(15, -1)", "20", "integer"},
		{"round(2147483647, -1)", "-2147483646", "integer"},
		{"round(1.5D)", "2.0", "double"},
		{"bround(2.5D)", "2.0", "double"},
		{"round(-2.5D)", "-3.0", "double"},
		{"round(-0.4D)", "0.0", "double"},
		{"bround(12.345, 2)", "12.34", "decimal(5,2)"},
		{"round(12.345, 1)", "12.3", "decimal(4,1)"},
		{"round(12.345, 5)", "12.345", "decimal(6,3)"},
		{"round(12.345, -1)", "10", "decimal(3,0)"},
		{"round(99.95, 1)", "100.0", "decimal(4,1)"},
		{"round(-2.50)", "-3", "decimal(2,0)"},
		{"bround(-2.50)", "-2", "decimal(2,0)"},
		{"bround(-3.50)", "-4", "decimal(2,0)"},
		{"round(-15.5, -1)", "-20", "decimal(3,0)"},
		{"round(-12.345, -1)", "-10", "decimal(3,0)"},
		{"round(12345678901234567890.5)", "12345678901234567891", "decimal(21,0)"},
		{"round(NULL)", "NULL", "double"},
		{"round('2.5')", "3.0", "double"},
		{"floor(12.345)", "12", "decimal(3,0)"},
		{"floor(-1.5D)", "-2", "long"},
		{"ceil(1e30D)", "9223372036854775807", "long"},
		{"floor(5)", "5", "long"},
		{"ceil(-0.5)", "0", "decimal(1,0)"},
		{"pmod(-7, 3)", "2", "integer"},
		{"pmod(-7.5D, 2)", "0.5", "double"},
		{"pmod(-7.0, 3)", "2.0", "decimal(2,1)"},
		{"mod(-7, 3)", "-1", "integer"},
		{"signum(5)", "1.0", "double"},
		{"sign(-2.5)", "-1.0", "double"},
		{"log(2, 8)", "3.0", "double"},
		{"log(0)", "NULL", "double"},
		{"ln(-1)", "NULL", "double"},
		{"log10(100)", "2.0", "double"},
		{"pow(1, CAST_NAN)", "NaN", "double"},
		{"pow(2, 10)", "1024.0", "double"},
		{"sqrt(-1)", "NaN", "double"},
		{"exp(710)", "Infinity", "double"},
		{"abs(-2147483648)", "-2147483648", "integer"},
		// dates and timestamps
		{"date_trunc('week', TIMESTAMP '2024-03-07 10:11:12')", "2024-03-04 00:00:00", "timestamp"},
		{"date_trunc('quarter', TIMESTAMP '2024-05-07 10:11:12')", "2024-04-01 00:00:00", "timestamp"},
		{"date_trunc('HOUR', TIMESTAMP '2024-05-07 10:11:12')", "2024-05-07 10:00:00", "timestamp"},
		{"date_trunc('bogus', TIMESTAMP '2024-05-07 10:11:12')", "NULL", "timestamp"},
		{"trunc(DATE '2024-05-07', 'week')", "2024-05-06", "date"},
		{"trunc(DATE '2024-05-07', 'dd')", "NULL", "date"},
		{"weekofyear(DATE '2021-01-01')", "53", "integer"},
		{"dayofweek(DATE '2024-03-03')", "1", "integer"},
		{"second(TIMESTAMP '2024-03-03 10:11:12.9')", "12", "integer"},
		{"hour(TIMESTAMP '1969-12-31 23:30:00')", "23", "integer"},
		{"unix_timestamp('2024-03-03 10:11:12')", "1709460672", "long"},
		{"unix_timestamp('2024-03-03', 'yyyy-MM-dd')", "1709424000", "long"},
		{"from_unixtime(0)", "1970-01-01 00:00:00", "string"},
		{"to_date('2024-03-03 10:11')", "2024-03-03", "date"},
		{"to_date('03/04/2024', 'dd/MM/yyyy')", "2024-04-03", "date"},
		{"to_date('31/04/2024', 'dd/MM/yyyy')", "NULL", "date"},
		{"to_timestamp('2024-03-03T10:11:12Z')", "2024-03-03 10:11:12", "timestamp"},
		{"to_timestamp('2024-03-03T10:11:12+0200', \"yyyy-MM-dd'T'HH:mm:ssZ\")", "2024-03-03 08:11:12", "timestamp"},
		{"to_date(\"d'2024-03-05\", \"'d'''yyyy-MM-dd\")", "2024-03-05", "date"}, // two quotes inside quoted text: one quote
		{"to_date(\"'2024-03-05\", \"''yyyy-MM-dd\")", "2024-03-05", "date"},     // two quotes alone: one quote
		{"timestamp_seconds(1.5D)", "1970-01-01 00:00:01.5", "timestamp"},
		{"timestamp_millis(9223372036854775807)", "NULL", "timestamp"},
		{"date_add('2024-01-01', 3)", "2024-01-04", "date"},
		{"date_sub(DATE '2024-03-01', 1)", "2024-02-29", "date"},
		{"datediff('2024-01-10', '2024-01-01')", "9", "integer"},
		{"unix_micros(TIMESTAMP '1970-01-01 00:00:01')", "1000000", "long"},
		// CASE and CAST
		{"CASE WHEN 1 > 2 THEN 'a' WHEN NULL THEN 'b' ELSE 'c' END", "c", "string"},
		{"CASE 2 WHEN 1 THEN 1.5 WHEN 2 THEN 2 END", "2.0", "decimal(11,1)"},
		{"CASE 3 WHEN 1 THEN 'x' END", "NULL", "string"},
		{"CAST(1e20D AS int)", "2147483647", "integer"},
		{"CAST(-2.7D AS bigint)", "-2", "long"},
		{"CAST(2147483648L AS int)", "-2147483648", "integer"},
		{"CAST(' 12.345 ' AS decimal(5,2))", "12.35", "decimal(5,2)"},
		{"CAST('1e3' AS decimal(6,1))", "1000.0", "decimal(6,1)"},
		{"CAST('123456' AS decimal(5,2))", "NULL", "decimal(5,2)"},
		{"CAST(TIMESTAMP '2024-03-03 23:59:59' AS date)", "2024-03-03", "date"},
		{"CAST(0.1D AS decimal(3,2))", "0.10", "decimal(3,2)"},
		{"CAST(12.7 AS int)", "12", "integer"},
		{"CAST(' . ' AS int)", "0", "integer"},
		{"CAST('-' AS bigint)", "NULL", "long"},
		// JSON
		{`get_json_object('{"a":null}', '$.a')`, "NULL", "string"},
		{`get_json_object('{"a":1.10}', '$.a')`, "1.1", "string"},
		{`get_json_object('{"a":1e2}', '$.a')`, "100.0", "string"},
		{`get_json_object('{"a":{"b": [1, "x", true]}}', '$.a')`, `{"b":[1,"x",true]}`, "string"},
		{`get_json_object('{"a":"h\\u00e9\\"i"}', '$.a')`, `hé"i`, "string"},
		{`get_json_object('{"a":[{"b":1},{"b":2}]}', '$.a[1].b')`, "2", "string"},
		{`get_json_object('{"a":1} xx', '$.a')`, "1", "string"},
		{`get_json_object('{"a b":1}', "$['a b']")`, "1", "string"},
		{`get_json_object('[1,2]', '$[0]')`, "1", "string"},
		{`get_json_object('{"a":12345678901234567890}', '$.a')`, "12345678901234567890", "string"},
		{`get_json_object('{"a":-0}', '$.a')`, "0", "string"},
		{`get_json_object('{"a":"x"}', '$')`, `{"a":"x"}`, "string"},
		{`get_json_object('{"a":"x"}', 'a')`, "NULL", "string"},
		{`get_json_object('{"a":1,}', '$.a')`, "NULL", "string"},
	}
	for _, c := range cases {
		expr := strings.ReplaceAll(c.expr, "CAST_NAN", "'NaN' + 0D")
		got, typ := evalValue(t, b, expr)
		if first, _, _ := strings.Cut(got, "|"); first != c.want || typ != c.typ {
			t.Errorf("%s = %q (%s), want %q (%s)", c.expr, first, typ, c.want, c.typ)
		}
	}
}

// Over the test batch's columns: NULL in, NULL out, and per-row values.
func TestSQLFunctionColumns(t *testing.T) {
	b := sqlTestBatch(t)
	cases := []struct{ expr, want string }{
		{"upper(substr(name, 1, 2))", "AL|BO|NULL|  |ÜN"},
		{"length(concat(name, st.code))", "7|6|NULL|NULL|9"},
		{"round(amount * 0.92, 2)", "9.66|-0.92|NULL|NaN|0.0"},
		{"round(price, 1)", "12.5|0.0|NULL|100000000.0|0.0"},
		{"floor(price)", "12|0|NULL|99999999|-1"},
		{"pmod(qty, 5)", "3|0|NULL|2|2"},
		{"coalesce(name, 'none')", "Alice|bob |none|  x_y%z |Ünïcode"},
		{"nullif(qty, 0)", "3|NULL|NULL|2147483647|-2147483648"},
		{"if(ok, id, -id)", "1|-2|-3|4|5"},
		{"greatest(qty, id)", "3|2|3|2147483647|-5"},
		{"year(ts)", "2024|2024|NULL|2024|1970"},
		{"date_add(d, qty % 1000)", "2024-03-04|2024-02-29|NULL|2025-12-09|1968-03-24"},
		{"dayofweek(d)", "6|5|NULL|7|5"},
		{"initcap(name)", "Alice|Bob |NULL|  X_y%z |Ünïcode"},
		{"reverse(name)", "ecilA| bob|NULL| z%y_x  |edocïnÜ"},
		{"locate('c', name, qty)", "4|0|0|0|0"},
	}
	for _, c := range cases {
		if got, _ := evalValue(t, b, c.expr); got != c.want {
			t.Errorf("%s = %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestSQLFunctionErrors(t *testing.T) {
	b := sqlTestBatch(t)
	cases := []struct{ expr, want string }{
		{"lenght(name)", "did you mean length?"},
		{"substrin(name, 1)", "substr"},
		{"current_date()", "a deterministic function"},
		{"rand()", "a deterministic function"},
		{"unix_timestamp()", "current time"},
		{"substr(name)", "2 to 3 argument(s) for substr"},
		{"regexp_replace(name, '(', 'x')", "a regular expression the engine supports"},
		{"regexp_replace(name, 'a', '$2')", "no group 2"},
		{"regexp_extract(name, 'a(b)', 2)", "a group index from 0 to 1"},
		{"regexp_replace(name, st.code, 'x')", "a constant regular expression"},
		{"round(amount, qty)", "a constant scale of round"},
		{"split_part(name, ',', 0)", "a part number other than 0"},
		{"date_add(d, id)", "an int, smallint or tinyint number of days"},
		{"greatest(name, 1)", "arguments of one type"},
		{"to_date(name, 'yyyy-MM-dd EEE')", "not supported by the engine"},
		{"get_json_object(name, '$.a[*]')", "without wildcards"},
		{"substr(name, 1.5)", "an integer argument of substr"},
		{"if(name, 1, 2)", "a boolean condition of if"},
		{"abs(ts)", "a numeric argument of abs"},
		{"CASE WHEN 1 THEN 2 END", "a boolean WHEN condition"},
		{"CASE WHEN ok THEN 1 ELSE d END", "mixes with int in CASE"},
		{"CASE ok END", "WHEN in CASE"},
		{"CAST(name AS float)", "a type: int, bigint"},
		{"CAST(d AS int)", "a cast the engine supports"},
		{"CAST(name AS decimal(40,1))", "a decimal precision from 1 to 38"},
	}
	for _, c := range cases {
		e, err := ParseSQL(c.expr)
		if err == nil {
			_, err = CompileSQLValue(context.Background(), e, b.Schema)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want one containing %q", c.expr, err, c.want)
			continue
		}
		if !errors.Is(err, ErrSQLSyntax) && !errors.Is(err, ErrBadPredicate) {
			t.Errorf("%s: %v is neither a syntax nor a bind error", c.expr, err)
		}
	}
}

// A program that reads current_timestamp() says so: computed columns must not.
func TestSQLDeterministic(t *testing.T) {
	b := sqlTestBatch(t)
	for expr, want := range map[string]bool{"ts < current_timestamp()": false, "upper(name)": true, "now()": false} {
		e, err := ParseSQL(expr)
		if err != nil {
			t.Fatal(err)
		}
		p, err := CompileSQLValue(context.Background(), e, b.Schema)
		if err != nil {
			t.Fatal(err)
		}
		if p.Deterministic() != want {
			t.Errorf("%s: Deterministic() = %v, want %v", expr, !want, want)
		}
	}
	_ = time.Now
}

// BenchmarkSQLFunctions evaluates one function over a 4096-row batch; upper(name) and
// amount > 0 (nodes older than the function library) are the baselines to compare ns/op with.
func BenchmarkSQLFunctions(b *testing.B) {
	one := sqlTestBatch(b)
	big, err := pq.NewBatch(one.Schema)
	if err != nil {
		b.Fatal(err)
	}
	for range 4096 / one.Len() {
		for r := range one.Len() {
			big.AppendRow(one, r)
		}
	}
	for _, expr := range []string{"amount > 0", "upper(name)", "substr(name, 2, 3)", "concat_ws('-', name, st.code)",
		"round(amount, 2)", "round(price, 1)", "regexp_replace(name, '[aeiou]', '*')", "date_trunc('month', ts)",
		"get_json_object(concat('{\"a\":\"', name, '\"}'), '$.a')", "CASE WHEN qty > 0 THEN 'p' ELSE 'n' END"} {
		e, err := ParseSQL(expr)
		if err != nil {
			b.Fatal(err)
		}
		p, err := CompileSQLValue(context.Background(), e, big.Schema)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			for range b.N {
				if _, err := p.EvalColumn(big, sqlTestNow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
