package txlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// fileKey is the logical identity of a data file: its decoded path and its DV's unique id.
type fileKey struct{ path, dv string }

func addKey(a *Add) fileKey       { return fileKey{a.Path, a.DeletionVector.UniqueID()} }
func removeKey(r *Remove) fileKey { return fileKey{r.Path, r.DeletionVector.UniqueID()} }

// Snapshot is the immutable state of a table at one version.
type Snapshot struct {
	version    int64
	protocol   Protocol
	metadata   Metadata
	files      []*Add // sorted by path, then DV id
	tombstones []*Remove
	txns       map[string]int64
	txnActions map[string]*Txn
	domains    map[string]*DomainMetadata
	timestamp  time.Time
	cpVersion  int64
}

// Version is the snapshot's table version.
func (s *Snapshot) Version() int64 { return s.version }

// Protocol is the table's protocol at this version.
func (s *Snapshot) Protocol() Protocol { return s.protocol }

// Metadata is the table's metadata at this version.
func (s *Snapshot) Metadata() Metadata { return s.metadata }

// Schema parses the table schema.
func (s *Snapshot) Schema() (*StructType, error) {
	st, err := s.metadata.Schema()
	if err != nil {
		return nil, fmt.Errorf("txlog: schema of version %d: %w", s.version, err)
	}
	return st, nil
}

// PartitionColumns are the logical partition column names.
func (s *Snapshot) PartitionColumns() []string { return slices.Clone(s.metadata.PartitionColumns) }

// Files are the live data files, sorted by path. Callers must not modify them.
func (s *Snapshot) Files() []*Add { return s.files }

// Tombstones are the removed files not re-added since (for VACUUM). Callers must not modify them.
func (s *Snapshot) Tombstones() []*Remove { return s.tombstones }

// TxnVersion returns the last committed version of an idempotent writer.
func (s *Snapshot) TxnVersion(appID string) (int64, bool) {
	v, ok := s.txns[appID]
	return v, ok
}

// Txns returns every idempotent writer's last committed version by app id (a copy): what a
// recovery reads to tell which query wrote the table.
func (s *Snapshot) Txns() map[string]int64 { return maps.Clone(s.txns) }

// Domain returns a live (not removed) domain's metadata.
func (s *Snapshot) Domain(name string) (*DomainMetadata, bool) {
	d, ok := s.domains[name]
	return d, ok
}

// Domains lists the live domain names, sorted.
func (s *Snapshot) Domains() []string { return slices.Sorted(maps.Keys(s.domains)) }

// Timestamp is the commit time of this version: its in-commit timestamp when enabled, else the
// commit file's modification time.
func (s *Snapshot) Timestamp() time.Time { return s.timestamp }

// CheckpointVersion is the version of the checkpoint the snapshot was loaded from, or -1.
func (s *Snapshot) CheckpointVersion() int64 { return s.cpVersion }

// Property returns a table property (metaData.configuration).
func (s *Snapshot) Property(key string) (string, bool) {
	v, ok := s.metadata.Configuration[key]
	return v, ok
}

// TotalSize is the sum of the live files' sizes.
func (s *Snapshot) TotalSize() int64 {
	var n int64
	for _, f := range s.files {
		n += f.Size
	}
	return n
}

// Snapshot loads the latest version. ErrTableNotFound when there is no log.
func (l *Log) Snapshot(ctx context.Context) (*Snapshot, error) { return l.load(ctx, -1) }

// SnapshotAt loads version v. ErrVersionNotFound when v is after the latest version or can no
// longer be reconstructed.
func (l *Log) SnapshotAt(ctx context.Context, version int64) (*Snapshot, error) {
	if version < 0 {
		return nil, fmt.Errorf("%w: negative version %d", ErrVersionNotFound, version)
	}
	return l.load(ctx, version)
}

