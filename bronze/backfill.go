package bronze

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// Promoter moves values that rows keep in _rescued_data into the declared columns that now
// exist for them (a column added to `schema:` after the rows were ingested): what
// `medallion run backfill-columns` does to bronze, silver and quarantine rows. A value moves
// when its row's column is null and the value fits the column as ingest would fit it now
// (the same parser for NDJSON and Kafka JSON, the same text conversion for CSV); the first
// fitting occurrence of a key wins, as in ingest. It is removed from _rescued_data (the
// object keeps its other keys verbatim, in order; null when none is left), so a value is in
// one place only, and a row comes out as a fresh ingest of its line under the new schema
// would write it. Rows that carry nothing to move are left as they are: Promote is
// idempotent.
type Promoter struct {
	fields []Field
	csv    bool
	index  map[string]int // declared name -> field
	// one parser per declared column, fed one key at a time
	parsers []*LineParser
	one     []byte
}

// NewPromoter builds a Promoter for a source's declared columns and landing format
// (FormatJSON, FormatCSV; Kafka records are JSON), reading timestamps as times says (see
// Limits.Times; nil: the default forms).
func NewPromoter(declared *txlog.StructType, format string, times map[string]*timefmt.Parser) (*Promoter, error) {
	fields, err := FieldsOf(declared)
	if err != nil {
		return nil, err
	}
	if err := withTimes(fields, times); err != nil {
		return nil, err
	}
	p := &Promoter{fields: fields, csv: format == FormatCSV, index: map[string]int{}}
	for i, f := range fields {
		p.index[f.Name] = i
		lp, err := NewLineParser([]Field{f})
		if err != nil {
			return nil, err
		}
		p.parsers = append(p.parsers, lp)
	}
	return p, nil
}

// rescuedPair is one key of a rescued-data object: the key's raw JSON text (quotes and
// escapes as they came), its unquoted name, and the value's raw JSON text.
type rescuedPair struct {
	rawKey []byte
	name   string
	rawVal json.RawMessage
}

// splitRescued cuts a rescued-data object into its keys, keeping their order and raw text.
func splitRescued(obj []byte) ([]rescuedPair, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var out []rescuedPair
	for dec.More() {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("a key that is not a string")
		}
		raw := bytes.TrimLeft(obj[start:dec.InputOffset()], " \t\r\n,")
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		out = append(out, rescuedPair{rawKey: raw, name: name, rawVal: val})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the object")
	}
	return out, nil
}

// fit converts one rescued value for declared field fi into a one-cell column, or false when
// it does not fit (it stays rescued, as ingest would have left it).
func (p *Promoter) fit(fi int, pair rescuedPair, col *pq.Column) (bool, error) {
	f := p.fields[fi]
	if p.csv {
		var s string
		if json.Unmarshal(pair.rawVal, &s) != nil || s == "" {
			return false, nil
		}
		return appendText(col, f, s), nil
	}
	lp := p.parsers[fi]
	p.one = append(p.one[:0], '{')
	p.one = append(p.one, pair.rawKey...)
	p.one = append(p.one, ':')
	p.one = append(p.one, pair.rawVal...)
	p.one = append(p.one, '}')
	if err := lp.Parse(p.one); err != nil {
		return false, nil // not a value ingest could have taken either
	}
	if !lp.Value(0).Valid {
		return false, nil
	}
	one := [1]*pq.Column{col} // lp parses the one field f (NewLineParser checked its kind)
	appendCells(one[:], lp)
	return true, nil
}

