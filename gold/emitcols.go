package gold

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/medallion-lake/medallion/pq"
)

// Gold's columns are written in slot order, then permuted into output order. Writing them in
// output order (window, key) read each emitted group's cells, exact sum and key where the
// group's slot put them: at 100k keys a cache miss or more per aggregate per row, 25% of the
// stream's CPU. In slot order (how collectEvictions lists the groups) the state is read front
// to back; the random reads fall on the new rows of gold's columns instead, each a flat array
// of a few bytes a row. The keys are not read per row at all: each emitted key is decoded once,
// in rank order, and gathered into its rows.

// permBuffers are the permutation's scratch copies of a column's new rows, kept for the next
// batch.
type permBuffers struct {
	i64   []int64
	i32   []int32
	f64   []float64
	f32   []float32
	bools []bool
	dec   []pq.Decimal128
	offs  []int32
	data  []byte
}

// writeColumns appends the emitted groups slots to out in output order: slots[perm[i]] is row
// i. The window, aggregate and exact columns are written in slot order and permuted; the late
// rows column is all zeros and needs no permutation; the key columns are gathered from the
// batch's emitted keys decoded once each (orderRows left them in a.keyIDsBuf, and each
// group's rank in a.rowRank).
func (a *Aggregation) writeColumns(out *pq.Batch, slots, perm []int32) error {
	from := out.Len()
	nk := a.cfg.NumKeys
	late := len(out.Columns) - 1
	for _, ac := range a.accs {
		if ac.exact {
			late--
		}
	}
	if err := a.appendValueColumns(out.Columns, late, slots); err != nil {
		return err
	}
	for i, c := range out.Columns {
		if (i >= 1 && i <= nk) || i == late {
			continue
		}
		if err := a.permBuf.permute(c, from, perm); err != nil {
			return err
		}
	}
	if nk == 0 {
		return nil
	}
	return a.gatherKeys(out.Columns[1:1+nk], perm)
}

// keepEmitRows bounds the emits whose ordering and permutation buffers are kept for the next
// batch: a steady stream's emits reuse them, a backlog's (hundreds of thousands of rows, about
// 40 bytes a row) would keep them on the heap through the batches after.
const keepEmitRows = 1 << 16

// releaseEmitBuffers drops the buffers of an emit of n rows when it was a large one.
func (a *Aggregation) releaseEmitBuffers(n int) {
	if n <= keepEmitRows {
		return
	}
	a.perm, a.rowRank, a.rowBucket, a.sortTmp = nil, nil, nil, nil
	a.permBuf = permBuffers{}
}

// gatherKeys decodes each of the batch's emitted keys once, in rank order, and appends row i's
// key (rank a.rowRank[perm[i]]) to the key columns.
func (a *Aggregation) gatherKeys(cols []*pq.Column, perm []int32) error {
	if len(a.keyStage) != len(cols) {
		a.keyStage = make([]*pq.Column, len(cols))
	}
	for i, c := range cols {
		if st := a.keyStage[i]; st == nil || !sameType(st, c) {
			st, err := pq.NewColumn(c.Type)
			if err != nil {
				return fmt.Errorf("gold: key column: %w", err)
			}
			a.keyStage[i] = st
		}
		a.keyStage[i].Reset()
	}
	for _, k := range a.keyIDsBuf {
		if err := pq.AppendKeyColumns(a.keyStage, a.key(k)); err != nil {
			return fmt.Errorf("gold: group key: %w", err)
		}
	}
	// Each row's key rank, in output order, into the window buckets' buffer (the sort is done).
	rows := slices.Grow(a.rowBucket[:0], len(perm))
	for _, j := range perm {
		rows = append(rows, a.rowRank[j])
	}
	a.rowBucket = rows
	for i, c := range cols {
		gather(c, a.keyStage[i], rows)
	}
	return nil
}

// sameType reports whether two columns were made for the same Delta type.
func sameType(x, y *pq.Column) bool {
	return reflect.DeepEqual(x.Type, y.Type)
}

