package pq

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/txlog"
)

// HiveDefaultPartition is the directory name Spark uses for a null partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// SerializePartitionValue renders row i of a partition column as Delta stores it in
// partitionValues (delta-protocol.md §5): nil for null and for the empty string.
func SerializePartitionValue(t txlog.DataType, c *Column, i int) (*string, error) {
	if c.IsNull(i) {
		return nil, nil
	}
	var s string
	switch v := t.(type) {
	case txlog.DecimalType:
		s = FormatDecimal(c.Decimal[i], v.Scale)
	case txlog.PrimitiveType:
		switch v.Name {
		case txlog.TypeString, txlog.TypeBinary:
			s = string(c.BytesAt(i))
		case txlog.TypeLong:
			s = strconv.FormatInt(c.Int64[i], 10)
		case txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte:
			s = strconv.FormatInt(int64(c.Int32[i]), 10)
		case txlog.TypeDouble:
			s = JavaDouble(c.Float64[i], 64)
		case txlog.TypeFloat:
			s = JavaDouble(float64(c.Float32[i]), 32)
		case txlog.TypeBoolean:
			s = strconv.FormatBool(c.Bool[i])
		case txlog.TypeDate:
			s = time.Unix(int64(c.Int32[i])*86400, 0).UTC().Format("2006-01-02")
		case txlog.TypeTimestamp:
			s = time.UnixMicro(c.Int64[i]).UTC().Format("2006-01-02T15:04:05.000000Z")
		case txlog.TypeTimestampNTZ:
			s = time.UnixMicro(c.Int64[i]).UTC().Format("2006-01-02 15:04:05.999999")
		default:
			return nil, fmt.Errorf("table: type %s cannot be a partition column", v.Name)
		}
	default:
		return nil, fmt.Errorf("table: type %s cannot be a partition column", t.TypeName())
	}
	if s == "" {
		return nil, nil
	}
	return &s, nil
}

// javaDouble formats like Java's Double.toString / Float.toString, which Spark uses for
// partition values: "1.0", "0.001", "1.0E7", "1.0E-4".
func JavaDouble(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits) // "1E+07", "1.5E-05"
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// AppendPartitionValue parses a serialized partition value (nil = null) and appends it to c.
// Both timestamp forms are accepted; the old form without a zone is read as UTC.
func AppendPartitionValue(t txlog.DataType, c *Column, v *string) error {
	if v == nil || (*v == "" && t.TypeName() != txlog.TypeString && t.TypeName() != txlog.TypeBinary) {
		c.AppendNull()
		return nil
	}
	s := *v
	if s == "" {
		c.AppendNull()
		return nil
	}
	bad := func(err error) error {
		return fmt.Errorf("table: partition value %q is not a valid %s: %w", s, t.TypeName(), err)
	}
	switch tt := t.(type) {
	case txlog.DecimalType:
		d, err := ParseDecimal(s, tt.Scale)
		if err != nil {
			return bad(err)
		}
		c.AppendDecimal(d)
		return nil
	case txlog.PrimitiveType:
		switch tt.Name {
		case txlog.TypeString, txlog.TypeBinary:
			c.AppendString(s)
		case txlog.TypeLong:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return bad(err)
			}
			c.AppendInt64(n)
		case txlog.TypeInteger, txlog.TypeShort, txlog.TypeByte:
			bits := map[string]int{txlog.TypeInteger: 32, txlog.TypeShort: 16, txlog.TypeByte: 8}[tt.Name]
			n, err := strconv.ParseInt(s, 10, bits)
			if err != nil {
				return bad(err)
			}
			c.AppendInt32(int32(n))
		case txlog.TypeDouble:
			f, err := parseJavaDouble(s, 64)
			if err != nil {
				return bad(err)
			}
			c.AppendFloat64(f)
		case txlog.TypeFloat:
			f, err := parseJavaDouble(s, 32)
			if err != nil {
				return bad(err)
			}
			c.AppendFloat32(float32(f))
		case txlog.TypeBoolean:
			b, err := strconv.ParseBool(strings.ToLower(s))
			if err != nil {
				return bad(err)
			}
			c.AppendBool(b)
		case txlog.TypeDate:
			d, err := time.Parse("2006-01-02", s)
			if err != nil {
				return bad(err)
			}
			c.AppendInt32(int32(FloorDiv(d.Unix(), 86400)))
		case txlog.TypeTimestamp, txlog.TypeTimestampNTZ:
			us, err := ParseTimestampMicros(s)
			if err != nil {
				return bad(err)
			}
			c.AppendInt64(us)
		default:
			return fmt.Errorf("table: type %s cannot be a partition column", tt.Name)
		}
		return nil
	}
	return fmt.Errorf("table: type %s cannot be a partition column", t.TypeName())
}

func parseJavaDouble(s string, bits int) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, bits)
}

func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

var timestampLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02",
}

// ParseTimestampMicros parses the timestamp forms found in partition values and stats
// (ISO-8601 with any offset, or "yyyy-MM-dd HH:mm:ss[.ffffff]" read as UTC) into
// microseconds since the epoch.
func ParseTimestampMicros(s string) (int64, error) {
	for _, l := range timestampLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("table: %q is not a timestamp", s)
}

// escapePartitionName applies Hive's path escaping (Spark's escapePathName).
func escapePartitionName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// PartitionDir renders the Hive-style directory of a set of partition values, in the order of
// the partition columns ("day=2024-03-01/type=click/").
func PartitionDir(cols []string, values map[string]*string) string {
	var b strings.Builder
	for _, c := range cols {
		b.WriteString(escapePartitionName(c))
		b.WriteByte('=')
		if v := values[c]; v == nil {
			b.WriteString(HiveDefaultPartition)
		} else {
			b.WriteString(escapePartitionName(*v))
		}
		b.WriteByte('/')
	}
	return b.String()
}