// Promote returns b with the rescued values of its rows moved into their declared columns and
// how many values moved; b itself when none did. b must have _rescued_data and may have any
// other columns (bronze, silver, a quarantine): declared columns it lacks are left alone.
func (p *Promoter) Promote(b *pq.Batch) (*pq.Batch, int64, error) {
	ri := b.Schema.FieldIndex(ColRescued)
	if ri < 0 {
		return b, 0, nil
	}
	rescued := b.Columns[ri]
	// colOf[fi]: b's column of declared field fi, -1 when b has none.
	colOf := make([]int, len(p.fields))
	for fi, f := range p.fields {
		colOf[fi] = b.Schema.FieldIndex(f.Name)
	}
	type rowChange struct {
		cells   map[int]*pq.Column // b's column -> the one-cell value
		rescued []byte             // nil: null
	}
	changes := map[int]*rowChange{}
	var moved int64
	for i := range b.Len() {
		if rescued.IsNull(i) {
			continue
		}
		pairs, err := splitRescued(rescued.BytesAt(i))
		if err != nil {
			continue // not an object ingest wrote: leave the row as it is
		}
		var ch *rowChange
		keep := make([]bool, len(pairs))
		for k, pair := range pairs {
			keep[k] = true
			fi, ok := p.index[pair.name]
			if !ok || colOf[fi] < 0 {
				continue
			}
			c := colOf[fi]
			if !b.Columns[c].IsNull(i) || (ch != nil && ch.cells[c] != nil) {
				continue // the row has the value already: this occurrence stays rescued
			}
			cell, err := pq.NewColumn(b.Schema.Fields[c].Type)
			if err != nil {
				return nil, 0, err
			}
			ok, err = p.fit(fi, pair, cell)
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				continue
			}
			if ch == nil {
				ch = &rowChange{cells: map[int]*pq.Column{}}
			}
			ch.cells[c] = cell
			keep[k] = false
			moved++
		}
		if ch == nil {
			continue
		}
		var obj []byte
		for k, pair := range pairs {
			if !keep[k] {
				continue
			}
			if obj == nil {
				obj = append(obj, '{')
			} else {
				obj = append(obj, ',')
			}
			obj = append(obj, pair.rawKey...)
			obj = append(obj, ':')
			obj = append(obj, pair.rawVal...)
		}
		if obj != nil {
			obj = append(obj, '}')
		}
		ch.rescued = obj
		changes[i] = ch
	}
	if len(changes) == 0 {
		return b, 0, nil
	}
	out, err := pq.NewBatch(b.Schema)
	if err != nil {
		return nil, 0, err
	}
	for i := range b.Len() {
		ch := changes[i]
		if ch == nil {
			out.AppendRow(b, i)
			continue
		}
		for c, col := range out.Columns {
			switch {
			case c == ri && ch.rescued == nil:
				col.AppendNull()
			case c == ri:
				col.AppendBytes(ch.rescued)
			case ch.cells[c] != nil:
				col.AppendFrom(ch.cells[c], 0)
			default:
				col.AppendFrom(b.Columns[c], i)
			}
		}
	}
	return out, moved, nil
}

// BackfillAppID is the txn appId of the commits of BackfillTable, with the version it read as
// the txn version: a rerun against the table it committed is a no-op.
const BackfillAppID = "medallion-backfill-columns"

// BackfillResult is what BackfillTable did to one table.
type BackfillResult struct {
	Table string `json:"table"`
	// Version is the commit, or the version read when nothing was to move.
	Version        int64 `json:"version"`
	Committed      bool  `json:"committed"`
	FilesRewritten int   `json:"filesRewritten"`
	ValuesMoved    int64 `json:"valuesMoved"`
	// RowsRecomputed counts the rows whose derived columns (BackfillOptions.Derive) changed.
	RowsRecomputed int64 `json:"rowsRecomputed,omitempty"`
}

// Derive recomputes the columns of rows that derive from their other columns (silver's
// computed columns) once Promote has moved values into them: it returns b with those columns
// recomputed (b itself when none changed) and the rows whose values changed, in order.
type Derive func(b *pq.Batch) (*pq.Batch, []int, error)

// BackfillOptions are BackfillTableWith's options; the zero value is BackfillTable.
type BackfillOptions struct {
	// Derive, when set, runs on every batch after Promote, and every file is read: a derived
	// column may be stale without a rescued value left to move (a computed column added to the
	// config after the rows were written holds NULL in them).
	Derive Derive
}

// BackfillTable moves rescued values into their declared columns (Promoter) in the table at
// path (for reports) with one copy-on-write commit (table.Rewrite) of the files that have any
// to move, marked dataChange=false (the rows hold the same values, moved between columns), so
// that the stream reading bronze and the joins reading silver skip it, and carrying
// txn(BackfillAppID, the version read). Files without a rescued value are not read. Nothing is
// committed when nothing is to move, so a rerun is a no-op; a crash before the commit leaves
// the table as it was (and unreferenced files for vacuum).
func BackfillTable(ctx context.Context, tbl *table.Table, path string, p *Promoter) (BackfillResult, error) {
	return BackfillTableWith(ctx, tbl, path, p, BackfillOptions{})
}

