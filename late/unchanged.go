package late

import (
	"encoding/binary"
	"hash/maphash"
	"math"

	"github.com/medallion-lake/medallion/pq"
)

// rowMultiset sums up a multiset of gold rows so that two can be compared without holding
// either: the rows a replay replaces are read a row group at a time and its new rows are
// written a chunk at a time, so neither side is ever whole in memory. Each row is encoded
// exactly (floats by their bits: a replay is deterministic for a fixed worker count, so
// equal means bit-equal, with no tolerance) and hashed with two independent random seeds;
// the hashes are added up, which is independent of the order rows arrive in. Two different
// multisets of the same size compare equal only if both 64-bit sums collide at once, about
// 2^-128 for seeds no input can know.
type rowMultiset struct {
	seeds [2]maphash.Seed
	sums  [2]uint64
	rows  int64
	buf   []byte
}

// newRowMultisets returns two empty multisets hashed alike, to be compared with equal.
func newRowMultisets() (*rowMultiset, *rowMultiset) {
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	return &rowMultiset{seeds: seeds}, &rowMultiset{seeds: seeds}
}

// add puts row i of b (every column) into the multiset.
func (m *rowMultiset) add(b *pq.Batch, i int) {
	m.buf = m.buf[:0]
	for _, c := range b.Columns {
		m.buf = appendExact(m.buf, c, i)
	}
	for k := range m.seeds {
		m.sums[k] += maphash.Bytes(m.seeds[k], m.buf)
	}
	m.rows++
}

// equal reports whether m and o (from the same newRowMultisets) hold the same rows.
func (m *rowMultiset) equal(o *rowMultiset) bool {
	return m.rows == o.rows && m.sums == o.sums
}

// appendExact appends an unambiguous encoding of row i of c: a null tag, then the value's
// bits (lengths before variable parts, children in order for structs, lists and maps), so
// that distinct values never encode alike. Unlike pq.AppendKeyPart it neither merges -0
// with 0 nor normalizes NaN payloads, and it covers every kind.
func appendExact(dst []byte, c *pq.Column, i int) []byte {
	if c.IsNull(i) {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch c.Kind {
	case pq.KindInt64:
		return binary.LittleEndian.AppendUint64(dst, uint64(c.Int64[i]))
	case pq.KindInt32:
		return binary.LittleEndian.AppendUint32(dst, uint32(c.Int32[i]))
	case pq.KindFloat64:
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(c.Float64[i]))
	case pq.KindFloat32:
		return binary.LittleEndian.AppendUint32(dst, math.Float32bits(c.Float32[i]))
	case pq.KindBool:
		if c.Bool[i] {
			return append(dst, 1)
		}
		return append(dst, 0)
	case pq.KindDecimal:
		return c.Decimal[i].Bytes(dst, 16)
	case pq.KindBytes:
		v := c.BytesAt(i)
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		return append(dst, v...)
	case pq.KindStruct:
		for _, ch := range c.Children {
			dst = appendExact(dst, ch, i)
		}
		return dst
	case pq.KindList, pq.KindMap:
		s, e := c.ListRange(i)
		dst = binary.AppendUvarint(dst, uint64(e-s))
		for j := s; j < e; j++ {
			for _, ch := range c.Children {
				dst = appendExact(dst, ch, j)
			}
		}
		return dst
	}
	return dst // KindNull: every value is null
}
