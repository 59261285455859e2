package late

import (
	"hash/maphash"

	"github.com/medallion-lake/medallion/pq"
)

// rowMultiset sums up a multiset of gold rows so that two can be compared without holding
// either: the rows a replay replaces are read a row group at a time and its new rows are
// written a chunk at a time, so neither side is ever whole in memory. Each row is encoded
// exactly with the exact row codec (pq.EncodeRow: over one schema, equal bytes exactly when
// equal values, floats by their bits; a replay is deterministic for a fixed worker count, so
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

// add puts row i of b (every column) into the multiset and returns the row's two hashes (the
// change feed tells rows apart by them).
func (m *rowMultiset) add(b *pq.Batch, i int) [2]uint64 {
	m.buf = pq.EncodeRow(m.buf[:0], b.Columns, i)
	var h [2]uint64
	for k := range m.seeds {
		h[k] = maphash.Bytes(m.seeds[k], m.buf)
		m.sums[k] += h[k]
	}
	m.rows++
	return h
}

// equal reports whether m and o (from the same newRowMultisets) hold the same rows.
func (m *rowMultiset) equal(o *rowMultiset) bool {
	return m.rows == o.rows && m.sums == o.sums
}
