package txlog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/objstore"
)

// Version is this package's engine version, recorded in commitInfo.engineInfo.
const Version = "0.1.0"

// Default retry limits. Blind appends never conflict, so they retry longer: on a hot table each
// lost race costs one small read, and giving up would fail an append that cannot conflict.
const (
	DefaultMaxAttempts            = 100
	DefaultMaxConflictingAttempts = 10
	defaultBackoffMin             = 5 * time.Millisecond
	defaultBackoffMax             = 500 * time.Millisecond
)

// Log is the transaction log of one table. It is safe for concurrent use; every method reads
// the bucket afresh (snapshots are immutable values).
type Log struct {
	bucket           objstore.Bucket
	logger           *slog.Logger
	now              func() time.Time
	maxAttempts      int
	maxConflictRetry int
	backoffMin       time.Duration
	backoffMax       time.Duration
	engineInfo       string
	checkpoints      bool
	unsafeCommits    bool
	fetchParallelism int
	cleanup          cleanupMark

	headMu  sync.Mutex
	head    *Snapshot // the newest snapshot this Log made (head.go)
	headOwn bool      // head is the snapshot of a commit this Log wrote
}

// Options configure a Log. The zero value means the defaults, which withDefaults fills in.
type Options struct {
	// Logger receives warnings about unusable hints and checkpoints (default: discard).
	Logger *slog.Logger
	// Clock is used for commit timestamps and retention (default time.Now).
	Clock func() time.Time
	// MaxAttempts bounds the commit attempts of a blind append (zero: DefaultMaxAttempts)
	// before ErrTooManyAttempts; MaxConflictingAttempts those of any other transaction (zero:
	// DefaultMaxConflictingAttempts). Below zero means one attempt.
	MaxAttempts, MaxConflictingAttempts int
	// BackoffMin and BackoffMax bound the jittered exponential backoff between commit attempts
	// (zero: 5ms and 500ms; BackoffMax is raised to BackoffMin when below it).
	BackoffMin, BackoffMax time.Duration
	// EngineInfo overrides commitInfo.engineInfo (default "medallion/<Version>").
	EngineInfo string
	// NoAutoCheckpoint turns off the checkpoints written after commits (by default one every
	// delta.checkpointInterval commits).
	NoAutoCheckpoint bool
	// UnsafeCommits lets commits proceed on a store without put-if-absent (a check, then a
	// plain put). Two concurrent writers can then overwrite each other's commit: use it only
	// when a single writer is guaranteed. Off by default: such stores refuse to commit.
	UnsafeCommits bool
}

// withDefaults returns o with every unset field at its default.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	o.MaxAttempts = max(1, cmp.Or(o.MaxAttempts, DefaultMaxAttempts))
	o.MaxConflictingAttempts = max(1, cmp.Or(o.MaxConflictingAttempts, DefaultMaxConflictingAttempts))
	o.BackoffMin = cmp.Or(o.BackoffMin, defaultBackoffMin)
	o.BackoffMax = max(o.BackoffMin, cmp.Or(o.BackoffMax, defaultBackoffMax))
	o.EngineInfo = cmp.Or(o.EngineInfo, "medallion/"+Version)
	return o
}

// New returns the log of the table rooted at b.
func New(b objstore.Bucket, opts Options) *Log {
	o := opts.withDefaults()
	return &Log{
		bucket:           b,
		logger:           o.Logger,
		now:              o.Clock,
		maxAttempts:      o.MaxAttempts,
		maxConflictRetry: o.MaxConflictingAttempts,
		backoffMin:       o.BackoffMin,
		backoffMax:       o.BackoffMax,
		engineInfo:       o.EngineInfo,
		checkpoints:      !o.NoAutoCheckpoint,
		unsafeCommits:    o.UnsafeCommits,
		fetchParallelism: 8,
	}
}

// ReadActions reads commit v of the log in b and parses it (ParseActions). A missing commit
// (log cleanup, or not written yet) is objstore.ErrNotFound; neither error names v, so that
// callers say which log it is.
func ReadActions(ctx context.Context, b objstore.Bucket, v int64) ([]Action, error) {
	data, err := objstore.ReadAll(ctx, b, CommitKey(v))
	if err != nil {
		return nil, err
	}
	return ParseActions(data)
}

// Bucket returns the table's bucket.
func (l *Log) Bucket() objstore.Bucket { return l.bucket }

// LastCheckpoint is the content of _delta_log/_last_checkpoint.
type LastCheckpoint struct {
	Version     int64  `json:"version"`
	Size        int64  `json:"size"`
	Parts       *int   `json:"parts,omitempty"`
	SizeInBytes int64  `json:"sizeInBytes,omitempty"`
	NumOfAdds   *int64 `json:"numOfAddFiles,omitempty"`
}

// readHint returns the _last_checkpoint version, or -1 when it is missing or unusable.
func (l *Log) readHint(ctx context.Context) int64 {
	data, err := objstore.ReadAll(ctx, l.bucket, lastCheckpointKey)
	if err != nil {
		if !errors.Is(err, objstore.ErrNotFound) {
			l.logger.Warn("txlog: cannot read _last_checkpoint, listing instead", "err", err)
		}
		return -1
	}
	var lc LastCheckpoint
	if err := json.Unmarshal(data, &lc); err != nil || lc.Version < 0 {
		l.logger.Warn("txlog: _last_checkpoint is unusable, listing instead", "bytes", len(data))
		return -1
	}
	return lc.Version
}

