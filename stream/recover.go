package stream

// Recovery of a checkpoint that the identity checks refused (identity.go, docs/recovery.md):
// RecoverQueryID puts a lost query id back from the evidence the query left (its progress
// files, the txn ids of the tables it writes), and Rollback rolls a checkpoint back to the
// last batch every table it writes still holds, so that the lost batches run again with
// exactly their recorded offsets. Neither writes a table.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrRecoveryUnsafe reports a recovery that the evidence does not support: the command
// changes nothing and says what it found.
var ErrRecoveryUnsafe = errors.New("recovery refused")

// mergeLatePrefix is the txn app id merge-late writes to gold ("merge-late:" + query id): the
// late package owns it; it is evidence of the id here.
const mergeLatePrefix = "merge-late:"

// RecoveredID is what RecoverQueryID found and did.
type RecoveredID struct {
	QueryID string `json:"queryId"`
	// Written is false when metadata already held this id (nothing to do).
	Written bool `json:"written"`
	// Evidence names where the id was found: progress files and tables.
	Evidence []string `json:"evidence"`
}

// RecoverQueryID writes the lost metadata of the checkpoint at ckpt (a path in lake) back with
// the query id that its progress files and the tables it writes agree on. tables are the
// tables the query writes (by path), used when no commit record names them. It refuses
// (ErrRecoveryUnsafe) when the evidence names no id or more than one.
func RecoverQueryID(ctx context.Context, lake objstore.Bucket, ckpt string, tables []string) (RecoveredID, error) {
	d := checkpoint.Open(objstore.WithPrefix(lake, ckpt))
	if id, err := d.ReadQueryID(ctx); err == nil {
		return RecoveredID{QueryID: id}, nil
	} else if errors.Is(err, checkpoint.ErrNoQuery) {
		return RecoveredID{}, fmt.Errorf("%w: checkpoint %s has no batches: there is no id to recover (the query has not run)", ErrRecoveryUnsafe, ckpt)
	} else if !errors.Is(err, checkpoint.ErrQueryIDLost) {
		return RecoveredID{}, err
	}
	ids := map[string][]string{} // id -> evidence
	// Progress files: Spark's "id" field is the query id.
	batches, err := d.ProgressBatches(ctx)
	if err != nil {
		return RecoveredID{}, err
	}
	for _, n := range batches {
		data, err := d.ReadProgress(ctx, n)
		if err != nil {
			continue // cleaned up meanwhile
		}
		var p struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(data, &p) == nil && p.ID != "" {
			ids[p.ID] = appendOnce(ids[p.ID], ckpt+"/progress")
		}
	}
	// Tables: the ids whose txn the tables the last commit names hold, at the batch it
	// recorded or later; merge-late's "merge-late:<id>" too. Every table must agree.
	lastCommit, err := d.LatestCommit(ctx)
	if err != nil {
		return RecoveredID{}, err
	}
	last, err := d.LatestOffsets(ctx)
	if err != nil {
		return RecoveredID{}, err
	}
	marks := map[string]checkpoint.TableMark{}
	if lastCommit >= 0 {
		if c, err := d.ReadCommit(ctx, lastCommit); err == nil {
			marks = c.Tables
		}
	}
	if len(marks) == 0 {
		for _, p := range tables {
			marks[p] = checkpoint.TableMark{Batch: -1, Version: -1}
		}
	}
	var fromTables map[string]bool
	for _, p := range slices.Sorted(maps.Keys(marks)) {
		m := marks[p]
		snap, err := table.Open(objstore.WithPrefix(lake, p), table.Options{}).Latest(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			continue
		}
		if err != nil {
			return RecoveredID{}, fmt.Errorf("stream: table %s: %w", p, err)
		}
		here := map[string]bool{}
		for app, v := range snap.Txns() {
			id, merged := strings.CutPrefix(app, mergeLatePrefix)
			if uuid.Validate(id) != nil {
				continue
			}
			if merged || m.Batch < 0 || v >= m.Batch && v <= max(last, m.Batch) {
				here[id] = true
			}
		}
		if fromTables == nil {
			fromTables = here
		} else {
			maps.DeleteFunc(fromTables, func(id string, _ bool) bool { return !here[id] })
		}
		for id := range here {
			ids[id] = appendOnce(ids[id], p)
		}
	}
	// The id: the only one the progress files and the tables name, and every table names it.
	var cands []string
	for id := range ids {
		if fromTables == nil || fromTables[id] {
			cands = append(cands, id)
		}
	}
	slices.Sort(cands)
	if len(cands) != 1 || len(ids) != 1 {
		var found []string
		for _, id := range slices.Sorted(maps.Keys(ids)) {
			found = append(found, fmt.Sprintf("%s (in %s)", id, strings.Join(ids[id], ", ")))
		}
		if len(found) == 0 {
			found = []string{"none"}
		}
		return RecoveredID{}, fmt.Errorf("%w: checkpoint %s: the progress files and the tables do not agree on one query id; found: %s. "+
			"Write metadata by hand ({\"id\":\"...\"}) only if you know which id the tables' txn belong to (docs/recovery.md)",
			ErrRecoveryUnsafe, ckpt, strings.Join(found, "; "))
	}
	id := cands[0]
	m, _ := json.Marshal(map[string]string{"id": id})
	if err := objstore.PutBytesIfAbsent(ctx, objstore.WithPrefix(lake, ckpt), "metadata", m); err != nil {
		if errors.Is(err, objstore.ErrAlreadyExists) {
			return RecoveredID{}, fmt.Errorf("%w: checkpoint %s: metadata appeared meanwhile (another run?): check it", ErrRecoveryUnsafe, ckpt)
		}
		return RecoveredID{}, fmt.Errorf("stream: write checkpoint %s/metadata: %w", ckpt, err)
	}
	return RecoveredID{QueryID: id, Written: true, Evidence: ids[id]}, nil
}

func appendOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// RolledBack is what Rollback found and did.
type RolledBack struct {
	// From is the last committed batch before, To after (-1: none); batches To+1..From run
	// again, with their recorded offsets, on the query's next run.
	From int64 `json:"fromBatch"`
	To   int64 `json:"toBatch"`
	// Behind names each table that lacked a batch, with the last batch it holds.
	Behind map[string]int64 `json:"behind"`
}

// Rollback rolls the checkpoint at ckpt back to the last batch that every table its last
// commit record names still holds (by its txn): the commit records of the later batches are
// removed, newest first, and their offsets kept, so the next run re-runs them exactly as
// recorded (state version To+1 on), every table skipping what it holds. Nothing to do when no
// table is behind. It refuses (ErrRecoveryUnsafe) without a commit record naming the tables,
// or when a table is behind in a way a re-run cannot repair (its version below the record
// while it holds the batch), or when the offsets or the state the re-run needs are gone.
func Rollback(ctx context.Context, lake objstore.Bucket, ckpt string) (RolledBack, error) {
	d := checkpoint.Open(objstore.WithPrefix(lake, ckpt))
	id, err := d.ReadQueryID(ctx)
	if err != nil {
		return RolledBack{}, fmt.Errorf("stream: checkpoint %s: %w", ckpt, err)
	}
	from, err := d.LatestCommit(ctx)
	if err != nil {
		return RolledBack{}, err
	}
	rb := RolledBack{From: from, To: from, Behind: map[string]int64{}}
	if from < 0 {
		return rb, nil
	}
	c, err := d.ReadCommit(ctx, from)
	if err != nil {
		return rb, err
	}
	if len(c.Tables) == 0 {
		return rb, fmt.Errorf("%w: checkpoint %s: %s names no tables (written before medallion recorded them): "+
			"restore the missing _delta_log entries instead (docs/recovery.md)", ErrRecoveryUnsafe, ckpt, checkpoint.CommitsKey(from))
	}
	for _, p := range slices.Sorted(maps.Keys(c.Tables)) {
		m := c.Tables[p]
		snap, err := table.Open(objstore.WithPrefix(lake, p), table.Options{}).Latest(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			return rb, fmt.Errorf("%w: table %s does not exist: a re-run cannot rebuild a whole table from the "+
				"checkpoint's retained batches; restore the table (docs/recovery.md)", ErrRecoveryUnsafe, p)
		}
		if err != nil {
			return rb, fmt.Errorf("stream: table %s: %w", p, err)
		}
		held, ok := snap.TxnVersion(id)
		if !ok {
			held = -1
		}
		if held >= m.Batch {
			if snap.Version() < m.Version {
				return rb, fmt.Errorf("%w: table %s holds batch %d but is at version %d, below the recorded %d: "+
					"it was replaced, not rolled back; restore its _delta_log (docs/recovery.md)", ErrRecoveryUnsafe, p, held, snap.Version(), m.Version)
			}
			continue
		}
		rb.Behind[p] = held
		rb.To = min(rb.To, held)
	}
	if rb.To == from {
		return rb, nil
	}
	// The re-run needs every recorded offsets file from To+1 and the state version To+1.
	for n := rb.To + 1; n <= from; n++ {
		if _, err := d.ReadOffsets(ctx, n); err != nil {
			return rb, fmt.Errorf("%w: checkpoint %s: %s is needed to re-run batch %d: %v", ErrRecoveryUnsafe, ckpt, checkpoint.OffsetsKey(n), n, err)
		}
	}
	if rb.To >= 0 {
		if _, err := d.ReadState(ctx, rb.To+1); err != nil {
			return rb, fmt.Errorf("%w: checkpoint %s: state version %d is needed to re-run batch %d (it is beyond "+
				"state.min_batches_to_retain?): %v", ErrRecoveryUnsafe, ckpt, rb.To+1, rb.To+1, err)
		}
		// The commit record the re-run starts from must be there too.
		if _, err := d.ReadCommit(ctx, rb.To); err != nil {
			return rb, fmt.Errorf("%w: checkpoint %s: %v", ErrRecoveryUnsafe, ckpt, err)
		}
	}
	// Newest first: a crash in between leaves a checkpoint rolled back part of the way, which
	// a rerun of this command finishes (and which a query run also handles).
	for n := from; n > rb.To; n-- {
		if err := d.RemoveCommit(ctx, n); err != nil {
			return rb, err
		}
	}
	return rb, nil
}
