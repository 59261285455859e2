package pq

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/txlog"
)

// Decimal is a decimal value with its scale, as Column.Value returns it.
type Decimal struct {
	Unscaled Decimal128
	Scale    int
}

// String renders the plain decimal text.
func (d Decimal) String() string { return FormatDecimal(d.Unscaled, d.Scale) }

// Field is one field of a struct value, as Column.Value returns it.
type Field struct {
	Name  string
	Value any
}

// KV is one entry of a map value.
type KV struct {
	Key, Value any
}

// Value returns row i as a Go value: nil for null; int64 (long), int32 (integer), int16
// (short), int8 (byte), float64, float32, bool, string, []byte (binary), time.Time (date,
// timestamp and timestamp_ntz, in UTC), Decimal, []Field (struct), []any (array), []KV (map).
// It allocates: use the typed slices on hot paths.
func (c *Column) Value(i int) any {
	if c.Kind == KindNull || c.IsNull(i) {
		return nil
	}
	switch t := c.Type.(type) {
	case txlog.DecimalType:
		return Decimal{Unscaled: c.Decimal[i], Scale: t.Scale}
	case *txlog.StructType:
		out := make([]Field, len(t.Fields))
		for k, f := range t.Fields {
			out[k] = Field{Name: f.Name, Value: c.Children[k].Value(i)}
		}
		return out
	case txlog.ArrayType:
		s, e := c.ListRange(i)
		out := make([]any, 0, e-s)
		for j := s; j < e; j++ {
			out = append(out, c.Children[0].Value(j))
		}
		return out
	case txlog.MapType:
		s, e := c.ListRange(i)
		out := make([]KV, 0, e-s)
		for j := s; j < e; j++ {
			out = append(out, KV{c.Children[0].Value(j), c.Children[1].Value(j)})
		}
		return out
	case txlog.PrimitiveType:
		switch t.Name {
		case txlog.TypeLong:
			return c.Int64[i]
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			return time.UnixMicro(c.Int64[i]).UTC()
		case txlog.TypeInteger:
			return c.Int32[i]
		case txlog.TypeShort:
			return int16(c.Int32[i])
		case txlog.TypeByte:
			return int8(c.Int32[i])
		case txlog.TypeDate:
			return time.Unix(int64(c.Int32[i])*86400, 0).UTC()
		case txlog.TypeDouble:
			return c.Float64[i]
		case txlog.TypeFloat:
			return c.Float32[i]
		case txlog.TypeBoolean:
			return c.Bool[i]
		case txlog.TypeString, txlog.TypeVariant:
			return c.StringAt(i)
		case txlog.TypeBinary:
			return append([]byte{}, c.BytesAt(i)...)
		}
	}
	return nil
}

// Row returns row i of the batch as values in schema order (see Column.Value).
func (b *Batch) Row(i int) []any {
	out := make([]any, len(b.Columns))
	for k, c := range b.Columns {
		out[k] = c.Value(i)
	}
	return out
}

// AppendValue appends a Go value (the forms Column.Value returns, plus int, uint and
// int64-for-smaller-integers conveniences) to c, checking it against the column type.
func (c *Column) AppendValue(v any) error {
	if v == nil {
		c.AppendNull()
		return nil
	}
	switch t := c.Type.(type) {
	case txlog.DecimalType:
		return c.appendDecimalValue(t, v)
	case *txlog.StructType:
		fields, ok := v.([]Field)
		if !ok || len(fields) != len(t.Fields) {
			return c.mismatch(v)
		}
		for k, f := range fields {
			if err := c.Children[k].AppendValue(f.Value); err != nil {
				return err
			}
		}
		c.AppendStruct()
		return nil
	case txlog.ArrayType:
		elems, ok := v.([]any)
		if !ok {
			return c.mismatch(v)
		}
		for _, e := range elems {
			if err := c.Children[0].AppendValue(e); err != nil {
				return err
			}
		}
		c.AppendList()
		return nil
	case txlog.MapType:
		kvs, ok := v.([]KV)
		if !ok {
			return c.mismatch(v)
		}
		for _, kv := range kvs {
			if err := c.Children[0].AppendValue(kv.Key); err != nil {
				return err
			}
			if err := c.Children[1].AppendValue(kv.Value); err != nil {
				return err
			}
		}
		c.AppendList()
		return nil
	case txlog.PrimitiveType:
		return c.appendPrimitiveValue(t, v)
	}
	return c.mismatch(v)
}

