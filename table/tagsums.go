package table

import (
	"context"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// tagHint is what WriteTagged knows of the rows it writes into the open file: the sums of
// their row hashes per group (sums, from the caller), the groups those rows hold (present,
// found by looking at each row's group, which costs far less than encoding and hashing it),
// and the batches of the write not yet handed to the encoder (rest), hashed only if the file
// rolls over in the middle of the write.
type tagHint struct {
	sums    GroupSums
	present map[int64]struct{}
	last    int64
	seen    bool
	rest    []*pq.Batch
}

// scan notes the groups of the n rows of cols (idx: their indexes, nil: the first n).
func (x *tagHint) scan(h *RowHasher, cols []*pq.Column, idx []int, n int) {
	for k := range n {
		i := k
		if idx != nil {
			i = idx[k]
		}
		g, ok := h.groupOf(cols, i)
		if !ok || x.seen && g == x.last {
			continue
		}
		x.present[g], x.last, x.seen = struct{}{}, g, true
	}
}

// settle adds the hint's sums to t, the tag of the file the hinted rows went to. The sums must
// describe exactly the groups scan saw (a group no row holds sums to zero): otherwise the
// caller's sums are not those of the rows written and the file gets no tag rather than a wrong
// one (a file without a tag is read when it matters).
func (x *tagHint) settle(t *fileTag) {
	for g, s := range x.sums {
		if _, ok := x.present[g]; !ok && s != [2]uint64{} {
			t.overflow = true
		}
	}
	for g := range x.present {
		s, ok := x.sums[g]
		if !ok {
			t.overflow = true
		}
		if t.overflow || !t.addSum(g, s) {
			return
		}
	}
}

// split is settle for a file that rolls over in the middle of the hinted write: the rows still
// to write (those of cols after the first done of n, idx as in scan, and the batches of rest)
// go to the next file, so their hashes come off the sums before they are settled into t.
func (x *tagHint) split(h *RowHasher, t *fileTag, schema *txlog.StructType, cols []*pq.Column, idx []int, done, n int) error {
	sub := func(cols []*pq.Column, i int) {
		if g, hash, ok := h.Row(cols, i); ok {
			x.sums.Sub(g, hash)
		}
	}
	for k := done; k < n; k++ {
		i := k
		if idx != nil {
			i = idx[k]
		}
		sub(cols, i)
	}
	for _, b := range x.rest {
		cols, err := pq.Conform(schema, b)
		if err != nil {
			return err
		}
		for i := range b.Len() {
			sub(cols, i)
		}
	}
	x.settle(t)
	return nil
}

// WriteTagged writes rows as Write does, one batch after the other, where sums are the per-group
// sums of their row hashes as the writer's tags count them (RowHasher.Row of each row): a caller
// that rewrites a file and keeps most of its rows has them from the old file's tag, less the
// hashes of the rows it dropped, plus those of the rows it added, and the writer then hashes
// none of the rows here. Without tags, on a partitioned table or with sums nil, it is Write.
func (w *DataWriter) WriteTagged(ctx context.Context, rows []*pq.Batch, sums GroupSums) error {
	if w.tagger == nil || sums == nil || len(w.partIdx) > 0 {
		return writeAll(ctx, w, rows)
	}
	f, err := w.file(ctx, "", nil)
	if err != nil {
		return err
	}
	f.hint = &tagHint{sums: sums, present: map[int64]struct{}{}}
	for k, b := range rows {
		if f.hint != nil {
			f.hint.rest = rows[k+1:]
		}
		if err := w.Write(ctx, b); err != nil {
			return err
		}
		f = w.open[""] // the file rolled over: the rest was hashed into the next one
	}
	if f.hint != nil {
		f.hint.settle(&f.tag)
		f.hint = nil
	}
	return nil
}
