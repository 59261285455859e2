package gold

import (
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/pq"
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
	// KeyIDs and KeyHashes are each row's key id and hash in a shared key table, from
	// KeyShare.Intern: set for, and only for, an aggregation that shares its key table.
	KeyIDs    []int32
	KeyHashes []uint32
	// Columns are the aggregate inputs, indexed by AggSpec.Column.
	Columns []Column
	// SessionGap is an optional per-row gap in µs for session windows (dynamic gap), with its
	// non-null mask; a null or non-positive gap filters the row silently, as Spark does.
	SessionGap      []int64
	SessionGapValid []bool
	// Out, when set, takes the batch's emitted rows as gold columns (the gold-row contract:
	// ColWindow, the NumKeys key columns, each aggregate's columns, ColLateRows), appended in
	// Result.Rows' order straight from the state, and Result.Rows stays empty.
	Out *pq.Batch
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
