package table

// The writing half of the change data feed (PROTOCOL.md "Change Data Files", "Writer
// Requirements for AddCDCFile"): a commit that changes existing rows of a table whose feed is
// on carries cdc actions naming Parquet files under _change_data/ (partitioned like the
// table) whose rows are the table's columns plus _change_type. They are written under unique
// names before the commit, as data files are, so a crash leaves only orphans no version names
// (vacuum removes them); a reader sees a change file only through the commit that names it.

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// ChangeTypeColumn is the column of a change data file that says what its row is.
const ChangeTypeColumn = "_change_type"

// ChangeDataDir is where a table's change data files live, partitioned like its data.
const ChangeDataDir = "_change_data/"

// ChangeFeedOn reports whether a snapshot's table has its change data feed on
// (delta.enableChangeDataFeed=true): its commits that change rows carry their change rows.
func ChangeFeedOn(snap *txlog.Snapshot) bool { return txlog.ChangeFeedOn(snap.Metadata()) }

// ChangeCounts are the change rows a rewrite wrote, by type.
type ChangeCounts struct {
	Inserts    int64 `json:"insert,omitempty"`
	Deletes    int64 `json:"delete,omitempty"`
	Preimages  int64 `json:"update_preimage,omitempty"`
	Postimages int64 `json:"update_postimage,omitempty"`
}

// Total is the number of change rows.
func (c ChangeCounts) Total() int64 { return c.Inserts + c.Deletes + c.Preimages + c.Postimages }

func (c *ChangeCounts) add(t ChangeType, n int64) {
	switch t {
	case ChangeInsert:
		c.Inserts += n
	case ChangeDelete:
		c.Deletes += n
	case ChangePreimage:
		c.Preimages += n
	case ChangePostimage:
		c.Postimages += n
	}
}

// changeChunk is how many change rows a ChangeWriter stages before it encodes them.
const changeChunk = 4096

// ChangeWriter writes the change rows of one rewrite into change data files. A caller that
// knows its changes (which row replaced which) gets one from NewChangeWriter, hands it to
// Rewrite.Changes and writes each change row as it learns of it; Rewrite closes it and commits
// its files with the data. Not safe for concurrent use.
type ChangeWriter struct {
	schema *txlog.StructType // the table's
	w      *DataWriter       // over the table's columns plus _change_type
	stage  *pq.Batch         // rows staged, in the table's schema
	types  []ChangeType      // and their change types
	tc     *pq.Column        // the _change_type column of a flush, its buffers reused
	consts *changeConsts     // the table's
	counts ChangeCounts
	closed bool
	cdcs   []*txlog.CDC
}

// NewChangeWriter returns the change writer of a rewrite of snap's table, or nil when the
// table's change data feed is off.
func (t *Table) NewChangeWriter(snap *txlog.Snapshot) (*ChangeWriter, error) {
	if !ChangeFeedOn(snap) {
		return nil, nil
	}
	schema, err := snap.Schema()
	if err != nil {
		return nil, err
	}
	return t.newChangeWriter(snap, schema)
}

func (t *Table) newChangeWriter(snap *txlog.Snapshot, schema *txlog.StructType) (*ChangeWriter, error) {
	if schema.FieldIndex(ChangeTypeColumn) >= 0 {
		return nil, fmt.Errorf("table: the change data feed needs column name %s, which the table uses", ChangeTypeColumn)
	}
	cs := &txlog.StructType{Fields: append(append([]txlog.StructField(nil), schema.Fields...),
		txlog.StructField{Name: ChangeTypeColumn, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true})}
	opts := t.write
	// Change files carry no stats in their cdc actions: index one column, not 32.
	opts.StatsColumns = 1
	w, err := NewDataWriter(t.bucket, cs, snap.PartitionColumns(), opts)
	if err != nil {
		return nil, err
	}
	w.now, w.dir, w.name, w.dataChange = t.now, ChangeDataDir, "cdc", false
	stage, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	tc, err := pq.NewColumn(txlog.PrimitiveType{Name: txlog.TypeString})
	if err != nil {
		return nil, err
	}
	return &ChangeWriter{schema: schema, w: w, stage: stage, tc: tc, consts: &t.consts}, nil
}

