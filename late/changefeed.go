package late

import (
	"context"

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
	c.enc = table.AppendRowKey(c.enc[:0], b.Columns, i)
	c.enc2 = table.AppendRowKey(c.enc2[:0], out.Columns, j)
	if string(c.enc) == string(c.enc2) {
		return nil
	}
	if err := c.w.WriteRow(ctx, table.ChangePreimage, b, i); err != nil {
		return err
	}
	return c.w.WriteRow(ctx, table.ChangePostimage, out, j)
}

// written takes row i of b, written by the rewrite after the files.
func (c *changeFeed) written(ctx context.Context, b *pq.Batch, i int) error {
	if c.pre.Len() == 0 {
		return c.w.WriteRow(ctx, table.ChangeInsert, b, i)
	}
	c.enc = table.AppendRowKey(c.enc[:0], b.Columns, i)
	for _, p := range c.exact[string(c.enc)] {
		if !c.used[p] {
			c.used[p] = true
			return nil
		}
	}
	c.post.AppendRow(b, i)
	return nil
}

// finish pairs the written rows held with the dropped rows left and writes the pairs, the
// inserts and the deletes.
func (c *changeFeed) finish(ctx context.Context) error {
	if c.post.Len() > 0 {
		keys, err := c.batchKeys(c.post)
		if err != nil {
			return err
		}
		for i := range c.post.Len() {
			p := c.partner(keys, i)
			if p < 0 {
				if err := c.w.WriteRow(ctx, table.ChangeInsert, c.post, i); err != nil {
					return err
				}
				continue
			}
			if err := c.w.WriteRow(ctx, table.ChangePreimage, c.pre, p); err != nil {
				return err
			}
			if err := c.w.WriteRow(ctx, table.ChangePostimage, c.post, i); err != nil {
				return err
			}
		}
	}
	for p, u := range c.used {
		if !u {
			if err := c.w.WriteRow(ctx, table.ChangeDelete, c.pre, p); err != nil {
				return err
			}
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
