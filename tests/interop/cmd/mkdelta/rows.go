package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// errBadRow reports an input line that does not fit the table schema.
var errBadRow = errors.New("mkdelta: bad row")

// maxLine bounds one input line, so a runaway input fails cleanly instead of growing forever.
const maxLine = 16 << 20

// readRows reads JSON objects, one a line, in the canonical form of tests/interop/interop_rows.py
// (the `medallion table scan --format jsonl` contract) into one batch of the schema. A column
// missing from an object is null; an unknown key is an error, as is any value that does not fit
// its column. Errors name the source, the line and the column.
func readRows(r io.Reader, source string, schema *txlog.StructType) (*pq.Batch, error) {
	b, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := appendRow(b, text); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("mkdelta: reading %s after line %d: %w", source, line, err)
	}
	return b, nil
}

func appendRow(b *pq.Batch, text []byte) error {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return fmt.Errorf("%w: not a JSON object: %v", errBadRow, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: text after the JSON object", errBadRow)
	}
	if obj == nil {
		return fmt.Errorf("%w: null instead of an object", errBadRow)
	}
	known := make(map[string]bool, len(b.Schema.Fields))
	values := make([]any, len(b.Schema.Fields))
	for i, f := range b.Schema.Fields {
		known[f.Name] = true
		v, err := goValue(obj[f.Name], f.Type, f.Name)
		if err != nil {
			return err
		}
		values[i] = v
	}
	for k := range obj {
		if !known[k] {
			return fmt.Errorf("%w: unknown column %q", errBadRow, k)
		}
	}
	// Validate every value before appending any, so a bad row leaves no half-appended columns.
	for i, v := range values {
		if err := b.Columns[i].AppendValue(v); err != nil {
			return fmt.Errorf("%w: column %s: %v", errBadRow, b.Schema.Fields[i].Name, err)
		}
	}
	return nil
}

// goValue converts one canonical JSON value into the Go form pq.Column.AppendValue takes.
func goValue(v any, t txlog.DataType, where string) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func(want string) error {
		return fmt.Errorf("%w: column %s: %s expected, got %v", errBadRow, where, want, v)
	}
	switch t := t.(type) {
	case txlog.DecimalType:
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		}
		return nil, bad("decimal")
	case *txlog.StructType:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, bad("object")
		}
		fields := make([]pq.Field, len(t.Fields))
		for i, f := range t.Fields {
			fv, err := goValue(obj[f.Name], f.Type, where+"."+f.Name)
			if err != nil {
				return nil, err
			}
			fields[i] = pq.Field{Name: f.Name, Value: fv}
		}
		if len(obj) > len(t.Fields) {
			return nil, bad(fmt.Sprintf("object with fields of %s", where))
		}
		return fields, nil
	case txlog.ArrayType:
		list, ok := v.([]any)
		if !ok {
			return nil, bad("list")
		}
		out := make([]any, len(list))
		for i, e := range list {
			ev, err := goValue(e, t.ElementType, fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case txlog.MapType:
		// Canonical maps are lists of [key, value] pairs; objects are accepted for string keys.
		var kvs []pq.KV
		switch x := v.(type) {
		case []any:
			for i, p := range x {
				pair, ok := p.([]any)
				if !ok || len(pair) != 2 {
					return nil, bad("list of [key, value] pairs")
				}
				k, err := goValue(pair[0], t.KeyType, fmt.Sprintf("%s key %d", where, i))
				if err != nil {
					return nil, err
				}
				if k == nil {
					return nil, fmt.Errorf("%w: column %s: null map key", errBadRow, where)
				}
				val, err := goValue(pair[1], t.ValueType, fmt.Sprintf("%s[%v]", where, k))
				if err != nil {
					return nil, err
				}
				kvs = append(kvs, pq.KV{Key: k, Value: val})
			}
		case map[string]any:
			for k, e := range x {
				kv, err := goValue(k, t.KeyType, where+" key")
				if err != nil {
					return nil, err
				}
				val, err := goValue(e, t.ValueType, fmt.Sprintf("%s[%q]", where, k))
				if err != nil {
					return nil, err
				}
				kvs = append(kvs, pq.KV{Key: kv, Value: val})
			}
		default:
			return nil, bad("map")
		}
		return kvs, nil
	case txlog.PrimitiveType:
		return primitive(v, t.Name, bad)
	}
	return nil, fmt.Errorf("%w: column %s: unsupported type %T", errBadRow, where, t)
}

func primitive(v any, name string, bad func(string) error) (any, error) {
	switch name {
	case txlog.TypeLong, txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad(name)
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			return nil, bad(name)
		}
		return i, nil
	case txlog.TypeDouble, txlog.TypeFloat:
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad(name)
		}
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil {
			return nil, bad(name)
		}
		if name == txlog.TypeFloat {
			if math.Abs(f) > math.MaxFloat32 {
				return nil, bad("float within float32 range")
			}
			return float32(f), nil
		}
		return f, nil
	case txlog.TypeBoolean:
		if x, ok := v.(bool); ok {
			return x, nil
		}
		return nil, bad(name)
	case txlog.TypeString:
		if x, ok := v.(string); ok {
			return x, nil
		}
		return nil, bad(name)
	case txlog.TypeBinary:
		x, ok := v.(string)
		if !ok {
			return nil, bad("base64 string")
		}
		raw, err := base64.StdEncoding.DecodeString(x)
		if err != nil {
			return nil, bad("base64 string")
		}
		return raw, nil
	case txlog.TypeDate:
		x, ok := v.(string)
		if !ok {
			return nil, bad("YYYY-MM-DD")
		}
		d, err := time.Parse("2006-01-02", x)
		if err != nil {
			return nil, bad("YYYY-MM-DD")
		}
		return d, nil
	case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
		x, ok := v.(string)
		if !ok {
			return nil, bad(name)
		}
		layout := "2006-01-02T15:04:05.999999Z"
		if name == txlog.TypeTimestampNTZ {
			layout = "2006-01-02T15:04:05.999999"
		}
		ts, err := time.Parse(layout, x)
		if err != nil {
			return nil, bad(name + " as " + layout)
		}
		return ts.UTC(), nil
	}
	return nil, bad("a supported primitive, not " + name)
}