// WriteRow writes row i of b, whose columns are the table's in its schema's order (a batch
// read from the table, or one built with its schema), as a change row of type typ.
func (c *ChangeWriter) WriteRow(ctx context.Context, typ ChangeType, b *pq.Batch, i int) error {
	if c.closed {
		return fmt.Errorf("table: change writer: write after close")
	}
	c.stage.AppendRow(b, i)
	c.types = append(c.types, typ)
	c.counts.add(typ, 1)
	if len(c.types) >= changeChunk {
		return c.flush(ctx)
	}
	return nil
}

// WriteRows writes the rows of b listed in rows (ascending; nil: every row), whose columns
// are the table's in its schema's order, as change rows of type typ, without copying them:
// for rows of a batch the caller holds anyway (the rows a rewrite read or writes).
func (c *ChangeWriter) WriteRows(ctx context.Context, typ ChangeType, b *pq.Batch, rows []int) error {
	if c.closed {
		return fmt.Errorf("table: change writer: write after close")
	}
	n := b.Len()
	if rows != nil {
		n = len(rows)
	}
	if n == 0 {
		return nil
	}
	view := &pq.Batch{Schema: c.w.schema, Columns: append(append(make([]*pq.Column, 0, len(b.Columns)+1), b.Columns...), c.constColumn(typ, b.Len()))}
	if err := c.w.WriteRows(ctx, view, rows); err != nil {
		return fmt.Errorf("table: write change data: %w", err)
	}
	c.counts.add(typ, int64(n))
	return nil
}

// constColumn is a view of n rows of a string column holding typ in every row.
func (c *ChangeWriter) constColumn(typ ChangeType, n int) *pq.Column {
	col := c.consts.get(typ, n)
	return &pq.Column{Type: col.Type, Kind: col.Kind, Len: n, Offsets: col.Offsets[:n+1], Data: col.Data[:col.Offsets[n]]}
}

// changeConsts are, per change type, a string column holding it in every row, as long as the
// largest batch a change writer of the table wrote: views of it give the rows a change writer
// writes without a copy their type. Kept by the table, so that a writer per rewrite does not
// build them again; a column is never changed once built (a longer one replaces it), so views
// of it are safe to share.
type changeConsts struct {
	mu   sync.Mutex
	cols map[ChangeType]*pq.Column
}

func (cc *changeConsts) get(typ ChangeType, n int) *pq.Column {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	col := cc.cols[typ]
	if col == nil || col.Len < n {
		n = max(n, 4096)
		col = &pq.Column{Type: txlog.PrimitiveType{Name: txlog.TypeString}, Kind: pq.KindBytes, Len: n,
			Offsets: make([]int32, n+1), Data: bytes.Repeat([]byte(typ), n)}
		for i := range col.Offsets {
			col.Offsets[i] = int32(i * len(typ))
		}
		if cc.cols == nil {
			cc.cols = map[ChangeType]*pq.Column{}
		}
		cc.cols[typ] = col
	}
	return col
}

// WriteBatch writes every row of b (any column order; missing nullable columns are null) as
// change rows of type typ.
func (c *ChangeWriter) WriteBatch(ctx context.Context, typ ChangeType, b *pq.Batch) error {
	cols, err := pq.Conform(c.schema, b)
	if err != nil {
		return err
	}
	view := &pq.Batch{Schema: c.schema, Columns: cols}
	for i := range view.Len() {
		if err := c.WriteRow(ctx, typ, view, i); err != nil {
			return err
		}
	}
	return nil
}

// Counts are the change rows written so far.
func (c *ChangeWriter) Counts() ChangeCounts { return c.counts }

func (c *ChangeWriter) flush(ctx context.Context) error {
	if len(c.types) == 0 {
		return nil
	}
	tc := c.tc
	tc.Reset()
	for _, t := range c.types {
		tc.AppendString(string(t))
	}
	b := &pq.Batch{Schema: c.w.schema, Columns: append(append([]*pq.Column(nil), c.stage.Columns...), tc)}
	if err := c.w.Write(ctx, b); err != nil {
		return fmt.Errorf("table: write change data: %w", err)
	}
	c.stage.Reset()
	c.types = c.types[:0]
	return nil
}