// mismatch is the error for a value AppendValue cannot store in c.
func (c *Column) mismatch(v any) error {
	return fmt.Errorf("%w: %T value %v cannot be stored in a %s column", ErrSchemaMismatch, v, v, TypeString(c.Type))
}

// IntValue is v as an int64 when v has one of Go's signed integer types: the integers
// AppendValue takes, and sqlexpr's literals.
func IntValue(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	}
	return 0, false
}

// appendDecimalValue is AppendValue for a decimal column.
func (c *Column) appendDecimalValue(t txlog.DecimalType, v any) error {
	switch x := v.(type) {
	case Decimal:
		if x.Scale != t.Scale {
			r := DecimalRat(x.Unscaled, x.Scale)
			d, err := ParseDecimal(r.FloatString(t.Scale+1), t.Scale)
			if err != nil {
				return c.mismatch(v)
			}
			c.AppendDecimal(d)
			return nil
		}
		c.AppendDecimal(x.Unscaled)
		return nil
	case string:
		d, err := ParseDecimal(x, t.Scale)
		if err != nil {
			return err
		}
		c.AppendDecimal(d)
		return nil
	}
	if n, ok := IntValue(v); ok {
		d, err := ParseDecimal(strconv.FormatInt(n, 10), t.Scale)
		if err != nil {
			return err
		}
		c.AppendDecimal(d)
		return nil
	}
	return c.mismatch(v)
}

// appendPrimitiveValue is AppendValue for a primitive column.
func (c *Column) appendPrimitiveValue(t txlog.PrimitiveType, v any) error {
	switch t.Name {
	case txlog.TypeLong:
		if n, ok := IntValue(v); ok {
			c.AppendInt64(n)
			return nil
		}
	case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
		switch x := v.(type) {
		case time.Time:
			c.AppendInt64(x.UnixMicro())
			return nil
		case int64:
			c.AppendInt64(x)
			return nil
		}
	case txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte:
		if n, ok := IntValue(v); ok {
			lim := map[string]int64{txlog.TypeInteger: math.MaxInt32, txlog.TypeShort: math.MaxInt16, txlog.TypeByte: math.MaxInt8}[t.Name]
			if n > lim || n < -lim-1 {
				return fmt.Errorf("%w: %d overflows %s", ErrSchemaMismatch, n, t.Name)
			}
			c.AppendInt32(int32(n))
			return nil
		}
	case txlog.TypeDate:
		switch x := v.(type) {
		case time.Time:
			c.AppendInt32(int32(FloorDiv(x.Unix(), 86400)))
			return nil
		case int32:
			c.AppendInt32(x)
			return nil
		}
	case txlog.TypeDouble:
		switch x := v.(type) {
		case float64:
			c.AppendFloat64(x)
			return nil
		case float32:
			c.AppendFloat64(float64(x))
			return nil
		}
		if n, ok := IntValue(v); ok {
			c.AppendFloat64(float64(n))
			return nil
		}
	case txlog.TypeFloat:
		if x, ok := v.(float32); ok {
			c.AppendFloat32(x)
			return nil
		}
	case txlog.TypeBoolean:
		if x, ok := v.(bool); ok {
			c.AppendBool(x)
			return nil
		}
	case txlog.TypeString, txlog.TypeBinary:
		switch x := v.(type) {
		case string:
			c.AppendString(x)
			return nil
		case []byte:
			c.AppendBytes(x)
			return nil
		}
	}
	return c.mismatch(v)
}

// compareTo orders x and b when b is a T too.
func compareTo[T cmp.Ordered](x T, b any) (int, bool) {
	if y, ok := b.(T); ok {
		return cmp.Compare(x, y), true
	}
	return 0, false
}

// CompareValues orders two non-null values of the same primitive or decimal column, in the
// forms Column.Value returns (-1, 0 or 1); ok is false for other types.
func CompareValues(a, b any) (c int, ok bool) {
	switch x := a.(type) {
	case int64:
		return compareTo(x, b)
	case int32:
		return compareTo(x, b)
	case int16:
		return compareTo(x, b)
	case int8:
		return compareTo(x, b)
	case float64:
		return compareTo(x, b)
	case float32:
		return compareTo(x, b)
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), true
		}
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, true
			case !x:
				return -1, true
			}
			return 1, true
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), true
		}
	case Decimal:
		y, ok := b.(Decimal)
		if !ok {
			return 0, false
		}
		return DecimalRat(x.Unscaled, x.Scale).Cmp(DecimalRat(y.Unscaled, y.Scale)), true
	}
	return 0, false
}

func DecimalRat(d Decimal128, scale int) *big.Rat {
	return new(big.Rat).SetFrac(d.BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
}
