package pq

import (
	"encoding/base64"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/medallion-lake/medallion/txlog"
)

// FormatTimestamp renders microseconds since the epoch as RFC 3339 in UTC, with six fractional
// digits only when the microseconds are not zero ("2024-03-01T08:00:00Z",
// "2024-03-01T08:00:00.000123Z"). ntz leaves the zone out (a wall-clock time).
func FormatTimestamp(us int64, ntz bool) string {
	t := time.UnixMicro(us).UTC()
	layout := "2006-01-02T15:04:05"
	if t.Nanosecond() != 0 {
		layout += ".000000"
	}
	if !ntz {
		layout += "Z07:00"
	}
	return t.Format(layout)
}

// AppendJSONRow appends row i of b as one JSON object whose keys follow the schema order:
// null as null, timestamps per FormatTimestamp, dates as "yyyy-mm-dd", decimals as exact
// numbers, binary as base64, structs as objects, arrays as arrays, maps with string keys as
// objects (others as arrays of {"key","value"}), NaN and infinities as strings.
func AppendJSONRow(dst []byte, b *Batch, i int) []byte {
	return appendJSONObject(dst, b.Schema.Fields, b.Columns, i)
}

// appendJSONObject appends row i of the columns cols, named by fields, as a JSON object.
func appendJSONObject(dst []byte, fields []txlog.StructField, cols []*Column, i int) []byte {
	dst = append(dst, '{')
	for k, f := range fields {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.Name)
		dst = append(dst, ':')
		dst = appendJSONValue(dst, cols[k], i)
	}
	return append(dst, '}')
}

// AppendJSONValue appends row i of one column as JSON, rendered as AppendJSONRow does.
func AppendJSONValue(dst []byte, c *Column, i int) []byte { return appendJSONValue(dst, c, i) }

func appendJSONValue(dst []byte, c *Column, i int) []byte {
	if c.Kind == KindNull || c.IsNull(i) {
		return append(dst, "null"...)
	}
	switch t := c.Type.(type) {
	case txlog.DecimalType:
		return append(dst, FormatDecimal(c.Decimal[i], t.Scale)...)
	case *txlog.StructType:
		return appendJSONObject(dst, t.Fields, c.Children, i)
	case txlog.ArrayType:
		s, e := c.ListRange(i)
		dst = append(dst, '[')
		for j := s; j < e; j++ {
			if j > s {
				dst = append(dst, ',')
			}
			dst = appendJSONValue(dst, c.Children[0], j)
		}
		return append(dst, ']')
	case txlog.MapType:
		s, e := c.ListRange(i)
		stringKeys := t.KeyType.TypeName() == txlog.TypeString
		if stringKeys {
			dst = append(dst, '{')
		} else {
			dst = append(dst, '[')
		}
		for j := s; j < e; j++ {
			if j > s {
				dst = append(dst, ',')
			}
			if stringKeys {
				dst = appendJSONString(dst, c.Children[0].StringAt(j))
				dst = append(dst, ':')
				dst = appendJSONValue(dst, c.Children[1], j)
				continue
			}
			dst = append(dst, `{"key":`...)
			dst = appendJSONValue(dst, c.Children[0], j)
			dst = append(dst, `,"value":`...)
			dst = appendJSONValue(dst, c.Children[1], j)
			dst = append(dst, '}')
		}
		if stringKeys {
			return append(dst, '}')
		}
		return append(dst, ']')
	case txlog.PrimitiveType:
		switch t.Name {
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			return appendJSONString(dst, FormatTimestamp(c.Int64[i], t.Name == txlog.TypeTimestampNTZ))
		case txlog.TypeLong:
			return strconv.AppendInt(dst, c.Int64[i], 10)
		case txlog.TypeDate:
			return appendJSONString(dst, time.Unix(int64(c.Int32[i])*86400, 0).UTC().Format("2006-01-02"))
		case txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte:
			return strconv.AppendInt(dst, int64(c.Int32[i]), 10)
		case txlog.TypeDouble:
			return appendJSONFloat(dst, c.Float64[i], 64)
		case txlog.TypeFloat:
			return appendJSONFloat(dst, float64(c.Float32[i]), 32)
		case txlog.TypeBoolean:
			return strconv.AppendBool(dst, c.Bool[i])
		case txlog.TypeString:
			return appendJSONBytes(dst, c.BytesAt(i))
		case txlog.TypeVariant:
			return append(dst, c.BytesAt(i)...) // already JSON text
		case txlog.TypeBinary:
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, c.BytesAt(i))
			return append(dst, '"')
		}
	}
	return append(dst, "null"...)
}

func appendJSONFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}

func appendJSONString(dst []byte, s string) []byte { return appendJSONBytes(dst, []byte(s)) }

// AppendJSONString appends s as a JSON string literal; invalid UTF-8 becomes U+FFFD.
func AppendJSONString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// appendJSONBytes quotes text as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendJSONBytes(dst []byte, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for len(s) > 0 {
		c := s[0]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			default:
				dst = append(dst, c)
			}
			s = s[1:]
			continue
		}
		r, size := utf8.DecodeRune(s)
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return append(dst, '"')
}
