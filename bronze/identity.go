package bronze

// Identity and version checks of the ingest checkpoint (DESIGN §5). The app id of every
// table commit is derived from metadata.json, so a lost metadata.json must never become a new
// id: the tables would take every claimed batch as new. And each commits/N records the
// bronze and rejects versions that batch N committed at, so a run that finds a table behind
// its last commit record (a deleted _delta_log entry, a bucket restored from an older backup)
// stops instead of believing the lost batch is in the table.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrQueryIDLost reports an ingest checkpoint whose metadata.json is gone while it holds
// batches: a new id would ingest every landing object again.
var ErrQueryIDLost = errors.New("ingest checkpoint metadata.json (the ingest's id) is missing while the checkpoint has batches")

// ErrTableBehind reports bronze or rejects behind the ingest checkpoint's last commit record:
// the table lacks a batch the checkpoint calls committed, whose rows would never be ingested.
var ErrTableBehind = errors.New("table is behind the ingest checkpoint")

// checkLostID is called when metadata.json is missing: it refuses when the checkpoint holds
// batches anyway. what names the checkpoint in the error.
func checkLostID(ctx context.Context, ckpt objstore.Bucket, what string) error {
	for _, dir := range []string{"batches/", "commits/"} {
		for info, err := range ckpt.List(ctx, dir, objstore.ListOptions{}) {
			if err != nil {
				return fmt.Errorf("bronze: list %s %s: %w", what, dir, err)
			}
			return fmt.Errorf("bronze: %s: %w: %s exists. Recover the id from the tables' txn: medallion recover "+
				"query-id --config F --query SOURCE --ingest (docs/recovery.md)", what, ErrQueryIDLost, info.Key)
		}
	}
	return nil
}

// checkCommitted refuses to run when bronze or rejects lacks the txn of the last batch the
// checkpoint calls committed, or is at a version below the one that batch committed at, or
// a RESTORE after that version took it back before it. Batches commit to the tables in batch
// order, so the last one stands for all. It reads one commit record, each table's snapshot,
// which the run's commits reuse (x.snapshot), and the commits after the recorded version.
func (x *Ingester) checkCommitted(ctx context.Context, st *state, what string) error {
	last := int64(-1)
	for id := range st.committed {
		last = max(last, id)
	}
	if last < 0 {
		return x.checkFresh(ctx, st, what)
	}
	data, err := objstore.ReadAll(ctx, x.ckpt, commitKey(last))
	if err != nil {
		return fmt.Errorf("bronze: read %s %s: %w", what, commitKey(last), err)
	}
	var rec commitRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return fmt.Errorf("bronze: %s %s is corrupt: %w", what, commitKey(last), err)
	}
	for _, t := range []struct {
		tbl     *table.Table
		path    string
		version int64
	}{{x.bronze, x.opts.BronzePath, rec.BronzeVersion}, {x.rejects, x.opts.RejectsPath, rec.RejectsVersion}} {
		snap, err := x.snapshot(ctx, t.tbl)
		if errors.Is(err, txlog.ErrTableNotFound) {
			return fmt.Errorf("bronze: %w: table %s does not exist, but %s/%s recorded batch %d committed at its version %d; %s",
				ErrTableBehind, t.path, what, commitKey(last), last, t.version, behindHint)
		}
		if err != nil {
			return fmt.Errorf("bronze: open %s: %w", t.path, err)
		}
		txn, ok := snap.TxnVersion(st.appID)
		switch {
		case snap.Version() < t.version:
			return fmt.Errorf("bronze: %w: table %s is at version %d, but %s/%s recorded batch %d committed at version %d; %s",
				ErrTableBehind, t.path, snap.Version(), what, commitKey(last), last, t.version, behindHint)
		case !ok || txn < last:
			has := "no txn"
			if ok {
				has = fmt.Sprintf("txn up to batch %d", txn)
			}
			return fmt.Errorf("bronze: %w: table %s has %s of %s, but %s/%s recorded batch %d committed (at version %d); %s",
				ErrTableBehind, t.path, has, st.appID, what, commitKey(last), last, t.version, behindHint)
		}
		r, err := t.tbl.Log().RestoredPast(ctx, t.version)
		if err != nil {
			return fmt.Errorf("bronze: %s: %w", t.path, err)
		}
		if r != nil {
			return fmt.Errorf("bronze: %w: %s; %s/%s recorded batch %d committed at its version %d; %s (docs/recovery.md)",
				ErrTableBehind, r.Describe(t.path), what, commitKey(last), last, t.version, r.UndoHint())
		}
	}
	return nil
}

