package stream

// Identity and version checks (DESIGN §5): every commits/N records, for each table the query
// writes, the last batch whose txn(query id, batch) it holds and the version that commit made
// (checkpoint.Commit.Tables). A run starts only when every table is at least there, and when
// every table the query reads as a stream is at least at the version its offsets read: a
// deleted _delta_log entry, a bucket restored from an older backup, or a RESTORE commit that
// took a written table back before its recorded commit stops the query with
// checkpoint.ErrTableBehind instead of losing rows or counting them twice. The checks use the
// checkpoint's last entries, the latest bronze snapshot every run loads, and for each written
// table one small read of its recorded commit and one of each commit after it, once per run,
// never per batch.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// tableMarks collects what one batch committed to each table: its path in the lake and the
// version of the commit (or of the snapshot that already held the batch's txn). The sinks
// write on goroutines of their own, hence the lock.
type tableMarks struct {
	mu    sync.Mutex
	batch int64
	paths map[*table.Table]string
	got   map[string]checkpoint.TableMark
}

func newTableMarks(batch int64, paths map[*table.Table]string) *tableMarks {
	return &tableMarks{batch: batch, paths: paths, got: map[string]checkpoint.TableMark{}}
}

// wrote records that t holds the batch's txn: committed at version v, or (skipped) found in a
// snapshot of version v, which may hold later commits of other writers (a shared rejects
// table): then the version recorded stays the one before, a lower bound of the batch's commit,
// so that losing another writer's commit never reads as losing this query's. A nil receiver
// or a negative v (nothing written) records nothing.
func (m *tableMarks) wrote(t *table.Table, v int64, skipped bool) {
	if m == nil || v < 0 {
		return
	}
	if skipped {
		v = -1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.paths[t]; ok {
		m.got[p] = checkpoint.TableMark{Batch: m.batch, Version: v}
	}
}

// over returns prev with this batch's marks on top: what commits/N records.
func (m *tableMarks) over(prev map[string]checkpoint.TableMark) map[string]checkpoint.TableMark {
	out := maps.Clone(prev)
	if out == nil {
		out = map[string]checkpoint.TableMark{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, g := range m.got {
		if g.Version < 0 {
			g.Version = out[p].Version // a skipped write: the last version known to be this query's
		}
		out[p] = g
	}
	return out
}

// checkWritten refuses to start when a table the checkpoint recorded is behind it. byPath
// are the tables the query writes now; a recorded table the config no longer names is not
// checked (the query no longer writes it). The usual case costs one small read a table: the
// recorded commit is there and carries the recorded txn (commitHolds); only when it does not
// (a table gone back; a recorded version that is a lower bound; a commit removed by log
// cleanup) is the table's snapshot loaded to decide. Then a listing of the commits after the
// recorded one, and a read of each, finds a RESTORE that took the table back before it (a new
// version that keeps every txn, so neither check above sees it).
func checkWritten(ctx context.Context, ckpt, queryID string, marks map[string]checkpoint.TableMark, byPath map[string]*table.Table) error {
	for p, m := range marks {
		t := byPath[p]
		if t == nil {
			continue
		}
		if !commitHolds(ctx, t.Bucket(), m.Version, queryID, m.Batch) {
			snap, err := t.Latest(ctx)
			if errors.Is(err, txlog.ErrTableNotFound) {
				snap, err = nil, nil
			}
			if err != nil {
				return fmt.Errorf("stream: table %s: %w", p, err)
			}
			if err := checkpoint.CheckTable(p, ckpt, queryID, snap, m); err != nil {
				return fmt.Errorf("stream: %w", err)
			}
		}
		if err := checkpoint.CheckRestored(ctx, p, ckpt, t.Log(), m); err != nil {
			return fmt.Errorf("stream: %w", err)
		}
	}
	return nil
}

// checkMainMoved refuses to start when the table every other written table's rows come from
// (main: silver, or a join's joined table) holds none of the query's batches while a table
// fed from it (derived: the golds and quarantines) does: main's path changed in the config.
// The query would go on writing a new, partial main table, and what reads main as the whole
// (replay from silver, refresh, the exact dedup of old resends) would take it for everything:
// a replay then deletes gold's windows that the old table held. Marks are cumulative, so a
// query that ever wrote a derived table wrote main too; a checkpoint without marks (written
// before they existed) is not checked.
func checkMainMoved(ckpt string, marks map[string]checkpoint.TableMark, main string, derived, written []string) error {
	recorded, gone := recordedTables(marks, written)
	if recorded[samePath(main)] || len(marks) == 0 {
		return nil
	}
	var fed []string
	for _, p := range derived {
		if recorded[samePath(p)] {
			fed = append(fed, p)
		}
	}
	if len(fed) == 0 {
		return nil
	}
	return fmt.Errorf("%w: table %s holds none of the batches checkpoint %s recorded, which wrote %s from it; "+
		"its path changed in the config (the checkpoint recorded tables the config no longer names: %v)? "+
		"Put the old path back; a query's tables cannot move. To start over on new tables, give the query a new "+
		"checkpoint and new silver, quarantine and gold paths together (docs/schema-evolution.md)",
		checkpoint.ErrTableBehind, main, ckpt, strings.Join(fed, ", "), gone)
}

// samePath is a table path as the identity checks compare them: "silver/events/" is the
// table "silver/events", a trailing slash is not a move.
func samePath(p string) string { return strings.TrimSuffix(p, "/") }

// recordedTables are the table paths the checkpoint's marks name (by samePath), and gone,
// sorted, those of them the query no longer writes.
func recordedTables(marks map[string]checkpoint.TableMark, written []string) (recorded map[string]bool, gone []string) {
	recorded = map[string]bool{}
	for p := range marks {
		recorded[samePath(p)] = true
		if !slices.ContainsFunc(written, func(w string) bool { return samePath(w) == samePath(p) }) {
			gone = append(gone, p)
		}
	}
	slices.Sort(gone)
	return recorded, gone
}

// goldAt is a gold table of a query as checkGoldMoved sees it: its name, its path and the
// definition its table records (PropDefinition).
type goldAt struct {
	name, path, def string
}

// checkGoldMoved refuses to start when a gold's table path changed in the config while its
// name and definition stayed: the stream would go on from its state into a new, empty table,
// which then holds only the windows closed from now on, and merge-late would fold late rows
// into windows it lacks. It is told from a gold that never emitted a row (also not recorded)
// by a recorded table the config no longer names whose definition is the gold's, and a
// configured table without rows. It reads tables only in that case.
func checkGoldMoved(ctx context.Context, lake objstore.Bucket, ckpt string, marks map[string]checkpoint.TableMark, golds []goldAt, written []string,
	byPath map[string]*table.Table) error {
	recorded, gone := recordedTables(marks, written)
	if len(gone) == 0 {
		return nil
	}
	defs := map[string]string{} // a gone table's recorded definition, read once
	for _, g := range golds {
		if recorded[samePath(g.path)] {
			continue
		}
		if t := byPath[g.path]; t != nil {
			snap, err := t.Latest(ctx)
			if err != nil && !errors.Is(err, txlog.ErrTableNotFound) {
				return fmt.Errorf("table %s: %w", g.path, err)
			}
			if err == nil && len(snap.Files()) > 0 {
				continue // rows of its own: a refresh built it
			}
		}
		for _, o := range gone {
			d, ok := defs[o]
			if !ok {
				snap, err := table.Open(objstore.WithPrefix(lake, o), table.Options{}).Latest(ctx)
				if err == nil {
					d = snap.Metadata().Configuration[PropDefinition]
				} else if !errors.Is(err, txlog.ErrTableNotFound) {
					return fmt.Errorf("table %s: %w", o, err)
				}
				defs[o] = d
			}
			if d != "" && d == g.def {
				return fmt.Errorf("%w: gold %s's table %s holds no rows, but checkpoint %s recorded batches written to %s, "+
					"a table of the same definition that the config no longer names: its path changed in the config? "+
					"The stream would go on from its state into the new table, which would hold only the windows closed from now on. "+
					"Put the old path back, or build the new table from silver: stop the stream and run `medallion run refresh --table %s`",
					checkpoint.ErrTableBehind, g.name, g.path, ckpt, o, g.name)
			}
		}
	}
	return nil
}

// checkFreshQuery refuses the first batch of a new query (a checkpoint without batches) when a
// table it would write already holds another query's batches: the checkpoint was deleted or
// stream.checkpoint points somewhere new. The new query would read its input from the start
// into those tables and count every row twice. Only the tables one query owns are checked
// (main and derived), not the rejects table that sources share.
func checkFreshQuery(ctx context.Context, ckpt, queryID string, paths []string, byPath map[string]*table.Table) error {
	for _, p := range paths {
		t := byPath[p]
		if t == nil {
			continue
		}
		snap, err := t.Latest(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stream: table %s: %w", p, err)
		}
		var other []string
		for app := range snap.Txns() {
			if !strings.Contains(app, queryID) {
				other = append(other, app)
			}
		}
		if len(other) == 0 {
			continue
		}
		slices.Sort(other)
		return fmt.Errorf("%w: table %s holds the batches of another query (txn %s), but checkpoint %s has none: "+
			"a new query (%s) would read its input from the start into it and count every row twice. "+
			"Put the query's checkpoint back (stream.checkpoint as it was; a lost metadata file: medallion recover "+
			"query-id), or start over on new tables: new silver, quarantine and gold paths with the new checkpoint, "+
			"into which you copy the old checkpoint's ingest/ folder so that ingest goes on (docs/recovery.md)", checkpoint.ErrTableBehind, p, strings.Join(other, ", "), ckpt, queryID)
	}
	return nil
}

// commitHolds reports whether the table's commit of version v exists and carries txn(appID,
// batch): then the table is at v or later and holds the batch. Any failure to tell is false.
func commitHolds(ctx context.Context, b objstore.Bucket, v int64, appID string, batch int64) bool {
	actions, err := txlog.ReadActions(ctx, b, v)
	if err != nil {
		return false
	}
	for _, a := range actions {
		if a.Txn != nil && a.Txn.AppID == appID && a.Txn.Version == batch {
			return true
		}
	}
	return false
}

// checkRead refuses to start when a table the query reads as a stream is at a version below
// end, the furthest offset a batch of the checkpoint reads it to (offsetsKey names that batch).
func checkRead(ctx context.Context, what, ckpt, offsetsKey string, src *source.Source, end *source.Offset) error {
	if end == nil {
		return nil
	}
	latest, _, err := src.Latest(ctx)
	if err != nil {
		return fmt.Errorf("stream: table %s: %w", what, err)
	}
	if err := checkpoint.CheckRead(what, ckpt, offsetsKey, latest, end); err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	return nil
}

// furthestRead is the offsets entry of the last recorded batch (offsets/h.Recorded), which a
// rolled-back checkpoint still has to re-run: what the inputs must hold.
func furthestRead(ctx context.Context, d *checkpoint.Dir, h checkpoint.Head) (*checkpoint.Offsets, int64, error) {
	if h.Recorded <= h.Last || h.Entry == nil {
		return h.Entry, h.Last, nil
	}
	e, err := d.ReadOffsets(ctx, h.Recorded)
	return e, h.Recorded, err
}