// load builds the snapshot at target (-1 = latest): _last_checkpoint as a hint, a listing from
// there, and a full listing whenever the hinted one cannot produce the snapshot.
func (l *Log) load(ctx context.Context, target int64) (*Snapshot, error) {
	if hint := l.readHint(ctx); hint >= 0 && (target < 0 || hint <= target) {
		files, err := l.list(ctx, fmt.Sprintf("%s%020d", LogDir, hint))
		if err != nil {
			return nil, err
		}
		if seg, err := buildSegment(files, target, nil); err == nil && seg.cpVersion >= hint {
			snap, err := l.replaySegment(ctx, files, seg, target)
			if err == nil || !errors.Is(err, errCheckpointUnusable) {
				return snap, err
			}
		}
	}
	files, err := l.list(ctx, "")
	if err != nil {
		return nil, err
	}
	seg, err := buildSegment(files, target, nil)
	if err != nil {
		return nil, err
	}
	return l.replaySegment(ctx, files, seg, target)
}

var errCheckpointUnusable = errors.New("txlog: checkpoint unusable")

// replaySegment loads seg, falling back to older checkpoints when one cannot be read.
func (l *Log) replaySegment(ctx context.Context, files []logFile, seg segment, target int64) (*Snapshot, error) {
	exclude := map[string]bool{}
	for {
		st := newReplayState()
		if seg.checkpoint != nil {
			actions, err := l.readCheckpoint(ctx, seg.checkpoint)
			if err != nil {
				if ctx.Err() != nil {
					return nil, err
				}
				l.logger.Warn("txlog: skipping unreadable checkpoint", "key", seg.checkpoint[0].key, "err", err)
				for _, f := range seg.checkpoint {
					exclude[f.key] = true
				}
				if seg, err = buildSegment(files, target, exclude); err != nil {
					return nil, fmt.Errorf("%w: %w", errCheckpointUnusable, err)
				}
				continue
			}
			st.applyAll(actions)
		}
		datas, err := l.fetchFiles(ctx, seg.commits)
		if err != nil {
			return nil, err
		}
		var lastCommit []Action
		for i, data := range datas {
			actions, err := ParseActions(data)
			if err != nil {
				return nil, fmt.Errorf("txlog: %s: %w", seg.commits[i].key, err)
			}
			st.applyAll(actions)
			lastCommit = actions
		}
		snap, err := st.snapshot(seg.version, seg.cpVersion)
		if err != nil {
			return nil, err
		}
		if err := CheckRead(snap.protocol, snap.metadata); err != nil {
			return nil, err
		}
		ts, err := l.commitTimestamp(ctx, snap, seg, lastCommit)
		if err != nil {
			return nil, err
		}
		snap.timestamp = ts
		return snap, nil
	}
}

// commitTimestamp is the in-commit timestamp of the snapshot's version when enabled, else the
// modification time of its commit file (or of its checkpoint when the commit was cleaned up).
func (l *Log) commitTimestamp(ctx context.Context, snap *Snapshot, seg segment, lastCommit []Action) (time.Time, error) {
	if ictEnabledAt(snap.metadata, snap.version) {
		if len(seg.commits) == 0 && seg.last != nil {
			data, err := l.fetch(ctx, []string{seg.last.key})
			if err != nil {
				return time.Time{}, err
			}
			if lastCommit, err = ParseActions(data[0]); err != nil {
				return time.Time{}, fmt.Errorf("txlog: %s: %w", seg.last.key, err)
			}
		}
		for _, a := range lastCommit {
			if a.CommitInfo != nil && a.CommitInfo.InCommitTimestamp != nil {
				return time.UnixMilli(*a.CommitInfo.InCommitTimestamp).UTC(), nil
			}
		}
	}
	if seg.last != nil {
		return time.UnixMilli(seg.last.modMs).UTC(), nil
	}
	if len(seg.checkpoint) > 0 {
		return time.UnixMilli(seg.checkpoint[0].modMs).UTC(), nil
	}
	return time.Time{}, nil
}

// ictEnabledAt reports whether in-commit timestamps apply to version v.
func ictEnabledAt(m Metadata, v int64) bool {
	if m.Configuration["delta.enableInCommitTimestamps"] != "true" {
		return false
	}
	if ev, ok := m.Configuration["delta.inCommitTimestampEnablementVersion"]; ok {
		n, err := strconv.ParseInt(ev, 10, 64)
		return err == nil && v >= n
	}
	return true
}