// close writes what is staged, finishes the files and returns their cdc actions (none when
// no change row was written). Idempotent.
func (c *ChangeWriter) close(ctx context.Context) ([]*txlog.CDC, error) {
	if c.closed {
		return c.cdcs, nil
	}
	if err := c.flush(ctx); err != nil {
		return nil, err
	}
	c.closed = true
	adds, err := c.w.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("table: write change data: %w", err)
	}
	for _, a := range adds {
		c.cdcs = append(c.cdcs, &txlog.CDC{Path: a.Path, PartitionValues: a.PartitionValues, Size: a.Size})
	}
	return c.cdcs, nil
}

// rowDiff is Rewrite's default change rows for a caller that does not describe its own: the
// multiset difference of the rows its replaced files held and the rows it wrote. A removed
// row not written again is a delete, a written row not removed an insert; rows merely copied
// produce nothing. Each file's copies cancel first (most of a rewritten file), so only the
// difference is held until the end, where differences across files and inserts cancel too.
type rowDiff struct {
	schema           *txlog.StructType
	removed, written *pq.Batch // what is left of each side
	key              []byte
}

func newRowDiff(schema *txlog.StructType) (*rowDiff, error) {
	r, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	w, err := pq.NewBatch(schema)
	if err != nil {
		return nil, err
	}
	return &rowDiff{schema: schema, removed: r, written: w}, nil
}

// conform lays out batches in the table's schema.
func (d *rowDiff) conform(bs []*pq.Batch) ([]*pq.Batch, error) {
	out := make([]*pq.Batch, 0, len(bs))
	for _, b := range bs {
		if b == nil || b.Len() == 0 {
			continue
		}
		cols, err := pq.Conform(d.schema, b)
		if err != nil {
			return nil, err
		}
		out = append(out, &pq.Batch{Schema: d.schema, Columns: cols})
	}
	return out, nil
}

// file takes a replaced file's rows and the rows written in its place, keeping their
// difference.
func (d *rowDiff) file(removed, written []*pq.Batch) error {
	rm, err := d.conform(removed)
	if err != nil {
		return err
	}
	wr, err := d.conform(written)
	if err != nil {
		return err
	}
	d.cancel(rm, d.removed, wr, d.written)
	return nil
}

// insert takes rows written after the files.
func (d *rowDiff) insert(written []*pq.Batch) error {
	wr, err := d.conform(written)
	if err != nil {
		return err
	}
	for _, b := range wr {
		for i := range b.Len() {
			d.written.AppendRow(b, i)
		}
	}
	return nil
}

// cancel appends to ro the rows of rm that wr does not hold and to wo the rows of wr that rm
// does not hold (as multisets).
func (d *rowDiff) cancel(rm []*pq.Batch, ro *pq.Batch, wr []*pq.Batch, wo *pq.Batch) {
	count := map[string]int{}
	for _, b := range rm {
		for i := range b.Len() {
			d.key = pq.EncodeRow(d.key[:0], b.Columns, i)
			count[string(d.key)]++
		}
	}
	for _, b := range wr {
		for i := range b.Len() {
			d.key = pq.EncodeRow(d.key[:0], b.Columns, i)
			if n := count[string(d.key)]; n > 0 {
				count[string(d.key)] = n - 1
				continue
			}
			wo.AppendRow(b, i)
		}
	}
	for _, b := range rm {
		for i := range b.Len() {
			d.key = pq.EncodeRow(d.key[:0], b.Columns, i)
			if n := count[string(d.key)]; n > 0 {
				count[string(d.key)] = n - 1
				ro.AppendRow(b, i)
			}
		}
	}
}

// write cancels what is left across files and writes deletes and inserts to c.
func (d *rowDiff) write(ctx context.Context, c *ChangeWriter) error {
	ro, err := pq.NewBatch(d.schema)
	if err != nil {
		return err
	}
	wo, err := pq.NewBatch(d.schema)
	if err != nil {
		return err
	}
	d.cancel([]*pq.Batch{d.removed}, ro, []*pq.Batch{d.written}, wo)
	for i := range ro.Len() {
		if err := c.WriteRow(ctx, ChangeDelete, ro, i); err != nil {
			return err
		}
	}
	for i := range wo.Len() {
		if err := c.WriteRow(ctx, ChangeInsert, wo, i); err != nil {
			return err
		}
	}
	return nil
}
