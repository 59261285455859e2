package pq

// The exact row codec, one for every place that needs "the same row" to mean one thing: the
// join keeps each buffered input row as an opaque payload (join.Input.Rows) that its host
// (stream/) encodes with EncodeRow and decodes back into the joined table's columns with
// DecodeRow; the late-data reconciler (late/) matches quarantined rows by value and hashes gold
// rows with it (the join merge, the replay's unchanged-row check, the change feed's pairing);
// and table.Rewrite's default change rows are the multiset difference of rows encoded with it.
//
// The payloads live in the join's checkpoint (state snapshots and deltas), so the encoding must
// stay readable by later versions: change it only with a new state format. Over one schema it
// is prefix-free and keeps every bit of every kind (decimal, nested, NaN payloads, -0, empty
// versus null), so two rows' encodings are equal exactly when their values are; unlike the key
// encoding (pq.AppendKeyPart), which normalizes floats and writes decimal and nested values as
// null.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrBadRow reports a payload that does not decode against the columns given: a state file
// from another schema, or a corrupt one.
var ErrBadRow = errors.New("bad row payload")

// EncodeRow appends row i of cols (one value each, in order) to dst: per value a presence
// byte (0: null), then the value; numbers as varints or fixed little-endian bits, bytes
// length-prefixed, decimals as their high then low 64 bits little-endian, structs field by
// field, lists and maps as an element count then the elements. A nil column is a null.
func EncodeRow(dst []byte, cols []*Column, i int) []byte {
	for _, c := range cols {
		dst = appendRowValue(dst, c, i)
	}
	return dst
}

func appendRowValue(dst []byte, c *Column, i int) []byte {
	if c == nil || c.Kind == KindNull || c.IsNull(i) {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch c.Kind {
	case KindInt64:
		dst = binary.AppendVarint(dst, c.Int64[i])
	case KindInt32:
		dst = binary.AppendVarint(dst, int64(c.Int32[i]))
	case KindFloat64:
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.Float64[i]))
	case KindFloat32:
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(c.Float32[i]))
	case KindBool:
		v := byte(0)
		if c.Bool[i] {
			v = 1
		}
		dst = append(dst, v)
	case KindBytes:
		b := c.BytesAt(i)
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	case KindDecimal:
		d := c.Decimal[i]
		dst = binary.LittleEndian.AppendUint64(dst, uint64(d.Hi))
		dst = binary.LittleEndian.AppendUint64(dst, d.Lo)
	case KindStruct:
		for _, ch := range c.Children {
			dst = appendRowValue(dst, ch, i)
		}
	case KindList, KindMap:
		s, e := c.ListRange(i)
		dst = binary.AppendUvarint(dst, uint64(e-s))
		for j := s; j < e; j++ {
			for _, ch := range c.Children {
				dst = appendRowValue(dst, ch, j)
			}
		}
	}
	return dst
}

// DecodeRow appends the values of one EncodeRow payload to cols, which have
// the columns' types, and returns the bytes left over (none for a well-formed payload).
func DecodeRow(cols []*Column, p []byte) ([]byte, error) {
	var err error
	for k, c := range cols {
		if p, err = decodeRowValue(c, p); err != nil {
			return nil, fmt.Errorf("%w: column %d: %v", ErrBadRow, k, err)
		}
	}
	return p, nil
}

func decodeRowValue(c *Column, p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, errors.New("truncated")
	}
	present := p[0]
	p = p[1:]
	if present == 0 {
		c.AppendNull()
		return p, nil
	}
	if present != 1 {
		return nil, fmt.Errorf("presence byte %d", present)
	}
	switch c.Kind {
	case KindInt64, KindInt32:
		v, n := binary.Varint(p)
		if n <= 0 {
			return nil, errors.New("bad varint")
		}
		p = p[n:]
		if c.Kind == KindInt64 {
			c.AppendInt64(v)
		} else {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return nil, errors.New("int out of range")
			}
			c.AppendInt32(int32(v))
		}
	case KindFloat64:
		if len(p) < 8 {
			return nil, errors.New("truncated double")
		}
		c.AppendFloat64(math.Float64frombits(binary.LittleEndian.Uint64(p)))
		p = p[8:]
	case KindFloat32:
		if len(p) < 4 {
			return nil, errors.New("truncated float")
		}
		c.AppendFloat32(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		p = p[4:]
	case KindBool:
		if len(p) < 1 || p[0] > 1 {
			return nil, errors.New("bad boolean")
		}
		c.AppendBool(p[0] == 1)
		p = p[1:]
	case KindBytes:
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, errors.New("truncated bytes")
		}
		c.AppendBytes(p[k : k+int(n)])
		p = p[k+int(n):]
	case KindDecimal:
		if len(p) < 16 {
			return nil, errors.New("truncated decimal")
		}
		c.AppendDecimal(Decimal128{Hi: int64(binary.LittleEndian.Uint64(p)), Lo: binary.LittleEndian.Uint64(p[8:])})
		p = p[16:]
	case KindStruct:
		var err error
		for _, ch := range c.Children {
			if p, err = decodeRowValue(ch, p); err != nil {
				return nil, err
			}
		}
		c.AppendStruct()
	case KindList, KindMap:
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) { // every element takes a byte at least
			return nil, errors.New("bad element count")
		}
		p = p[k:]
		var err error
		for range n {
			for _, ch := range c.Children {
				if p, err = decodeRowValue(ch, p); err != nil {
					return nil, err
				}
			}
		}
		c.AppendList()
	default:
		return nil, fmt.Errorf("kind %d cannot hold a value", c.Kind)
	}
	return p, nil
}
