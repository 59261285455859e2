package late

import (
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"

	"github.com/medallion-lake/medallion/internal/hashtab"
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
// paired by key. Rows rewritten in place are pairs as they come.
//
// A replay drops every row of its range, nearly all of which it writes again unchanged, so
// dropped rows are not held: each is remembered by a 128-bit hash of its values (two maphash
// seeds, the argument of rowMultiset: equal hashes mean equal rows but for a chance of about
// 2^-128) and its place in its file. A written row whose hash a dropped row has cancels it; the
// other written rows are held. Only the dropped rows left at the end are read again from their
// files, to pair them and write them as pre-images or deletes. An unchanged replay thus costs a
// map of hashes, and a replay that changed little reads back only the files of what changed.
type changeFeed struct {
	w    *table.ChangeWriter
	keys *changeKeys
	scan *table.FileScan // the table's snapshot, to read dropped rows back

	seeds [2]maphash.Seed
	// drops are the dropped rows by hash and place, idx finds them by hash (its low 32 bits).
	drops []droppedRow
	idx   hashtab.Table[uint32]
	files []*txlog.Add // the files dropped rows are in, by rowRef.file
	left  int          // dropped rows not cancelled yet
	post  *pq.Batch    // written rows no dropped row equals

	enc, enc2 []byte
	kbuf      [][]byte
	hs        [][2]uint64 // a batch's row hashes
	h32       []uint32    // their low 32 bits, for hashtab.Touch
	sink      uint32      // what the touches read, kept so that they are not optimized away
	missed    []int       // written's answer
	// preIdx and postIdx are the rows of the current read batch and of the rows written for
	// it that rewrote made a pair of, written without a copy by endBatch and endPost.
	preIdx, postIdx []int
}

// rowRef is a dropped row's place: the file (index into changeFeed.files) and its row there,
// counted over the file's rows as the table's scan yields them.
type rowRef struct{ file, row int32 }

// droppedRow is a dropped row's hash and place; once a written row cancelled it, at.file is
// cancelledFile(file), below zero, so that the row can still be found (writeCancelled) (24
// bytes a row: a replay remembers every row of its range).
type droppedRow struct {
	h  [2]uint64
	at rowRef
}

func newChangeFeed(w *table.ChangeWriter, keys *changeKeys, scan *table.FileScan, schema *txlog.StructType, seeds [2]maphash.Seed) (*changeFeed, error) {
	post, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	return &changeFeed{w: w, keys: keys, scan: scan, seeds: seeds, post: post, idx: hashtab.New[uint32](0)}, nil
}

// hash is row i of b's 128-bit hash, with the seeds of the rewrite's rowMultisets.
func (c *changeFeed) hash(b *pq.Batch, i int) [2]uint64 {
	c.enc = pq.EncodeRow(c.enc[:0], b.Columns, i)
	return [2]uint64{maphash.Bytes(c.seeds[0], c.enc), maphash.Bytes(c.seeds[1], c.enc)}
}

// batchKeys returns the key function of a batch (nil when the output kind pairs nothing).
func (c *changeFeed) batchKeys(b *pq.Batch) (func(dst [][]byte, i int) [][]byte, error) {
	if c.keys == nil || c.keys.of == nil {
		return nil, nil
	}
	return c.keys.of(b)
}

// file notes f, a file with dropped rows; it returns f's index for their rowRefs.
func (c *changeFeed) file(f *txlog.Add) int32 {
	c.files = append(c.files, f)
	return int32(len(c.files) - 1)
}

// presize makes room for n dropped rows.
func (c *changeFeed) presize(n int) {
	if n > c.idx.Size() {
		c.idx.Resize(n)
		c.drops = slices.Grow(c.drops, n)
	}
}

// dropBatch notes the dropped rows of one read batch by their hashes hs and places at. The
// map holds every row of a replay's range (millions at 100k keys, far larger than the
// caches): its entries for the whole batch are touched first (hashtab.Touch), so that their
// cache misses overlap, as the aggregation's look-ups do, instead of one per insert.
func (c *changeFeed) dropBatch(hs [][2]uint64, at []rowRef) {
	c.idx.Reserve(len(hs))
	c.sink += c.idx.Touch(c.low32(hs))
	for k, h := range hs {
		c.left++
		c.drops = append(c.drops, droppedRow{h: h, at: at[k]})
		c.idx.Insert(uint32(h[0]), uint32(len(c.drops)-1))
	}
}

// low32 returns the map's hashes of hs (their low 32 bits) in a scratch slice.
func (c *changeFeed) low32(hs [][2]uint64) []uint32 {
	c.h32 = c.h32[:0]
	for _, h := range hs {
		c.h32 = append(c.h32, uint32(h[0]))
	}
	return c.h32
}

// touchCancels warms what cancel reads for each of hs: its map entry, then the dropped row
// the entry names (each a cache miss at random, overlapped over the batch).
func (c *changeFeed) touchCancels(hs [][2]uint64) {
	c.sink += c.idx.Touch(c.low32(hs))
	for _, h32 := range c.h32 {
		if _, v, ok := c.idx.Find(h32, h32); ok {
			c.sink += uint32(c.drops[v].at.row)
		}
	}
}

// cancel takes back a dropped row of hash h, reporting whether there was one.
func (c *changeFeed) cancel(h [2]uint64) bool {
	h32 := uint32(h[0])
	for at, v, ok := c.idx.Find(h32, h32); ok; at, v, ok = c.idx.Find(h32, at+1) {
		if d := &c.drops[v]; d.h == h {
			c.idx.Delete(h32, v)
			d.at.file = cancelledFile(d.at.file)
			c.left--
			return true
		}
	}
	return false
}

// cancelledFile marks a file index as a cancelled row's (below zero); applied twice it is
// the index again.
func cancelledFile(f int32) int32 { return -2 - f }

// writeCancelled hands to write the dropped rows written rows cancelled so far, read back
// from their files: the written rows equal to them, which the rewrite held back while every
// row it wrote had an equal among the dropped ones (rewrite.insert). They go to write about
// emitChunk rows at a time (a batch write does not keep), so that memory holds a chunk and a
// row group, not a file's rows.
func (c *changeFeed) writeCancelled(ctx context.Context, write func(*pq.Batch) error) error {
	byFile := map[int32][]int32{}
	for _, d := range c.drops {
		if d.at.file < 0 {
			f := cancelledFile(d.at.file)
			byFile[f] = append(byFile[f], d.at.row)
		}
	}
	out, err := pq.NewBatch(c.post.Schema)
	if err != nil {
		return err
	}
	flush := func(least int) error {
		if out.Len() < least || out.Len() == 0 {
			return nil
		}
		err := write(out)
		out.Reset()
		return err
	}
	for _, fi := range slices.Sorted(maps.Keys(byFile)) {
		rows := byFile[fi]
		slices.Sort(rows)
		if err := c.readRows(ctx, fi, rows, out, func() error { return flush(emitChunk) }); err != nil {
			return err
		}
	}
	return flush(1)
}

// readRows appends rows (ascending) of file fi, counted as the scan yields them, to out,
// calling each (when set) after each batch the scan yields.
func (c *changeFeed) readRows(ctx context.Context, fi int32, rows []int32, out *pq.Batch, each func() error) error {
	base, k := 0, 0
	for b, err := range c.scan.Read(ctx, []*txlog.Add{c.files[fi]}) {
		if err != nil {
			return err
		}
		for ; k < len(rows) && int(rows[k]) < base+b.Len(); k++ {
			out.AppendRow(b, int(rows[k])-base)
		}
		base += b.Len()
		if each != nil {
			if err := each(); err != nil {
				return err
			}
		}
	}
	if k < len(rows) {
		return fmt.Errorf("late: file %s has %d rows, fewer than when the rewrite read it", c.files[fi].Path, base)
	}
	return nil
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

// endPost writes the post-images in out, the rows written in place of a batch read from a file.
func (c *changeFeed) endPost(ctx context.Context, out *pq.Batch) error {
	if len(c.postIdx) == 0 {
		return nil
	}
	err := c.w.WriteRows(ctx, table.ChangePostimage, out, c.postIdx)
	c.postIdx = c.postIdx[:0]
	return err
}

// written takes the rows of b, written by the rewrite after the files; hashes, when set, are
// their hashes (the rewrite's rowMultiset computed them). Once no dropped row is left to cancel
// or pair with, rows are inserts, written without a copy. It returns b's rows that cancelled no
// dropped row, in order (a scratch slice, good until the next call).
func (c *changeFeed) written(ctx context.Context, b *pq.Batch, hashes [][2]uint64) ([]int, error) {
	if c.left > 0 {
		if hashes == nil {
			c.hs = c.hs[:0]
			for i := range b.Len() {
				c.hs = append(c.hs, c.hash(b, i))
			}
			hashes = c.hs
		}
		c.touchCancels(hashes)
	}
	var inserts []int
	c.missed = c.missed[:0]
	for i := range b.Len() {
		if c.left == 0 {
			inserts = append(inserts, i)
			c.missed = append(c.missed, i)
			continue
		}
		if !c.cancel(hashes[i]) {
			c.post.AppendRow(b, i)
			c.missed = append(c.missed, i)
		}
	}
	if len(inserts) == 0 {
		return c.missed, nil
	}
	return c.missed, c.w.WriteRows(ctx, table.ChangeInsert, b, inserts)
}

// finish reads back the dropped rows nothing cancelled, pairs them with the written rows held
// and writes the pairs, the inserts and the deletes.
func (c *changeFeed) finish(ctx context.Context) error {
	pre, err := c.readDropped(ctx)
	if err != nil {
		return err
	}
	used := make([]bool, pre.Len())
	byKey := map[string][]int32{}
	if pre.Len() > 0 {
		keys, err := c.batchKeys(pre)
		if err != nil {
			return err
		}
		for p := range pre.Len() {
			if keys == nil {
				break
			}
			c.kbuf = keys(c.kbuf[:0], p)
			for _, k := range c.kbuf {
				byKey[string(k)] = append(byKey[string(k)], int32(p))
			}
		}
	}
	var inserts, posts, pres, deletes []int
	if c.post.Len() > 0 {
		keys, err := c.batchKeys(c.post)
		if err != nil {
			return err
		}
		for i := range c.post.Len() {
			if p := c.partner(keys, byKey, used, pre, i); p >= 0 {
				pres, posts = append(pres, p), append(posts, i)
			} else {
				inserts = append(inserts, i)
			}
		}
	}
	for p, u := range used {
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
	}{{table.ChangeInsert, c.post, inserts}, {table.ChangePostimage, c.post, posts}, {table.ChangePreimage, pre, pres}, {table.ChangeDelete, pre, deletes}} {
		if len(w.rows) == 0 {
			continue
		}
		if err := c.w.WriteRows(ctx, w.typ, w.b, w.rows); err != nil {
			return err
		}
	}
	return nil
}

// readDropped reads back, file by file, the dropped rows no written row cancelled.
func (c *changeFeed) readDropped(ctx context.Context) (*pq.Batch, error) {
	pre, err := pq.NewBatch(c.post.Schema)
	if err != nil {
		return nil, err
	}
	byFile := map[int32][]int32{}
	for _, d := range c.drops {
		if d.at.file >= 0 {
			byFile[d.at.file] = append(byFile[d.at.file], d.at.row)
		}
	}
	for _, fi := range slices.Sorted(maps.Keys(byFile)) {
		rows := byFile[fi]
		slices.Sort(rows)
		if err := c.readRows(ctx, fi, rows, pre, nil); err != nil {
			return nil, err
		}
	}
	return pre, nil
}

// partner marks and returns the dropped row of pre written row i of post replaces, or -1.
func (c *changeFeed) partner(keys func(dst [][]byte, i int) [][]byte, byKey map[string][]int32, used []bool, pre *pq.Batch, i int) int {
	if keys == nil {
		return -1
	}
	c.kbuf = keys(c.kbuf[:0], i)
	for _, k := range c.kbuf {
		for _, p := range byKey[string(k)] {
			if used[p] || (c.keys.fits != nil && !c.keys.fits(pre, int(p), c.post, i)) {
				continue
			}
			used[p] = true
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
			c.enc = pq.EncodeRow(c.enc[:0], a.Columns[k:k+1], i)
			c.enc2 = pq.EncodeRow(c.enc2[:0], b.Columns[k:k+1], j)
			if string(c.enc) != string(c.enc2) {
				return false
			}
		}
	}
	return true
}
