package join

import (
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/gold"
)

// ErrBadInput is returned when an Input's columns do not line up.
var ErrBadInput = errors.New("join: bad input")

// Input is one micro-batch of one side, column by column.
type Input struct {
	// EventTime is the side's event-time column in µs (never null: silver requires it).
	EventTime []int64
	// Keys holds each row's encoded join key: equal keys must have equal bytes (table's
	// AppendKey* encoding of the `on:` columns does).
	Keys gold.Binary
	// KeyNull marks rows whose key has a null part (nil: none). Such a row never matches
	// (spec §9.2); on a preserved side it still comes out null-extended, on the other side it
	// is filtered out as Spark's inferred `key IS NOT NULL` does (never late, never stored).
	KeyNull []bool
	// Rows holds each row's payload, opaque to the operator: it is stored in state and handed
	// back in the output (the host's encoding of the side's silver columns).
	Rows gold.Binary
}

// Len is the number of rows.
func (in *Input) Len() int {
	if in == nil {
		return 0
	}
	return len(in.EventTime)
}

func (in *Input) check(side Side) error {
	if in == nil {
		return nil
	}
	n := len(in.EventTime)
	if k := in.Keys.Len(); k != n {
		return fmt.Errorf("%w: %s keys column has %d rows, want %d", ErrBadInput, side, k, n)
	}
	if r := in.Rows.Len(); r != n {
		return fmt.Errorf("%w: %s rows column has %d rows, want %d", ErrBadInput, side, r, n)
	}
	if in.KeyNull != nil && len(in.KeyNull) != n {
		return fmt.Errorf("%w: %s key null mask has %d rows, want %d", ErrBadInput, side, len(in.KeyNull), n)
	}
	if n > 0 {
		if err := checkOffsets(&in.Keys); err != nil {
			return fmt.Errorf("%w: %s keys column: %v", ErrBadInput, side, err)
		}
		if err := checkOffsets(&in.Rows); err != nil {
			return fmt.Errorf("%w: %s rows column: %v", ErrBadInput, side, err)
		}
	}
	return nil
}

func checkOffsets(b *gold.Binary) error {
	if b.Offsets[0] < 0 {
		return fmt.Errorf("offset 0 is negative")
	}
	for i := 1; i < len(b.Offsets); i++ {
		if b.Offsets[i] < b.Offsets[i-1] {
			return fmt.Errorf("offset %d decreases", i)
		}
	}
	if int(b.Offsets[len(b.Offsets)-1]) > len(b.Data) {
		return fmt.Errorf("offsets run past the data")
	}
	return nil
}

func (in *Input) keyNull(i int) bool { return in.KeyNull != nil && in.KeyNull[i] }
