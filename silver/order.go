package silver

import (
	"math/bits"
	"slices"
)

// silverGroupRows is the row-group size of silver's files, silverPageBytes the bytes a column
// buffers before it cuts a page, and orderChunk the run of rows in event-time order that a
// writer takes a batch at a time: a row group is a whole number of chunks, so its event_time
// statistics span exactly its rows' times, and an event_time page (8 bytes a row) holds about
// 4k rows, two chunks, whose min/max the page index records. A look-up of old keys (Lookup)
// then reads only the row groups, and inside them the pages, whose times meet its rows'
// (FileScan.Groups), while silver's readers (replay, polars, Spark) get row groups of 64k rows:
// 4k-row groups cost them a dictionary and a request each (session 18).
const (
	silverGroupRows = 1 << 16
	silverPageBytes = 32 << 10
	orderChunk      = 1 << 11
)

// timeOrder is the buffers of eventTimeOrder, kept from batch to batch.
type timeOrder struct {
	keys, tmp []uint64
	out       []int32
}

// eventTimeOrder returns the rows sel in event-time order, to the 1.024 ms (coarser when the
// rows span more than 2^(54-log2 n) ms), rows of one such tick in the order of sel: a stable
// LSD radix sort of the times packed with each row's position in sel, a few ns a row where a
// comparison sort of 500k rows cost 50 ms. The result is valid until the next call.
func (o *timeOrder) eventTimeOrder(evt []int64, sel []int32) []int32 {
	n := len(sel)
	o.out = slices.Grow(o.out[:0], n)[:n]
	if n == 0 {
		return o.out
	}
	lo, hi := evt[sel[0]], evt[sel[0]]
	for _, i := range sel {
		lo, hi = min(lo, evt[i]), max(hi, evt[i])
	}
	posBits := bits.Len(uint(n))
	shift := max(10, bits.Len64(uint64(hi-lo))-(64-posBits))
	timeBits := max(0, bits.Len64(uint64(hi-lo))-shift)
	o.keys = slices.Grow(o.keys[:0], n)[:n]
	o.tmp = slices.Grow(o.tmp[:0], n)[:n]
	for k, i := range sel {
		o.keys[k] = uint64(evt[i]-lo)>>shift<<posBits | uint64(k)
	}
	keys, tmp := o.keys, o.tmp
	const digit = 11
	var count [1 << digit]int
	for sh := posBits; sh < posBits+timeBits; sh += digit {
		clear(count[:])
		for _, k := range keys {
			count[k>>sh&(1<<digit-1)]++
		}
		sum := 0
		for d, c := range count {
			count[d], sum = sum, sum+c
		}
		for _, k := range keys {
			d := k >> sh & (1<<digit - 1)
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	mask := uint64(1)<<posBits - 1
	for k, key := range keys {
		o.out[k] = sel[key&mask]
	}
	return o.out
}

// chunkSelections returns the rows ord (in event-time order, eventTimeOrder) as selections of
// their batches, orderChunk rows at a time: within a chunk the rows are put back in arrival
// order (ascending, as a batch's writer takes them), so that the order costs a selection per
// batch and chunk rather than one per row where batches interleave. ord is reordered in place.
func chunkSelections(rows *Rows, ord []int32) []Selection {
	var out []Selection
	for lo := 0; lo < len(ord); lo += orderChunk {
		c := ord[lo:min(lo+orderChunk, len(ord))]
		slices.Sort(c)
		out = append(out, rows.Select(c)...)
	}
	return out
}
