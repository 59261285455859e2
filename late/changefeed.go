package late

import (
	"context"
	"math"
	"slices"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// changeKeys is an output kind's say in its change feed: which dropped row a written row
// replaces. A dropped row and a written row that share a key (and fit, when fits is set) are
// an update_preimage/update_postimage pair; the dropped rows left are deletes and the written
// rows left inserts. Gold keys a row by its window and group keys (sessions by the group keys,
// with overlapping windows: a session that grew is the same session changed); a joined table
// keys a null-extended row by its preserved side, and a pair by each of its sides, so that the
// pair that replaces a null-extended row is its update.
type changeKeys struct {
	// of returns, for a batch of the output table, the keys of its rows in order of preference
	// (appended to dst; none: the row pairs with nothing but an equal row).
	of func(b *pq.Batch) (func(dst [][]byte, i int) [][]byte, error)
	// fits, when set, must hold for a dropped row p of pre and a written row i of post to pair.
	fits func(pre *pq.Batch, p int, post *pq.Batch, i int) bool
}

// changeFeed writes one rewrite's change rows. Rows dropped and rows written equal to one
// another cancel (a replay that recomputes a window as it was changes nothing); the rest are
// paired by key. Rows rewritten in place are pairs as they come. Dropped rows are held until
// the written ones are known; written rows are held only when there are dropped rows to pair
// them with, and only those no dropped row equals.
type changeFeed struct {
	w    *table.ChangeWriter
	keys *changeKeys

	pre   *pq.Batch          // dropped rows
	exact map[string][]int32 // a dropped row's encoding -> its rows in pre
	byKey map[string][]int32 // a pairing key -> rows of pre
	used  []bool
	post  *pq.Batch // written rows no dropped row equals

	enc, enc2 []byte
	kbuf      [][]byte
	// preIdx and postIdx are the rows of the current read batch and of the current file's
	// output that rewrote made a pair of, written without a copy by endBatch and endFile.
	preIdx, postIdx []int
}

func newChangeFeed(w *table.ChangeWriter, keys *changeKeys, schema *txlog.StructType) (*changeFeed, error) {
	pre, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	post, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	return &changeFeed{w: w, keys: keys, pre: pre, post: post, exact: map[string][]int32{}, byKey: map[string][]int32{}}, nil
}

// batchKeys returns the key function of a batch (nil when the output kind pairs nothing).
func (c *changeFeed) batchKeys(b *pq.Batch) (func(dst [][]byte, i int) [][]byte, error) {
	if c.keys == nil || c.keys.of == nil {
		return nil, nil
	}
	return c.keys.of(b)
}

// dropped holds row i of b (a batch of the table) as dropped.
func (c *changeFeed) dropped(b *pq.Batch, i int, keys func(dst [][]byte, i int) [][]byte) {
	p := int32(c.pre.Len())
	c.pre.AppendRow(b, i)
	c.used = append(c.used, false)
	c.enc = table.AppendRowKey(c.enc[:0], b.Columns, i)
	c.exact[string(c.enc)] = append(c.exact[string(c.enc)], p)
	if keys != nil {
		c.kbuf = keys(c.kbuf[:0], i)
		for _, k := range c.kbuf {
			c.byKey[string(k)] = append(c.byKey[string(k)], p)
		}
	}
}

// rewrote writes the pair of row i of b rewritten as row j of out, unless they are equal.
func (c *changeFeed) rewrote(ctx context.Context, b *pq.Batch, i int, out *pq.Batch, j int) error {
	if c.sameRow(b, i, out, j) {
		return nil
	}
	c.preIdx = append(c.preIdx, i)
	c.postIdx = append(c.postIdx, j)
	return nil
}

// endBatch writes the pre-images of the rows of b, a batch read from a file, that rewrote
// paired: before the batch's buffers are reused for the next.
func (c *changeFeed) endBatch(ctx context.Context, b *pq.Batch) error {
	if len(c.preIdx) == 0 {
		return nil // (nil rows would be every row)
	}
	err := c.w.WriteRows(ctx, table.ChangePreimage, b, c.preIdx)
	c.preIdx = c.preIdx[:0]
	return err
}

// endFile writes the post-images in out, a file's rows written in its place.
func (c *changeFeed) endFile(ctx context.Context, out *pq.Batch) error {
	if len(c.postIdx) == 0 {
		return nil
	}
	err := c.w.WriteRows(ctx, table.ChangePostimage, out, c.postIdx)
	c.postIdx = c.postIdx[:0]
	return err
}

// writtenBatch takes the rows of b, written by the rewrite after the files.
func (c *changeFeed) writtenBatch(ctx context.Context, b *pq.Batch) error {
	if c.pre.Len() == 0 {
		// Nothing was dropped: every row is an insert.
		return c.w.WriteRows(ctx, table.ChangeInsert, b, nil)
	}
	for i := range b.Len() {
		c.written(b, i)
	}
	return nil
}

// written takes row i of b, written by the rewrite after the files, when rows were dropped.
func (c *changeFeed) written(b *pq.Batch, i int) {
	c.enc = table.AppendRowKey(c.enc[:0], b.Columns, i)
	for _, p := range c.exact[string(c.enc)] {
		if !c.used[p] {
			c.used[p] = true
			return
		}
	}
	c.post.AppendRow(b, i)
}

// finish pairs the written rows held with the dropped rows left and writes the pairs, the
// inserts and the deletes.
func (c *changeFeed) finish(ctx context.Context) error {
	var inserts, posts, pres, deletes []int
	if c.post.Len() > 0 {
		keys, err := c.batchKeys(c.post)
		if err != nil {
			return err
		}
		for i := range c.post.Len() {
			if p := c.partner(keys, i); p >= 0 {
				pres, posts = append(pres, p), append(posts, i)
			} else {
				inserts = append(inserts, i)
			}
		}
	}
	for p, u := range c.used {
		if !u {
			deletes = append(deletes, p)
		}
	}
	// WriteRows takes ascending rows: the pre-images' are in pairing order.
	slices.Sort(pres)
	for _, w := range []struct {
		typ  table.ChangeType
		b    *pq.Batch
		rows []int
	}{{table.ChangeInsert, c.post, inserts}, {table.ChangePostimage, c.post, posts}, {table.ChangePreimage, c.pre, pres}, {table.ChangeDelete, c.pre, deletes}} {
		if len(w.rows) == 0 {
			continue
		}
		if err := c.w.WriteRows(ctx, w.typ, w.b, w.rows); err != nil {
			return err
		}
	}
	return nil
}

// partner marks and returns the dropped row written row i of post replaces, or -1.
func (c *changeFeed) partner(keys func(dst [][]byte, i int) [][]byte, i int) int {
	if keys == nil {
		return -1
	}
	c.kbuf = keys(c.kbuf[:0], i)
	for _, k := range c.kbuf {
		for _, p := range c.byKey[string(k)] {
			if c.used[p] || (c.keys.fits != nil && !c.keys.fits(c.pre, int(p), c.post, i)) {
				continue
			}
			c.used[p] = true
			return int(p)
		}
	}
	return -1
}

// writer is the table's change writer (nil without a feed).
func (c *changeFeed) writer() *table.ChangeWriter {
	if c == nil {
		return nil
	}
	return c.w
}

// sameRow reports whether row i of a and row j of b (batches of the table) are equal, column
// by column: a rewritten row usually differs in a column past its window and keys, so the
// first differing column ends the comparison.
func (c *changeFeed) sameRow(a *pq.Batch, i int, b *pq.Batch, j int) bool {
	for k, x := range a.Columns {
		y := b.Columns[k]
		if xn, yn := x.IsNull(i), y.IsNull(j); xn || yn {
			if xn != yn {
				return false
			}
			continue
		}
		switch x.Kind {
		case pq.KindInt64:
			if x.Int64[i] != y.Int64[j] {
				return false
			}
		case pq.KindFloat64:
			if math.Float64bits(x.Float64[i]) != math.Float64bits(y.Float64[j]) {
				return false
			}
		default:
			c.enc = table.AppendRowKey(c.enc[:0], a.Columns[k:k+1], i)
			c.enc2 = table.AppendRowKey(c.enc2[:0], b.Columns[k:k+1], j)
			if string(c.enc) != string(c.enc2) {
				return false
			}
		}
	}
	return true
}
