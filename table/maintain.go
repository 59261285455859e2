package table

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
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
// younger than the retention protects, and that are older than the retention; and change data
// files (_change_data/) older than the retention that no version committed within it names. A crash
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
	// Vacuum deletes files, so it runs the writer checks ("VACUUM Protocol Check"): a writer
	// feature it does not know may own files it would take for orphans.
	if err := txlog.CheckWrite(snap.Protocol(), snap.Metadata(), txlog.WriteLog); err != nil {
		return VacuumResult{}, err
	}
	cutoff := t.now().Add(-opts.Retention)
	keep := map[string]bool{}
	var lookupErr error // a DV vacuum could not look up: deleting anything then is unsafe
	protect := func(path string, dv *txlog.DeletionVector) {
		keep[path] = true
		switch {
		case dv == nil:
		case dv.StorageType == "u":
			if p, err := DeletionVectorPath(dv); err == nil {
				keep[p] = true
			}
		case dv.StorageType == "p":
			// An absolute path into the table's own root is a file vacuum would otherwise
			// see as unreferenced; one elsewhere is not ours to delete anyway.
			k, err := dvKeyInTable(ctx, t.bucket, dv.PathOrInlineDv)
			switch {
			case err == nil:
				keep[k] = true
			case !errors.Is(err, objstore.ErrNotFound) && lookupErr == nil:
				lookupErr = err
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
	if lookupErr != nil {
		return VacuumResult{}, fmt.Errorf("table: vacuum: %w", lookupErr)
	}
	var res VacuumResult
	var changeFiles []objstore.ObjectInfo // old enough, if no version within retention names them
	for info, err := range t.bucket.List(ctx, "", objstore.ListOptions{}) {
		if err != nil {
			return res, fmt.Errorf("table: vacuum list: %w", err)
		}
		change := strings.HasPrefix(info.Key, ChangeDataDir)
		if (isHidden(info.Key) && !change) || keep[info.Key] || !info.ModTime.Before(cutoff) {
			continue
		}
		if change {
			changeFiles = append(changeFiles, info)
			continue
		}
		res.Files = append(res.Files, info.Key)
		res.Bytes += info.Size
	}
	if len(changeFiles) > 0 {
		named, err := t.changeFilesSince(ctx, snap.Version(), cutoff)
		if err != nil {
			return res, fmt.Errorf("table: vacuum: %w", err)
		}
		for _, info := range changeFiles {
			if !named[info.Key] {
				res.Files = append(res.Files, info.Key)
				res.Bytes += info.Size
			}
		}
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

// changeFilesSince returns the change data files (cdc actions) the versions committed at or
// after cutoff name, reading commits down from latest until one is older than the cutoff or
// its log entry is gone. Change data files are in no snapshot: a version names its own, and a
// reader of the feed needs them as long as that version is within the retention.
func (t *Table) changeFilesSince(ctx context.Context, latest int64, cutoff time.Time) (map[string]bool, error) {
	named := map[string]bool{}
	for v := latest; v >= 0; v-- {
		data, err := objstore.ReadAll(ctx, t.bucket, txlog.CommitKey(v))
		if errors.Is(err, objstore.ErrNotFound) {
			break
		}
		if err != nil {
			return nil, err
		}
		actions, err := txlog.ParseActions(data)
		if err != nil {
			return nil, fmt.Errorf("version %d: %w", v, err)
		}
		var paths []string
		old := false
		for _, a := range actions {
			switch {
			case a.CDC != nil:
				paths = append(paths, a.CDC.Path)
			case a.CommitInfo != nil:
				ts := a.CommitInfo.Timestamp
				if a.CommitInfo.InCommitTimestamp != nil {
					ts = *a.CommitInfo.InCommitTimestamp
				}
				old = time.UnixMilli(ts).Before(cutoff)
			}
		}
		if old {
			break // this version and those before it are outside the retention
		}
		for _, p := range paths {
			named[p] = true
		}
	}
	return named, nil
}

// OptimizeOptions tune Optimize.
type OptimizeOptions struct {
	// TargetSize is the size of the files optimize writes; files at least this big are left
	// alone (default: the table's WriteOptions.TargetFileSize).
	TargetSize int64
	// Filter limits optimize to the partitions it may match (partition columns only).
	Filter sqlexpr.Expr
}

// OptimizeResult reports what optimize changed.
type OptimizeResult struct {
	Version      int64 // -1 when nothing needed compaction
	FilesRemoved int
	FilesAdded   int
	BytesRemoved int64
	BytesAdded   int64
}

// OptimizeTargetSizeTag is the add-action tag optimize writes on its output files (the name
// Databricks uses), with the target size as its value: it is how a later run recognizes a file
// it produced itself.
const OptimizeTargetSizeTag = "OPTIMIZE_TARGET_SIZE"

// PackedSizeTag is the add-action tag with the bytes of the files optimize merged into this one:
// the size the next optimize with the same target packs it by (see Optimize).
const PackedSizeTag = "medallion.packedSize"

// packedSize is the size optimize packs a file by: what it was packed from, if optimize wrote
// it for this target (the larger of that and its real size), else its real size.
func packedSize(a *txlog.Add, target string) int64 {
	if a.Tags[OptimizeTargetSizeTag] != target {
		return a.Size
	}
	n, err := strconv.ParseInt(a.Tags[PackedSizeTag], 10, 64)
	if err != nil {
		return a.Size
	}
	return max(n, a.Size)
}

// Optimize bin-packs the small files of each partition into files of at most the target size,
// in one commit whose actions all have dataChange=false (streaming readers skip it).
//
// It settles: a second run over an unchanged table is a no-op (no commit). Each bin becomes
// exactly one output file (the writer does not roll inside a bin), and the bins are packed
// first-fit decreasing, which leaves no two bins whose sizes add up to the target or less. The
// outputs are smaller than the files they merged (one footer, better compression), so packing
// them again by their real sizes could pair two of them, and each run would chase that
// shrinkage; instead each output records the bytes it was packed from (PackedSizeTag) and is
// packed by that size while the target stays the same. Then the next run sees exactly the
// sizes the previous one packed, no two of which fit together: every bin holds one file, and
// nothing is rewritten. Files appended later are packed with the earlier outputs as usual.
func (t *Table) Optimize(ctx context.Context, opts OptimizeOptions) (OptimizeResult, error) {
	snap, schema, err := t.snapshotFor(ctx)
	if err != nil {
		return OptimizeResult{Version: -1}, err
	}
	if _, err := CheckWritable(snap, schema, txlog.WriteRearrange); err != nil {
		return OptimizeResult{Version: -1}, err
	}
	target := opts.TargetSize
	if target <= 0 {
		target = t.write.WithDefaults().TargetFileSize
	}
	var pred *sqlexpr.Predicate
	if opts.Filter != nil {
		if pred, err = sqlexpr.Bind(opts.Filter, schema, snap.PartitionColumns()); err != nil {
			return OptimizeResult{Version: -1}, err
		}
		if !pred.OnlyPartitionColumns() {
			return OptimizeResult{Version: -1}, fmt.Errorf("%w: optimize filter %s must use partition columns only", sqlexpr.ErrBadPredicate, pred)
		}
	}
	tag := strconv.FormatInt(target, 10)
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
		if a.Size >= target || packedSize(a, tag) >= target || (pred != nil && !pred.MayMatch(a)) {
			continue
		}
		key := pq.PartitionDir(physical, a.PartitionValues)
		groups[key] = append(groups[key], a)
	}
	keys := make([]string, 0, len(groups))
	for k, g := range groups {
		if len(g) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var bins [][]*txlog.Add
	for _, k := range keys {
		for _, b := range packBins(groups[k], func(a *txlog.Add) int64 { return packedSize(a, tag) }, target) {
			if len(b) > 1 {
				bins = append(bins, b)
			}
		}
	}
	res := OptimizeResult{Version: -1}
	if len(bins) == 0 {
		return res, nil
	}
	wopts := t.write
	// One bin, one file: the bin already fits the target, and a writer rolling on its own
	// estimate would cut outputs below the target that the next run would pick up again.
	wopts.TargetFileSize = math.MaxInt64
	if wopts.StatsColumns == 0 {
		wopts.StatsColumns = statsColumns(snap.Metadata().Configuration)
	}
	fs := &FileScan{Bucket: t.bucket, Schema: schema, PartitionCols: names, OpenURL: t.open}
	var removes []*txlog.Remove
	var read []string
	var adds []*txlog.Add
	for _, bin := range bins {
		w, err := NewDataWriter(t.bucket, schema, names, wopts)
		if err != nil {
			return res, err
		}
		w.now, w.dataChange = t.now, false
		var packed int64
		for _, a := range bin {
			packed += packedSize(a, tag)
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
		out, err := w.Close(ctx)
		if err != nil {
			return res, err
		}
		for _, a := range out {
			a.Tags = map[string]string{OptimizeTargetSizeTag: tag, PackedSizeTag: strconv.FormatInt(packed, 10)}
			// A bin is one output file: its rows are the bin's, so their row tags add up.
			if rt := mergedRowTag(bin, a); rt != "" && len(out) == 1 {
				a.Tags[RowTagKey] = rt
			}
			res.BytesAdded += a.Size
		}
		adds = append(adds, out...)
	}
	return t.commitOptimize(ctx, snap, pred, read, removes, adds, res)
}

// commitOptimize commits optimize's rewrite of the files read (removes) into adds, as Delta
// records an OPTIMIZE, and completes res.
func (t *Table) commitOptimize(ctx context.Context, snap *txlog.Snapshot, pred *sqlexpr.Predicate, read []string,
	removes []*txlog.Remove, adds []*txlog.Add, res OptimizeResult) (OptimizeResult, error) {
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

// packBins packs files smaller than target into bins whose sizes add up to at most target,
// first-fit decreasing (deterministic: ties broken by path). First fit leaves no two bins
// that would fit together, so the packing itself does not leave work for a next run.
func packBins(files []*txlog.Add, size func(*txlog.Add) int64, target int64) [][]*txlog.Add {
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b *txlog.Add) int {
		if c := cmp.Compare(size(b), size(a)); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	var bins [][]*txlog.Add
	var load []int64
	// open lists the bins that can still take the smallest file: the files come largest
	// first, so a bin that cannot take the last one is full for good and costs nothing more.
	var open []int
	smallest := int64(0)
	if len(files) > 0 {
		smallest = size(files[len(files)-1])
	}
	for _, f := range files {
		placed := false
		n := size(f)
		for _, i := range open {
			if load[i]+n <= target {
				bins[i] = append(bins[i], f)
				load[i] += n
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, []*txlog.Add{f})
			load = append(load, n)
			open = append(open, len(bins)-1)
		}
		open = slices.DeleteFunc(open, func(i int) bool { return load[i]+smallest > target })
	}
	return bins
}
