package gold

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrBadInput is returned when an Input's columns do not line up with its event-time column or
// with the aggregation's specs.
var ErrBadInput = errors.New("gold: bad input")

// Binary is a variable-width column in Arrow layout: value i is Data[Offsets[i]:Offsets[i+1]],
// so len(Offsets) == rows+1. A Parquet byte-array column or a key encoder fills it without a
// per-row allocation.
type Binary struct {
	Data    []byte
	Offsets []int32
}

// Len is the number of values.
func (b *Binary) Len() int {
	if len(b.Offsets) == 0 {
		return 0
	}
	return len(b.Offsets) - 1
}

// Value is value i; it aliases Data.
func (b *Binary) Value(i int) []byte { return b.Data[b.Offsets[i]:b.Offsets[i+1]] }

// Append adds one value.
func (b *Binary) Append(v []byte) {
	if len(b.Offsets) == 0 {
		b.Offsets = append(b.Offsets, 0)
	}
	b.Data = append(b.Data, v...)
	b.Offsets = append(b.Offsets, int32(len(b.Data)))
}

// EndValue closes a value whose bytes were appended to Data directly (e.g. by AppendKey*).
func (b *Binary) EndValue() {
	if len(b.Offsets) == 0 {
		b.Offsets = append(b.Offsets, 0)
	}
	b.Offsets = append(b.Offsets, int32(len(b.Data)))
}

// Reset empties the column and keeps its buffers.
func (b *Binary) Reset() {
	b.Data = b.Data[:0]
	b.Offsets = b.Offsets[:0]
}

// Column is one aggregate input column. Exactly one of Float64, Int64 or Bytes is set; Valid is
// the non-null mask (nil: no nulls).
type Column struct {
	Float64 []float64
	Int64   []int64
	Bytes   *Binary
	Valid   []bool
}

func (c *Column) len() int {
	switch {
	case c.Float64 != nil:
		return len(c.Float64)
	case c.Int64 != nil:
		return len(c.Int64)
	case c.Bytes != nil:
		return c.Bytes.Len()
	}
	return -1
}

// Input is one micro-batch for one aggregation, column by column.
type Input struct {
	// EventTime is the watermark column in µs; EventValid its non-null mask (nil: no nulls).
	EventTime  []int64
	EventValid []bool
	// Keys holds each row's encoded group key (AppendKey*); empty for a global aggregation.
	Keys Binary
	// Columns are the aggregate inputs, indexed by AggSpec.Column.
	Columns []Column
	// SessionGap is an optional per-row gap in µs for session windows (dynamic gap), with its
	// non-null mask; a null or non-positive gap filters the row silently, as Spark does.
	SessionGap      []int64
	SessionGapValid []bool
}

// Len is the number of rows.
func (in *Input) Len() int { return len(in.EventTime) }

func (in *Input) check(specs []AggSpec) error {
	n := len(in.EventTime)
	if in.EventValid != nil && len(in.EventValid) != n {
		return fmt.Errorf("%w: event time valid mask has %d rows, want %d", ErrBadInput, len(in.EventValid), n)
	}
	if k := in.Keys.Len(); k != 0 && k != n {
		return fmt.Errorf("%w: keys column has %d rows, want %d", ErrBadInput, k, n)
	}
	if in.SessionGap != nil && len(in.SessionGap) != n {
		return fmt.Errorf("%w: session gap column has %d rows, want %d", ErrBadInput, len(in.SessionGap), n)
	}
	if in.SessionGapValid != nil && len(in.SessionGapValid) != n {
		return fmt.Errorf("%w: session gap valid mask has %d rows, want %d", ErrBadInput, len(in.SessionGapValid), n)
	}
	for _, s := range specs {
		if s.Column < 0 {
			continue
		}
		if s.Column >= len(in.Columns) {
			return fmt.Errorf("%w: aggregate %q reads column %d, input has %d", ErrBadInput, s.Name, s.Column, len(in.Columns))
		}
		c := &in.Columns[s.Column]
		if l := c.len(); l != n {
			return fmt.Errorf("%w: aggregate %q column %d has %d rows, want %d", ErrBadInput, s.Name, s.Column, l, n)
		}
		if c.Valid != nil && len(c.Valid) != n {
			return fmt.Errorf("%w: aggregate %q column %d valid mask has %d rows, want %d", ErrBadInput, s.Name, s.Column, len(c.Valid), n)
		}
		if c.Bytes != nil && s.Fn != ApproxCountDistinct && s.Fn != Count {
			return fmt.Errorf("%w: aggregate %q (%s) needs a numeric column", ErrBadInput, s.Name, s.Fn)
		}
	}
	return nil
}

// Key encoding: one tag byte per key part, then the value. Equal tuples give equal bytes and
// distinct tuples distinct bytes, so the bytes can be hashed and compared as the group key.
const (
	keyNull   = 0
	keyString = 1
	keyInt    = 2
	keyFloat  = 3
)

// AppendKeyNull appends a null key part.
func AppendKeyNull(dst []byte) []byte { return append(dst, keyNull) }

// AppendKeyString appends a string key part (length-prefixed, so "a","bc" != "ab","c").
func AppendKeyString(dst []byte, s string) []byte {
	dst = append(dst, keyString)
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// AppendKeyInt64 appends an integer (or timestamp) key part.
func AppendKeyInt64(dst []byte, v int64) []byte {
	dst = append(dst, keyInt)
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

// AppendKeyFloat64 appends a float key part; -0 and NaN payloads are normalized as Spark
// normalizes floating grouping keys.
func AppendKeyFloat64(dst []byte, v float64) []byte {
	if v == 0 {
		v = 0
	}
	if math.IsNaN(v) {
		v = math.NaN()
	}
	dst = append(dst, keyFloat)
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// KeyPart is one decoded key part; Kind is nil for null, else string, int64 or float64.
type KeyPart = any

// DecodeKey splits an encoded key into its parts, so the runner can write gold's key columns.
func DecodeKey(key string) ([]KeyPart, error) {
	var parts []KeyPart
	for i := 0; i < len(key); {
		tag := key[i]
		i++
		switch tag {
		case keyNull:
			parts = append(parts, nil)
		case keyString:
			var n uint64
			shift, ok := uint(0), false
			for ; i < len(key) && shift < 64; shift += 7 {
				c := key[i]
				i++
				n |= uint64(c&0x7f) << shift
				if c < 0x80 {
					ok = true
					break
				}
			}
			if !ok || uint64(len(key)-i) < n {
				return nil, fmt.Errorf("%w: key string part is truncated at byte %d", ErrBadInput, i)
			}
			parts = append(parts, key[i:i+int(n)])
			i += int(n)
		case keyInt, keyFloat:
			if len(key)-i < 8 {
				return nil, fmt.Errorf("%w: key number part at byte %d is truncated", ErrBadInput, i-1)
			}
			var u uint64
			for _, c := range []byte(key[i : i+8]) {
				u = u<<8 | uint64(c)
			}
			i += 8
			if tag == keyInt {
				parts = append(parts, int64(u))
			} else {
				parts = append(parts, math.Float64frombits(u))
			}
		default:
			return nil, fmt.Errorf("%w: key part at byte %d has unknown tag %d", ErrBadInput, i-1, tag)
		}
	}
	return parts, nil
}