// readCheckpoint reads every action of a checkpoint (all parts; sidecars followed).
func (l *Log) readCheckpoint(ctx context.Context, parts []logFile) ([]Action, error) {
	datas, err := l.fetchFiles(ctx, parts)
	if err != nil {
		return nil, err
	}
	var all []Action
	var sidecars []string
	for i, data := range datas {
		var actions []Action
		if strings.HasSuffix(parts[i].key, ".json") {
			actions, err = ParseActions(data)
		} else {
			actions, err = parseCheckpointParquet(data)
		}
		if err != nil {
			return nil, fmt.Errorf("txlog: checkpoint %s: %w", parts[i].key, err)
		}
		for _, a := range actions {
			if a.Sidecar != nil {
				if strings.Contains(a.Sidecar.Path, "/") {
					return nil, fmt.Errorf("%w: checkpoint %s: sidecar path %q outside _delta_log/_sidecars/", ErrUnsupportedFeature, parts[i].key, a.Sidecar.Path)
				}
				sidecars = append(sidecars, sidecarDir+a.Sidecar.Path)
			}
		}
		all = append(all, actions...)
	}
	if len(sidecars) > 0 {
		datas, err := l.fetch(ctx, sidecars)
		if err != nil {
			return nil, err
		}
		for i, data := range datas {
			actions, err := parseCheckpointParquet(data)
			if err != nil {
				return nil, fmt.Errorf("txlog: sidecar %s: %w", sidecars[i], err)
			}
			all = append(all, actions...)
		}
	}
	return all, nil
}

// replayState reconciles actions per delta-protocol.md §2.
type replayState struct {
	protocol   *Protocol
	metadata   *Metadata
	files      map[fileKey]*Add
	tombstones map[fileKey]*Remove
	txns       map[string]*Txn
	domains    map[string]*DomainMetadata
}

func newReplayState() *replayState {
	return &replayState{
		files:      map[fileKey]*Add{},
		tombstones: map[fileKey]*Remove{},
		txns:       map[string]*Txn{},
		domains:    map[string]*DomainMetadata{},
	}
}

// applyAll applies one commit's (or one checkpoint's) actions in order. Within a commit a key
// appears at most once as add and once as remove, and only with different DV ids, so order
// inside the commit does not matter.
func (st *replayState) applyAll(actions []Action) {
	for i := range actions {
		a := &actions[i]
		switch {
		case a.Add != nil:
			k := addKey(a.Add)
			st.files[k] = a.Add
			delete(st.tombstones, k)
		case a.Remove != nil:
			k := removeKey(a.Remove)
			delete(st.files, k)
			st.tombstones[k] = a.Remove
		case a.MetaData != nil:
			st.metadata = a.MetaData
		case a.Protocol != nil:
			st.protocol = a.Protocol
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = a.Txn
		case a.DomainMetadata != nil:
			if a.DomainMetadata.Removed {
				delete(st.domains, a.DomainMetadata.Domain)
			} else {
				st.domains[a.DomainMetadata.Domain] = a.DomainMetadata
			}
		}
	}
}

func (st *replayState) snapshot(version, cpVersion int64) (*Snapshot, error) {
	if st.protocol == nil {
		return nil, fmt.Errorf("%w: no protocol found at version %d", ErrCorruptLog, version)
	}
	if st.metadata == nil {
		return nil, fmt.Errorf("%w: no metadata found at version %d", ErrCorruptLog, version)
	}
	s := &Snapshot{
		version:    version,
		protocol:   *st.protocol,
		metadata:   *st.metadata,
		files:      make([]*Add, 0, len(st.files)),
		tombstones: make([]*Remove, 0, len(st.tombstones)),
		txns:       make(map[string]int64, len(st.txns)),
		txnActions: st.txns,
		domains:    st.domains,
		cpVersion:  cpVersion,
	}
	if s.metadata.Configuration == nil {
		s.metadata.Configuration = map[string]string{}
	}
	for _, a := range st.files {
		s.files = append(s.files, a)
	}
	slices.SortFunc(s.files, func(a, b *Add) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.DeletionVector.UniqueID(), b.DeletionVector.UniqueID())
	})
	for _, r := range st.tombstones {
		s.tombstones = append(s.tombstones, r)
	}
	slices.SortFunc(s.tombstones, func(a, b *Remove) int { return strings.Compare(a.Path, b.Path) })
	for id, t := range st.txns {
		s.txns[id] = t.Version
	}
	return s, nil
}