// checkFresh refuses the first batch of a new ingest checkpoint when bronze holds another
// ingest's batches: the checkpoint was deleted or stream.checkpoint points somewhere new, and
// every landing object would go into bronze a second time. Rejects is not checked: sources
// share it.
func (x *Ingester) checkFresh(ctx context.Context, st *state, what string) error {
	snap, err := x.snapshot(ctx, x.bronze)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bronze: open %s: %w", x.opts.BronzePath, err)
	}
	var other []string
	for app := range snap.Txns() {
		if strings.HasPrefix(app, ingestAppPrefix) && app != st.appID {
			other = append(other, app)
		}
	}
	if len(other) == 0 {
		return nil
	}
	slices.Sort(other)
	return fmt.Errorf("bronze: %w: table %s holds the batches of another ingest (txn %s), but %s has none: a new "+
		"ingest would write every landing object into it again. Put the checkpoint back (stream.checkpoint as it was; "+
		"a lost metadata.json: medallion recover query-id --config F --query SOURCE --ingest), or start over on new "+
		"tables: new bronze, silver, quarantine and gold paths with the new checkpoint (docs/recovery.md)",
		ErrTableBehind, x.opts.BronzePath, strings.Join(other, ", "), what)
}

const behindHint = "a _delta_log entry was deleted or the table restored from an older backup. Put the missing entries " +
	"back if you have them; otherwise roll the ingest checkpoint back to the last batch both tables hold, so the lost " +
	"batches are ingested again from the same landing objects: medallion recover rollback --config F --query SOURCE " +
	"--ingest (docs/recovery.md)"

// ingestAppPrefix starts the txn app id of every ingest commit: the prefix, then the id in
// metadata.json.
const ingestAppPrefix = "medallion-ingest-"

// ErrRecoveryUnsafe reports a recovery that the evidence does not support: nothing changed.
var ErrRecoveryUnsafe = errors.New("recovery refused")

// IngestRollback is what Rollback found and did.
type IngestRollback struct {
	// From is the last committed batch before, To after (-1: none); batches To+1..From are
	// pending and the next run ingests them again from their recorded objects.
	From int64 `json:"fromBatch"`
	To   int64 `json:"toBatch"`
	// Behind names each table that lacked a batch, with the last batch it holds (-1: none).
	Behind map[string]int64 `json:"behind"`
}

