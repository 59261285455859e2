package silver

import (
	"slices"

	"github.com/medallion-lake/medallion/pq"
)

// Rows are the valid rows of a micro-batch, in arrival order: row k is row Row[k] of
// Batches[Batch[k]], with event time EventTime[k] (µs) and, after EncodeKeys, the encoded
// dedup key Keys[k]. The buffers are reused from batch to batch (Reset), so that steady state
// allocates little.
type Rows struct {
	Batches   []*pq.Batch
	Batch     []int32
	Row       []int32
	EventTime []int64
	Keys      [][]byte

	keyData []byte
	keyOffs []int32
}

// Reset empties the rows for the batches bs, with room for n rows.
func (r *Rows) Reset(bs []*pq.Batch, n int) {
	r.Batches = bs
	r.EventTime = slices.Grow(r.EventTime[:0], n)
	r.Batch, r.Row = slices.Grow(r.Batch[:0], n), slices.Grow(r.Row[:0], n)
	r.Keys = r.Keys[:0]
}

// Len is the number of rows.
func (r *Rows) Len() int { return len(r.EventTime) }

// KeyBytesEstimate guesses the encoded size of rows keys of parts parts (a tag, a length and a
// UUID-sized string each), so that a key buffer is allocated once for most batches.
func KeyBytesEstimate(rows, parts int) int { return rows * parts * 40 }

// EncodeKeys fills Keys with the encoded key (pq.AppendKeyPart) of every row over the
// columns cols.
func (r *Rows) EncodeKeys(cols []int) {
	r.keyData = slices.Grow(r.keyData[:0], KeyBytesEstimate(r.Len(), len(cols)))
	r.keyOffs = append(slices.Grow(r.keyOffs[:0], r.Len()+1), 0)
	for j := range r.EventTime {
		b := r.Batches[r.Batch[j]]
		for _, c := range cols {
			r.keyData = pq.AppendKeyPart(r.keyData, b.Columns[c], int(r.Row[j]))
		}
		r.keyOffs = append(r.keyOffs, int32(len(r.keyData)))
	}
	r.Keys = slices.Grow(r.Keys[:0], r.Len())
	for j := range r.EventTime {
		r.Keys = append(r.Keys, r.keyData[r.keyOffs[j]:r.keyOffs[j+1]:r.keyOffs[j+1]])
	}
}

// Selection is rows of one batch (nil rows: every row).
type Selection struct {
	B    *pq.Batch
	Rows []int
}

// Select returns the rows sel (ascending) as selections of their batches, in order: the rows
// are written from where they are, never copied.
func (r *Rows) Select(sel []int32) []Selection {
	var out []Selection
	for j := 0; j < len(sel); {
		bi := r.Batch[sel[j]]
		start := j
		for j < len(sel) && r.Batch[sel[j]] == bi {
			j++
		}
		s := Selection{B: r.Batches[bi]}
		if j-start < s.B.Len() {
			s.Rows = make([]int, 0, j-start)
			for _, v := range sel[start:j] {
				s.Rows = append(s.Rows, int(r.Row[v]))
			}
		}
		out = append(out, s)
	}
	return out
}
