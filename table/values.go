package table

import (
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
		case txlog.TypeString:
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
