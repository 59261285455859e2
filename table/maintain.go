package table

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrRetentionTooShort reports a vacuum retention below the safety minimum without Force.
var ErrRetentionTooShort = errors.New("table: vacuum retention is shorter than the safety minimum")

// MinVacuumRetention is the shortest retention vacuum accepts without Force (Delta's
// default delta.deletedFileRetentionDuration): readers of older versions and writers still
// committing may reference files younger than this.
const MinVacuumRetention = 7 * 24 * time.Hour

// VacuumOptions tune Vacuum.
type VacuumOptions struct {
	// Retention keeps unreferenced files younger than this; zero keeps none (and needs Force).
	Retention time.Duration
	// Force allows a retention below MinVacuumRetention.
	Force bool
	// DryRun lists the files without deleting them.
	DryRun bool
}

// VacuumResult lists the files vacuum deleted (or would delete in a dry run).
type VacuumResult struct {
	Files []string
	Bytes int64
}

// Vacuum deletes data files that the latest version does not reference, that no tombstone
// younger than the retention protects, and that are older than the retention. A crash
// midway leaves some files deleted and others not: rerunning it finishes the job.
func (t *Table) Vacuum(ctx context.Context, opts VacuumOptions) (VacuumResult, error) {
	// A zero retention means zero (every unreferenced file), never a silent default: callers
	// pass MinVacuumRetention when they mean Delta's default. Callers name their own override
	// (a flag, a config key) when they report ErrRetentionTooShort.
	if opts.Retention < 0 {
		return VacuumResult{}, fmt.Errorf("table: vacuum retention %s is negative", opts.Retention)
	}
	if opts.Retention < MinVacuumRetention && !opts.Force {
		return VacuumResult{}, fmt.Errorf("%w: %s < %s", ErrRetentionTooShort, opts.Retention, MinVacuumRetention)
	}
	snap, err := t.log.Snapshot(ctx)
	if err != nil {
		return VacuumResult{}, err
	}
	cutoff := t.now().Add(-opts.Retention)
	keep := map[string]bool{}
	protect := func(path string, dv *txlog.DeletionVector) {
		keep[path] = true
		if dv != nil && dv.StorageType == "u" {
			if p, err := DeletionVectorPath(dv); err == nil {
				keep[p] = true
			}
		}
	}
	for _, a := range snap.Files() {
		protect(a.Path, a.DeletionVector)
	}
	for _, r := range snap.Tombstones() {
		if r.DeletionTimestamp == nil || time.UnixMilli(*r.DeletionTimestamp).After(cutoff) {
			protect(r.Path, r.DeletionVector)
		}
	}
	var res VacuumResult
	for info, err := range t.bucket.List(ctx, "", objstore.ListOptions{}) {
		if err != nil {
			return res, fmt.Errorf("table: vacuum list: %w", err)
		}
		if isHidden(info.Key) || keep[info.Key] || !info.ModTime.Before(cutoff) {
			continue
		}
		res.Files = append(res.Files, info.Key)
		res.Bytes += info.Size
	}
	if opts.DryRun {
		return res, nil
	}
	for _, k := range res.Files {
		if err := t.bucket.Delete(ctx, k); err != nil {
			return res, fmt.Errorf("table: vacuum delete %s: %w", k, err)
		}
	}
	return res, nil
}

// OptimizeOptions tune Optimize.
type OptimizeOptions struct {
	// TargetSize is the size of the files optimize writes; files at least this big are left
	// alone (default: the table's WriteOptions.TargetFileSize).
	TargetSize int64
	// Filter limits optimize to the partitions it may match (partition columns only).
	Filter Expr
}

// OptimizeResult reports what optimize changed.
type OptimizeResult struct {
	Version      int64 // -1 when nothing needed compaction
	FilesRemoved int
	FilesAdded   int
	BytesRemoved int64
	BytesAdded   int64
}

// Optimize bin-packs the small files of each partition into files of the target size, in one
// commit whose actions all have dataChange=false (streaming readers skip it).
func (t *Table) Optimize(ctx context.Context, opts OptimizeOptions) (OptimizeResult, error) {
	snap, schema, err := t.snapshotFor(ctx)
	if err != nil {
		return OptimizeResult{Version: -1}, err
	}
	if err := txlog.CheckWrite(snap.Protocol()); err != nil {
		return OptimizeResult{Version: -1}, err
	}
	target := opts.TargetSize
	if target <= 0 {
		target = t.write.withDefaults().TargetFileSize
	}
	var pred *Predicate
	if opts.Filter != nil {
		if pred, err = Bind(opts.Filter, schema, snap.PartitionColumns()); err != nil {
			return OptimizeResult{Version: -1}, err
		}
		if !pred.OnlyPartitionColumns() {
			return OptimizeResult{Version: -1}, fmt.Errorf("%w: optimize filter %s must use partition columns only", ErrBadPredicate, pred)
		}
	}
	groups := map[string][]*txlog.Add{}
	names := snap.PartitionColumns()
	physical := make([]string, len(names)) // partitionValues are keyed by physical name
	for i, n := range names {
		physical[i] = n
		if f := schema.Field(n); f != nil {
			physical[i] = f.PhysicalName()
		}
	}
	for _, a := range snap.Files() {
		if a.Size >= target || (pred != nil && !pred.MayMatch(a)) {
			continue
		}
		key := PartitionDir(physical, a.PartitionValues)
		groups[key] = append(groups[key], a)
	}
	keys := make([]string, 0, len(groups))
	for k, g := range groups {
		if len(g) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := OptimizeResult{Version: -1}
	if len(keys) == 0 {
		return res, nil
	}
	wopts := t.write
	wopts.TargetFileSize = target
	if wopts.StatsColumns == 0 {
		wopts.StatsColumns = statsColumns(snap.Metadata().Configuration)
	}
	w, err := NewDataWriter(t.bucket, schema, names, wopts)
	if err != nil {
		return res, err
	}
	w.now, w.dataChange = t.now, false
	fs := &FileScan{Bucket: t.bucket, Schema: schema, PartitionCols: names}
	var removes []*txlog.Remove
	var read []string
	for _, k := range keys {
		for _, a := range groups[k] {
			parts, err := fs.ReadFile(ctx, a)
			if err != nil {
				return res, err
			}
			for _, b := range parts {
				if err := w.Write(ctx, b); err != nil {
					return res, err
				}
			}
			removes = append(removes, t.RemoveOf(a, false))
			read = append(read, a.Path)
			res.BytesRemoved += a.Size
		}
	}
	adds, err := w.Close(ctx)
	if err != nil {
		return res, err
	}
	for _, a := range adds {
		res.BytesAdded += a.Size
	}
	tx := t.log.Begin(snap)
	tx.ReadFiles(read...)
	tx.Remove(removes...)
	tx.Add(adds...)
	predText := "[]"
	if pred != nil {
		predText = `["` + strings.ReplaceAll(pred.String(), `"`, `\"`) + `"]`
	}
	v, err := tx.Commit(ctx, txlog.Operation{Name: "OPTIMIZE",
		Parameters: map[string]any{"predicate": predText, "zOrderBy": "[]", "clusterBy": "[]", "auto": false},
		Metrics: map[string]int64{"numRemovedFiles": int64(len(removes)), "numAddedFiles": int64(len(adds)),
			"numRemovedBytes": res.BytesRemoved, "numAddedBytes": res.BytesAdded}})
	if err != nil {
		return res, err
	}
	res.Version, res.FilesRemoved, res.FilesAdded = v, len(removes), len(adds)
	return res, nil
}