// BackfillTableWith is BackfillTable that also recomputes derived columns (opts.Derive) in the
// same commit: a file is rewritten when a value moves or a derived value changes, and the
// rerun is a no-op as well (the derived values then equal what Derive gives).
func BackfillTableWith(ctx context.Context, tbl *table.Table, path string, p *Promoter, opts BackfillOptions) (BackfillResult, error) {
	res := BackfillResult{Table: path}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return res, fmt.Errorf("bronze: backfill %s: %w", path, err)
	}
	res.Version = snap.Version()
	schema, err := snap.Schema()
	if err != nil {
		return res, fmt.Errorf("bronze: backfill %s: %w", path, err)
	}
	if schema.Field(ColRescued) == nil && opts.Derive == nil {
		return res, nil
	}
	fs, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		return res, fmt.Errorf("bronze: backfill %s: %w", path, err)
	}
	// one promotes and derives one batch: the new batch, the values moved, the rows changed.
	one := func(b *pq.Batch) (*pq.Batch, int64, []int, error) {
		out, n, err := p.Promote(b)
		if err != nil || opts.Derive == nil {
			return out, n, nil, err
		}
		out, rows, err := opts.Derive(out)
		return out, n, rows, err
	}
	// Which files have values to move: read once here, so that a table with none commits
	// nothing (Rewrite with a txn would commit the txn alone).
	var changed []*txlog.Add
	for _, a := range snap.Files() {
		if opts.Derive == nil && allNull(a.Stats, ColRescued) {
			continue
		}
		batches, err := fs.ReadFile(ctx, a)
		if err != nil {
			return res, fmt.Errorf("bronze: backfill %s: read %s: %w", path, a.Path, err)
		}
		for _, b := range batches {
			if _, n, rows, err := one(b); err != nil {
				return res, fmt.Errorf("bronze: backfill %s: %s: %w", path, a.Path, err)
			} else if n > 0 || len(rows) > 0 {
				changed = append(changed, a)
				break
			}
		}
	}
	if len(changed) == 0 {
		return res, nil
	}
	// With the table's change data feed on, each row changed is an update pair in the feed
	// (the adds and removes stay dataChange=false for the table's streaming readers), so that
	// the feed still gives the table.
	cw, err := tbl.NewChangeWriter(snap)
	if err != nil {
		return res, fmt.Errorf("bronze: backfill %s: %w", path, err)
	}
	var moved, recomputed int64
	rw, err := tbl.Rewrite(ctx, table.Rewrite{
		Snapshot: snap, Candidates: changed, NoDataChange: true, Changes: cw,
		Txn: &table.AppTxn{AppID: BackfillAppID, Version: snap.Version()},
		File: func(ctx context.Context, a *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			batches, err := read()
			if err != nil {
				return false, nil, err
			}
			out := make([]*pq.Batch, len(batches))
			for i, b := range batches {
				var n int64
				var rows []int
				if out[i], n, rows, err = one(b); err != nil {
					return false, nil, err
				}
				moved += n
				recomputed += int64(len(rows))
				if cw != nil && (n > 0 || len(rows) > 0) {
					if err := writeMoved(ctx, cw, b, out[i], rows); err != nil {
						return false, nil, err
					}
				}
			}
			return true, out, nil
		},
		Operation: func(r table.RewriteResult) txlog.Operation {
			return txlog.Operation{Name: "UPDATE",
				Parameters: map[string]any{"predicate": "medallion backfill-columns: rescued values moved into their declared columns"},
				Metrics: map[string]int64{"numAddedFiles": int64(len(r.Added)), "numRemovedFiles": int64(len(r.Removed)),
					"numUpdatedRows": moved + recomputed, "numOutputRows": r.RowsWritten, "numOutputBytes": r.BytesWritten}}
		},
	})
	if err != nil {
		return res, fmt.Errorf("bronze: backfill %s: %w", path, err)
	}
	res.Version, res.Committed = rw.Version, !rw.Skipped
	if res.Committed {
		res.FilesRewritten, res.ValuesMoved, res.RowsRecomputed = len(rw.Removed), moved, recomputed
	}
	return res, nil
}

// writeMoved writes the rows of before that Promote changed in after as update pairs: a
// row moved a value when its _rescued_data changed (the value left it); derived, in order, are
// the rows whose derived columns changed.
func writeMoved(ctx context.Context, cw *table.ChangeWriter, before, after *pq.Batch, derived []int) error {
	var rows []int
	if ri := before.Schema.FieldIndex(ColRescued); ri >= 0 {
		was, is := before.Columns[ri], after.Columns[ri]
		for i := range before.Len() {
			if was.IsNull(i) != is.IsNull(i) || (!was.IsNull(i) && !bytes.Equal(was.BytesAt(i), is.BytesAt(i))) {
				rows = append(rows, i)
			}
		}
	}
	if len(derived) > 0 {
		rows = mergeRows(rows, derived)
	}
	if err := cw.WriteRows(ctx, table.ChangePreimage, before, rows); err != nil {
		return err
	}
	return cw.WriteRows(ctx, table.ChangePostimage, after, rows)
}

// allNull reports whether an add's stats say column is null in every row.
func allNull(stats, column string) bool {
	var s struct {
		NumRecords *int64           `json:"numRecords"`
		NullCount  map[string]int64 `json:"nullCount"`
	}
	if stats == "" || json.Unmarshal([]byte(stats), &s) != nil || s.NumRecords == nil {
		return false
	}
	n, ok := s.NullCount[column]
	return ok && n == *s.NumRecords
}

// mergeRows is the union of two ascending row lists, ascending.
func mergeRows(a, b []int) []int {
	out := make([]int, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			out = append(out, b[j])
			j++
		default:
			out = append(out, a[i])
			i, j = i+1, j+1
		}
	}
	return out
}
