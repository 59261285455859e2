// Command sqleval evaluates SQL expressions of medallion's expectation language (sqlexpr.ParseSQL,
// evaluated column by column by sqlexpr.Program) over rows given as JSON, so that the interop
// suite (tests/interop/test_expectations_sql.py) can compare each answer with Spark SQL's on
// the same rows. It is a test tool, not part of the medallion CLI.
//
//	sqleval < SPEC.json > RESULT.json
//
// SPEC is {"schema": DELTA_SCHEMA_JSON, "rows": [ROW, ...], "exprs": [SQL, ...], "now": RFC3339}:
// each ROW an object keyed by column name (a missing key or null is NULL; timestamps RFC 3339,
// dates yyyy-mm-dd, decimals as strings, doubles as numbers or "NaN", "Infinity",
// "-Infinity"; structs as objects). "now" is current_timestamp().
//
// RESULT is {"results": [[true|false|null per row] or null, ...], "errors": [null or message,
// ...]}: one entry per expression, an error when it does not parse or bind.
//
// SPEC may also hold "values": [SQL, ...], expressions of any type (computed columns,
// sqlexpr.CompileSQLValue): RESULT then has "values" (per expression, per row the value as
// Spark's CAST(... AS STRING) writes it, or null), "value_types" (Spark's typeof names) and
// "value_errors".
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

type spec struct {
	Schema json.RawMessage   `json:"schema"`
	Rows   []json.RawMessage `json:"rows"`
	Exprs  []string          `json:"exprs"`
	Values []string          `json:"values"`
	Now    time.Time         `json:"now"`
}

type result struct {
	Results     [][]*bool   `json:"results"`
	Errors      []*string   `json:"errors"`
	Values      [][]*string `json:"values,omitempty"`
	ValueTypes  []string    `json:"value_types,omitempty"`
	ValueErrors []*string   `json:"value_errors,omitempty"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sqleval:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	var s spec
	if err := json.NewDecoder(in).Decode(&s); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	schema, err := txlog.ParseSchema(string(s.Schema))
	if err != nil {
		return fmt.Errorf("spec schema: %w", err)
	}
	b, err := pq.NewBatch(schema)
	if err != nil {
		return err
	}
	for i, raw := range s.Rows {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		for k, f := range schema.Fields {
			if err := appendValue(b.Columns[k], f.Type, obj[f.Name]); err != nil {
				return fmt.Errorf("row %d column %s: %w", i, f.Name, err)
			}
		}
	}
	res := result{}
	for _, text := range s.Exprs {
		e, err := sqlexpr.ParseSQL(text)
		var p *sqlexpr.Program
		if err == nil {
			p, err = sqlexpr.CompileSQL(e, schema)
		}
		if err != nil {
			msg := err.Error()
			res.Results, res.Errors = append(res.Results, nil), append(res.Errors, &msg)
			continue
		}
		val, null := p.Eval(b, s.Now)
		row := make([]*bool, len(val))
		for i, v := range val {
			if null == nil || !null[i] {
				row[i] = &v
			}
		}
		res.Results, res.Errors = append(res.Results, row), append(res.Errors, nil)
	}
	for _, text := range s.Values {
		vals, typ, err := evalValue(text, schema, b, s.Now)
		if err != nil {
			msg := err.Error()
			res.Values, res.ValueTypes, res.ValueErrors = append(res.Values, nil), append(res.ValueTypes, ""), append(res.ValueErrors, &msg)
			continue
		}
		res.Values, res.ValueTypes, res.ValueErrors = append(res.Values, vals), append(res.ValueTypes, typ), append(res.ValueErrors, nil)
	}
	return json.NewEncoder(out).Encode(res)
}

// evalValue evaluates one value expression over b: each row as Spark casts it to a string,
// and the type as Spark's typeof names it.
func evalValue(text string, schema *txlog.StructType, b *pq.Batch, now time.Time) ([]*string, string, error) {
	e, err := sqlexpr.ParseSQL(text)
	if err != nil {
		return nil, "", err
	}
	p, err := sqlexpr.CompileSQLValue(context.Background(), e, schema)
	if err != nil {
		return nil, "", err
	}
	col, err := p.EvalColumn(b, now)
	if err != nil {
		return nil, "", err
	}
	typ := col.Type.TypeName()
	switch typ {
	case txlog.TypeInteger:
		typ = "int"
	case txlog.TypeLong:
		typ = "bigint"
	}
	out := make([]*string, col.Len)
	for r := range col.Len {
		if col.IsNull(r) {
			continue
		}
		var v string
		switch col.Type.TypeName() {
		case txlog.TypeDate:
			v = time.Unix(int64(col.Int32[r])*86400, 0).UTC().Format("2006-01-02")
		case txlog.TypeTimestamp:
			v = time.UnixMicro(col.Int64[r]).UTC().Format("2006-01-02 15:04:05.999999")
		default:
			switch col.Kind {
			case pq.KindInt32:
				v = strconv.Itoa(int(col.Int32[r]))
			case pq.KindInt64:
				v = strconv.FormatInt(col.Int64[r], 10)
			case pq.KindFloat64:
				v = pq.JavaDouble(col.Float64[r], 64)
			case pq.KindDecimal:
				v = pq.FormatDecimal(col.Decimal[r], col.Type.(txlog.DecimalType).Scale)
			case pq.KindBool:
				v = strconv.FormatBool(col.Bool[r])
			case pq.KindBytes:
				v = col.StringAt(r)
			}
		}
		out[r] = &v
	}
	return out, typ, nil
}

func appendValue(c *pq.Column, t txlog.DataType, v any) error {
	if v == nil {
		c.AppendNull()
		return nil
	}
	if st, ok := t.(*txlog.StructType); ok {
		obj, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("expected an object, got %v", v)
		}
		for k, f := range st.Fields {
			if err := appendValue(c.Children[k], f.Type, obj[f.Name]); err != nil {
				return fmt.Errorf("%s: %w", f.Name, err)
			}
		}
		c.AppendStruct()
		return nil
	}
	if dt, ok := t.(txlog.DecimalType); ok {
		d, err := pq.ParseDecimal(fmt.Sprint(v), dt.Scale)
		if err != nil {
			return err
		}
		return c.AppendValue(pq.Decimal{Unscaled: d, Scale: dt.Scale})
	}
	switch t.TypeName() {
	case txlog.TypeLong, txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte:
		n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil {
			return err
		}
		return c.AppendValue(n)
	case txlog.TypeDouble, txlog.TypeFloat:
		switch x := v.(type) {
		case string:
			switch x {
			case "NaN":
				return c.AppendValue(math.NaN())
			case "Infinity":
				return c.AppendValue(math.Inf(1))
			case "-Infinity":
				return c.AppendValue(math.Inf(-1))
			}
			return fmt.Errorf("unknown double %q", x)
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				return err
			}
			return c.AppendValue(f)
		}
	case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
		ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v))
		if err != nil {
			return err
		}
		return c.AppendValue(ts)
	case txlog.TypeDate:
		d, err := time.Parse("2006-01-02", fmt.Sprint(v))
		if err != nil {
			return err
		}
		return c.AppendValue(d)
	}
	return c.AppendValue(v)
}