// Rollback rolls the ingest checkpoint back to the last batch both bronze and rejects hold
// (by their txn): the commit records of the later batches are removed, newest first, so that
// the next run re-runs them as pending batches, with the same objects, byte ranges and ingest
// time, and each table commits what it lacks. Nothing to do when no table is behind.
func (x *Ingester) Rollback(ctx context.Context) (IngestRollback, error) {
	what := "ingest checkpoint " + x.opts.CheckpointPath
	meta, err := objstore.ReadAll(ctx, x.ckpt, "metadata.json")
	if err != nil {
		return IngestRollback{}, fmt.Errorf("bronze: %s: read metadata.json: %w (a lost id: medallion recover query-id --ingest first)", what, err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(meta, &m); err != nil || m.ID == "" {
		return IngestRollback{}, fmt.Errorf("bronze: %s: metadata.json is corrupt (%v)", what, err)
	}
	appID := ingestAppPrefix + m.ID
	committed, err := x.committedBatches(ctx, what)
	if err != nil {
		return IngestRollback{}, err
	}
	rb := IngestRollback{From: -1, To: -1, Behind: map[string]int64{}}
	if len(committed) == 0 {
		return rb, nil
	}
	rb.From = committed[len(committed)-1]
	rb.To = rb.From
	for _, t := range []struct {
		tbl  *table.Table
		path string
	}{{x.bronze, x.opts.BronzePath}, {x.rejects, x.opts.RejectsPath}} {
		snap, err := t.tbl.Latest(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			rb.Behind[t.path], rb.To = -1, -1
			continue
		}
		if err != nil {
			return rb, fmt.Errorf("bronze: open %s: %w", t.path, err)
		}
		held, ok := snap.TxnVersion(appID)
		if !ok {
			held = -1
		}
		if held < rb.From {
			rb.Behind[t.path] = held
			rb.To = min(rb.To, held)
		}
	}
	for id := rb.To + 1; id <= rb.From; id++ {
		if _, err := x.ckpt.Stat(ctx, batchKey(id)); err != nil {
			return rb, fmt.Errorf("%w: %s: %s is needed to ingest batch %d again: %v", ErrRecoveryUnsafe, what, batchKey(id), id, err)
		}
	}
	// Newest first: a crash in between leaves a checkpoint rolled back part of the way, which
	// the next run refuses until this command is run again.
	for _, id := range slices.Backward(committed) {
		if id <= rb.To {
			break
		}
		if err := x.ckpt.Delete(ctx, commitKey(id)); err != nil && !errors.Is(err, objstore.ErrNotFound) {
			return rb, fmt.Errorf("bronze: %s: remove %s: %w", what, commitKey(id), err)
		}
	}
	return rb, nil
}

// RecoverID writes a lost metadata.json back with the id whose txn both bronze and rejects
// hold at the last committed batch (or a later claimed one). It refuses (ErrRecoveryUnsafe)
// when they name no id or more than one. It returns the id.
func (x *Ingester) RecoverID(ctx context.Context) (string, error) {
	what := "ingest checkpoint " + x.opts.CheckpointPath
	if _, err := x.ckpt.Stat(ctx, "metadata.json"); err == nil {
		return "", fmt.Errorf("%w: %s has metadata.json: nothing to recover", ErrRecoveryUnsafe, what)
	}
	committed, err := x.committedBatches(ctx, what)
	if err != nil {
		return "", err
	}
	claimed := int64(-1)
	for info, err := range x.ckpt.List(ctx, "batches/", objstore.ListOptions{}) {
		if err != nil {
			return "", fmt.Errorf("bronze: list %s batches: %w", what, err)
		}
		var id int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(info.Key, "batches/"), "%020d.json", &id); err == nil {
			claimed = max(claimed, id)
		}
	}
	last := int64(-1)
	if len(committed) > 0 {
		last = committed[len(committed)-1]
	}
	if last < 0 {
		return "", fmt.Errorf("%w: %s has no committed batch: no table holds its id", ErrRecoveryUnsafe, what)
	}
	var cands map[string]bool
	for _, t := range []struct {
		tbl  *table.Table
		path string
	}{{x.bronze, x.opts.BronzePath}, {x.rejects, x.opts.RejectsPath}} {
		snap, err := t.tbl.Latest(ctx)
		if err != nil {
			return "", fmt.Errorf("bronze: open %s: %w", t.path, err)
		}
		here := map[string]bool{}
		for app, v := range snap.Txns() {
			if id, ok := strings.CutPrefix(app, ingestAppPrefix); ok && v >= last && v <= max(claimed, last) {
				here[id] = true
			}
		}
		if cands == nil {
			cands = here
		} else {
			maps.DeleteFunc(cands, func(id string, _ bool) bool { return !here[id] })
		}
	}
	if len(cands) != 1 {
		return "", fmt.Errorf("%w: %s: bronze and rejects do not agree on one ingest id at batch %d; found %v. Write "+
			"metadata.json by hand ({\"id\":\"...\"}) only if you know which id their txn belong to (docs/recovery.md)",
			ErrRecoveryUnsafe, what, last, slices.Sorted(maps.Keys(cands)))
	}
	id := slices.Collect(maps.Keys(cands))[0]
	data, _ := json.Marshal(map[string]string{"id": id})
	if err := objstore.PutBytesIfAbsent(ctx, x.ckpt, "metadata.json", data); err != nil {
		return "", fmt.Errorf("bronze: %s: write metadata.json: %w", what, err)
	}
	return id, nil
}

// committedBatches lists the ids of the commit records, in order.
func (x *Ingester) committedBatches(ctx context.Context, what string) ([]int64, error) {
	var ids []int64
	for info, err := range x.ckpt.List(ctx, "commits/", objstore.ListOptions{}) {
		if err != nil {
			return nil, fmt.Errorf("bronze: list %s commits: %w", what, err)
		}
		var id int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(info.Key, "commits/"), "%020d.json", &id); err == nil {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Rollback is Ingester.Rollback for the Kafka ingest checkpoint (same layout).
func (x *KafkaIngester) Rollback(ctx context.Context) (IngestRollback, error) {
	return x.b.Rollback(ctx)
}

// RecoverID is Ingester.RecoverID for the Kafka ingest checkpoint.
func (x *KafkaIngester) RecoverID(ctx context.Context) (string, error) { return x.b.RecoverID(ctx) }