// gather appends src's rows, in the order rows lists them, to dst (a column of the same type).
func gather(dst, src *pq.Column, rows []int32) {
	if len(src.Nulls) == 0 {
		switch src.Kind {
		case pq.KindBytes:
			n := 0
			for _, r := range rows {
				n += int(src.Offsets[r+1] - src.Offsets[r])
			}
			dst.Grow(len(rows), n)
			for _, r := range rows {
				dst.AppendBytes(src.BytesAt(int(r)))
			}
			return
		case pq.KindInt64:
			dst.Grow(len(rows), 0)
			for _, r := range rows {
				dst.AppendInt64(src.Int64[r])
			}
			return
		}
	}
	for _, r := range rows {
		dst.AppendFrom(src, int(r))
	}
}

// permute reorders column c's rows from on: new row from+i is old row from+perm[i].
func (p *permBuffers) permute(c *pq.Column, from int, perm []int32) error {
	// A list is rebuilt row by row below, reading each old row's null flag: its flags must
	// not be permuted first (a null quantile list became another row's, and an empty list).
	if len(c.Nulls) > 0 && c.Kind != pq.KindList && c.Kind != pq.KindMap {
		p.bools = permuteSlice(c.Nulls[from:], perm, p.bools)
	}
	switch c.Kind {
	case pq.KindInt64:
		p.i64 = permuteSlice(c.Int64[from:], perm, p.i64)
	case pq.KindInt32:
		p.i32 = permuteSlice(c.Int32[from:], perm, p.i32)
	case pq.KindFloat64:
		p.f64 = permuteSlice(c.Float64[from:], perm, p.f64)
	case pq.KindFloat32:
		p.f32 = permuteSlice(c.Float32[from:], perm, p.f32)
	case pq.KindBool:
		p.bools = permuteSlice(c.Bool[from:], perm, p.bools)
	case pq.KindDecimal:
		p.dec = permuteSlice(c.Decimal[from:], perm, p.dec)
	case pq.KindBytes:
		p.permuteBytes(c, from, perm)
	case pq.KindStruct:
		for _, ch := range c.Children {
			if err := p.permute(ch, from, perm); err != nil {
				return err
			}
		}
	case pq.KindList, pq.KindMap:
		// Sketch quantiles: rebuilt row by row, rare enough not to need more.
		nc, err := pq.NewColumn(c.Type)
		if err != nil {
			return fmt.Errorf("gold: gold column: %w", err)
		}
		for r := range from {
			nc.AppendFrom(c, r)
		}
		for _, j := range perm {
			nc.AppendFrom(c, from+int(j))
		}
		*c = *nc
	}
	return nil
}

// permuteSlice reorders s (s[i] = old s[perm[i]]) through tmp, which it returns for reuse.
func permuteSlice[T any](s []T, perm []int32, tmp []T) []T {
	tmp = append(tmp[:0], s[:len(perm)]...)
	for i, j := range perm {
		s[i] = tmp[j]
	}
	return tmp
}

// permuteBytes reorders a bytes column's rows from on; the data keeps its length. A value of
// up to shortBytes (an exact sum: about 10 bytes) moves as one fixed-size copy, two register
// moves where a copy of its length was a call to memmove a row; the bytes past it land where
// the next rows, or the slack past the column's end, go.
func (p *permBuffers) permuteBytes(c *pq.Column, from int, perm []int32) {
	base := c.Offsets[from]
	end := c.Offsets[from+len(perm)]
	p.offs = append(p.offs[:0], c.Offsets[from:from+len(perm)+1]...)
	p.data = append(p.data[:0], c.Data[base:end]...)
	var pad [shortBytes]byte
	p.data = append(p.data, pad[:]...) // a short value's copy reads past the last one's end
	dst := slices.Grow(c.Data, shortBytes)[:len(c.Data)+shortBytes]
	pos := base
	for i, j := range perm {
		o, n := p.offs[j]-base, p.offs[j+1]-p.offs[j]
		if n <= shortBytes {
			*(*[shortBytes]byte)(dst[pos:]) = *(*[shortBytes]byte)(p.data[o:])
		} else {
			copy(dst[pos:], p.data[o:o+n])
		}
		pos += n
		c.Offsets[from+i+1] = pos
	}
	c.Data = dst[:len(c.Data)]
}

// shortBytes is the longest value permuteBytes moves in one fixed-size copy.
const shortBytes = 16