// list classifies the files directly under _delta_log/ whose key sorts after startAfter.
func (l *Log) list(ctx context.Context, startAfter string) ([]logFile, error) {
	var out []logFile
	for info, err := range l.bucket.List(ctx, LogDir, objstore.ListOptions{StartAfter: startAfter}) {
		if err != nil {
			return nil, fmt.Errorf("txlog: list %s: %w", LogDir, err)
		}
		lf := parseLogName(info.Key)
		switch lf.kind {
		case kindCommit, kindCheckpointClassic, kindCheckpointPart, kindCheckpointV2:
			lf.size, lf.modMs = info.Size, info.ModTime.UnixMilli()
			out = append(out, lf)
		}
	}
	return out, nil
}

// segment is what replay needs for one version: a complete checkpoint (maybe none) and the
// contiguous commits after it.
type segment struct {
	version    int64
	checkpoint []logFile // nil: replay from version 0
	cpVersion  int64     // -1 without checkpoint
	commits    []logFile // cpVersion+1 .. version
	last       *logFile  // the commit file of version, when listed
}

// buildSegment picks the newest usable checkpoint <= target (-1 = latest) and the commits after
// it. exclude lists checkpoint keys that failed to load.
func buildSegment(files []logFile, target int64, exclude map[string]bool) (segment, error) {
	commits := map[int64]logFile{}
	type cpGroup struct {
		files []logFile
		parts int
	}
	cps := map[int64][]cpGroup{}
	partials := map[[2]int64]map[int]logFile{}
	latest := int64(-1)
	for _, f := range files {
		switch f.kind {
		case kindCommit:
			commits[f.version] = f
			latest = max(latest, f.version)
		case kindCheckpointClassic, kindCheckpointV2:
			if !exclude[f.key] {
				cps[f.version] = append(cps[f.version], cpGroup{files: []logFile{f}})
			}
		case kindCheckpointPart:
			k := [2]int64{f.version, int64(f.parts)}
			if partials[k] == nil {
				partials[k] = map[int]logFile{}
			}
			partials[k][f.part] = f
		}
	}
	for k, parts := range partials {
		if len(parts) != int(k[1]) {
			continue // incomplete multi-part checkpoint: ignored, as the protocol requires
		}
		g := cpGroup{parts: int(k[1])}
		for i := 1; i <= int(k[1]); i++ {
			if exclude[parts[i].key] {
				g.files = nil
				break
			}
			g.files = append(g.files, parts[i])
		}
		if g.files != nil {
			cps[k[0]] = append(cps[k[0]], g)
		}
	}
	for v := range cps {
		latest = max(latest, v)
	}
	if latest < 0 {
		return segment{}, ErrTableNotFound
	}
	if target < 0 {
		target = latest
	}
	if target > latest {
		return segment{}, fmt.Errorf("%w: version %d is after the latest version %d", ErrVersionNotFound, target, latest)
	}
	cpVersions := make([]int64, 0, len(cps))
	for v := range cps {
		if v <= target {
			cpVersions = append(cpVersions, v)
		}
	}
	sort.Slice(cpVersions, func(i, j int) bool { return cpVersions[i] > cpVersions[j] })
	seg := segment{version: target, cpVersion: -1}
	if c, ok := commits[target]; ok {
		seg.last = &c
	}
	start := int64(0)
	if len(cpVersions) > 0 {
		v := cpVersions[0]
		// Prefer a classic single file, then a v2 file, then multi-part: fewest reads.
		groups := cps[v]
		sort.SliceStable(groups, func(i, j int) bool { return len(groups[i].files) < len(groups[j].files) })
		seg.checkpoint, seg.cpVersion, start = groups[0].files, v, v+1
	} else if _, ok := commits[0]; !ok {
		earliest := latest
		for v := range commits {
			earliest = min(earliest, v)
		}
		return segment{}, fmt.Errorf("%w: version %d cannot be reconstructed: no checkpoint at or before it and no commit 0 (earliest commit is %d)", ErrVersionNotFound, target, earliest)
	}
	prev := start - 1
	for v := start; v <= target; v++ {
		c, ok := commits[v]
		if !ok {
			next := v + 1
			for next <= target {
				if _, ok := commits[next]; ok {
					break
				}
				next++
			}
			return segment{}, fmt.Errorf("%w: ([%d, %d]): commit %d is missing", ErrNotContiguous, prev, next, v)
		}
		seg.commits = append(seg.commits, c)
		prev = v
	}
	return seg, nil
}

// fetchFiles reads the log files with bounded parallelism, in order.
func (l *Log) fetchFiles(ctx context.Context, files []logFile) ([][]byte, error) {
	keys := make([]string, len(files))
	for i, f := range files {
		keys[i] = f.key
	}
	return l.fetch(ctx, keys)
}

// fetch reads several objects with bounded parallelism, in order.
func (l *Log) fetch(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	errs := make([]error, len(keys))
	sem := make(chan struct{}, l.fetchParallelism)
	var wg sync.WaitGroup
	for i, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = objstore.ReadAll(ctx, l.bucket, k)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("txlog: read %s: %w", keys[i], err)
		}
	}
	return out, nil
}
