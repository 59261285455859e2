package txlog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/medallion-lake/medallion/objstore"
)

// Table properties with their defaults (delta-protocol.md §3).
const (
	PropCheckpointInterval      = "delta.checkpointInterval"
	PropLogRetentionDuration    = "delta.logRetentionDuration"
	PropDeletedFileRetention    = "delta.deletedFileRetentionDuration"
	PropEnableExpiredLogCleanup = "delta.enableExpiredLogCleanup"
	defaultCheckpointInterval   = 10
	defaultLogRetentionDuration = 30 * 24 * time.Hour
	defaultDeletedFileRetention = 7 * 24 * time.Hour
	checkpointRowGroupRows      = 100_000
)

// The checkpoint row: one nullable struct column per action type, as Spark writes it
// (delta-protocol.md §7). Maps are 3-level MAP groups, lists 3-level LIST groups.
type cpRow struct {
	Txn            *cpTxn      `parquet:"txn,optional"`
	Add            *cpAdd      `parquet:"add,optional"`
	Remove         *cpRemove   `parquet:"remove,optional"`
	MetaData       *cpMetadata `parquet:"metaData,optional"`
	Protocol       *cpProtocol `parquet:"protocol,optional"`
	DomainMetadata *cpDomain   `parquet:"domainMetadata,optional"`
}

type cpTxn struct {
	AppID       string `parquet:"appId"`
	Version     int64  `parquet:"version"`
	LastUpdated *int64 `parquet:"lastUpdated,optional"`
}

type cpDV struct {
	StorageType    string `parquet:"storageType"`
	PathOrInlineDv string `parquet:"pathOrInlineDv"`
	Offset         *int32 `parquet:"offset,optional"`
	SizeInBytes    int32  `parquet:"sizeInBytes"`
	Cardinality    int64  `parquet:"cardinality"`
}

type cpAdd struct {
	Path                    string             `parquet:"path"`
	PartitionValues         map[string]*string `parquet:"partitionValues"`
	Size                    int64              `parquet:"size"`
	ModificationTime        int64              `parquet:"modificationTime"`
	DataChange              bool               `parquet:"dataChange"`
	Stats                   *string            `parquet:"stats,optional"`
	Tags                    map[string]string  `parquet:"tags,optional"`
	DeletionVector          *cpDV              `parquet:"deletionVector,optional"`
	BaseRowID               *int64             `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
	ClusteringProvider      *string            `parquet:"clusteringProvider,optional"`
}

type cpRemove struct {
	Path                    string             `parquet:"path"`
	DeletionTimestamp       *int64             `parquet:"deletionTimestamp,optional"`
	DataChange              bool               `parquet:"dataChange"`
	ExtendedFileMetadata    bool               `parquet:"extendedFileMetadata"`
	PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
	Size                    *int64             `parquet:"size,optional"`
	DeletionVector          *cpDV              `parquet:"deletionVector,optional"`
	BaseRowID               *int64             `parquet:"baseRowId,optional"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
}

type cpFormat struct {
	Provider string            `parquet:"provider"`
	Options  map[string]string `parquet:"options"`
}

type cpMetadata struct {
	ID               string            `parquet:"id"`
	Name             *string           `parquet:"name,optional"`
	Description      *string           `parquet:"description,optional"`
	Format           cpFormat          `parquet:"format"`
	SchemaString     string            `parquet:"schemaString"`
	PartitionColumns []string          `parquet:"partitionColumns,list"`
	Configuration    map[string]string `parquet:"configuration"`
	CreatedTime      *int64            `parquet:"createdTime,optional"`
}

type cpProtocol struct {
	MinReaderVersion int32    `parquet:"minReaderVersion"`
	MinWriterVersion int32    `parquet:"minWriterVersion"`
	ReaderFeatures   []string `parquet:"readerFeatures,list,optional"`
	WriterFeatures   []string `parquet:"writerFeatures,list,optional"`
}

type cpDomain struct {
	Domain        string `parquet:"domain"`
	Configuration string `parquet:"configuration"`
	Removed       bool   `parquet:"removed"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toCPDV(dv *DeletionVector) *cpDV {
	if dv == nil {
		return nil
	}
	return &cpDV{StorageType: dv.StorageType, PathOrInlineDv: dv.PathOrInlineDv, Offset: dv.Offset, SizeInBytes: dv.SizeInBytes, Cardinality: dv.Cardinality}
}

// checkpointRows renders a snapshot as checkpoint rows. Tombstones older than
// delta.deletedFileRetentionDuration are dropped, as Spark does.
func checkpointRows(s *Snapshot, now time.Time) ([]cpRow, int64, error) {
	retention, err := durationProperty(s.metadata, PropDeletedFileRetention, defaultDeletedFileRetention)
	if err != nil {
		return nil, 0, err
	}
	minDeletion := now.Add(-retention).UnixMilli()
	p := s.protocol
	rows := make([]cpRow, 0, 2+len(s.txns)+len(s.domains)+len(s.files)+len(s.tombstones))
	cpp := &cpProtocol{MinReaderVersion: int32(p.MinReaderVersion), MinWriterVersion: int32(p.MinWriterVersion), ReaderFeatures: p.ReaderFeatures, WriterFeatures: p.WriterFeatures}
	if p.MinReaderVersion >= 3 && cpp.ReaderFeatures == nil {
		cpp.ReaderFeatures = []string{}
	}
	if p.MinWriterVersion >= 7 && cpp.WriterFeatures == nil {
		cpp.WriterFeatures = []string{}
	}
	rows = append(rows, cpRow{Protocol: cpp})
	m := s.metadata
	pc := m.PartitionColumns
	if pc == nil {
		pc = []string{}
	}
	opts := m.Format.Options
	if opts == nil {
		opts = map[string]string{}
	}
	provider := m.Format.Provider
	if provider == "" {
		provider = "parquet"
	}
	rows = append(rows, cpRow{MetaData: &cpMetadata{
		ID: m.ID, Name: optString(m.Name), Description: optString(m.Description),
		Format: cpFormat{Provider: provider, Options: opts}, SchemaString: m.SchemaString,
		PartitionColumns: pc, Configuration: m.Configuration, CreatedTime: m.CreatedTime,
	}})
	for _, app := range sortedKeys(s.txnActions) {
		t := s.txnActions[app]
		rows = append(rows, cpRow{Txn: &cpTxn{AppID: t.AppID, Version: t.Version, LastUpdated: t.LastUpdated}})
	}
	for _, name := range sortedKeys(s.domains) {
		d := s.domains[name]
		rows = append(rows, cpRow{DomainMetadata: &cpDomain{Domain: d.Domain, Configuration: d.Configuration}})
	}
	// Writer version 3 enforces delta.checkpoint.writeStatsAsJson: false leaves the JSON stats out.
	stats := optString
	if s.metadata.Configuration["delta.checkpoint.writeStatsAsJson"] == "false" {
		stats = func(string) *string { return nil }
	}
	for _, a := range s.files {
		pv := a.PartitionValues
		if pv == nil {
			pv = map[string]*string{}
		}
		rows = append(rows, cpRow{Add: &cpAdd{
			Path: a.RawPath(), PartitionValues: pv, Size: a.Size, ModificationTime: a.ModificationTime,
			// Checkpoints describe state, not changes: Spark writes dataChange=false.
			DataChange: false, Stats: stats(a.Stats), Tags: a.Tags, DeletionVector: toCPDV(a.DeletionVector),
			BaseRowID: a.BaseRowID, DefaultRowCommitVersion: a.DefaultRowCommitVersion, ClusteringProvider: optString(a.ClusteringProvider),
		}})
	}
	for _, r := range s.tombstones {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp < minDeletion {
			continue
		}
		rows = append(rows, cpRow{Remove: &cpRemove{
			Path: r.RawPath(), DeletionTimestamp: r.DeletionTimestamp, DataChange: false,
			ExtendedFileMetadata: r.ExtendedFileMetadata, PartitionValues: r.PartitionValues, Size: r.Size,
			DeletionVector: toCPDV(r.DeletionVector), BaseRowID: r.BaseRowID, DefaultRowCommitVersion: r.DefaultRowCommitVersion,
		}})
	}
	return rows, int64(len(s.files)), nil
}

// encodeCheckpoint writes checkpoint rows as one Parquet file.
func encodeCheckpoint(rows []cpRow) ([]byte, error) {
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[cpRow](&buf,
		parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1),
		parquet.MaxRowsPerRowGroup(checkpointRowGroupRows),
		parquet.CreatedBy("medallion", Version, ""),
	)
	if _, err := w.Write(rows); err != nil {
		return nil, fmt.Errorf("txlog: encode checkpoint: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("txlog: encode checkpoint: %w", err)
	}
	return buf.Bytes(), nil
}

// Checkpoint writes a classic single-file checkpoint of snap, then _last_checkpoint. Tables
// with the v2Checkpoint feature are skipped (a classic file there must follow the v2 spec).
// Crash safety: the checkpoint is one atomic put of a file whose commit already exists, and
// _last_checkpoint is only a hint, so a crash at any point leaves a readable log.
func (l *Log) Checkpoint(ctx context.Context, snap *Snapshot) error {
	if err := CheckWrite(snap.protocol, snap.metadata, WriteLog); err != nil {
		return err
	}
	if snap.protocol.HasFeature("v2Checkpoint") {
		return fmt.Errorf("%w: writing checkpoints for tables with v2Checkpoint", ErrUnsupportedFeature)
	}
	if snap.metadata.Configuration["delta.checkpoint.writeStatsAsStruct"] == "true" {
		// Writer version 3 enforces the property: stats_parsed and partitionValues_parsed would
		// be required, and this writer does not write them. A checkpoint is optional.
		return fmt.Errorf("%w: writing checkpoints with delta.checkpoint.writeStatsAsStruct=true", ErrUnsupportedFeature)
	}
	rows, numAdds, err := checkpointRows(snap, l.now())
	if err != nil {
		return err
	}
	data, err := encodeCheckpoint(rows)
	if err != nil {
		return err
	}
	key := CheckpointKey(snap.version)
	if err := objstore.PutBytes(ctx, l.bucket, key, data); err != nil {
		return fmt.Errorf("txlog: write checkpoint %s: %w", key, err)
	}
	hint, err := json.Marshal(LastCheckpoint{Version: snap.version, Size: int64(len(rows)), SizeInBytes: int64(len(data)), NumOfAdds: &numAdds})
	if err != nil {
		return fmt.Errorf("txlog: encode _last_checkpoint: %w", err)
	}
	if err := objstore.PutBytes(ctx, l.bucket, lastCheckpointKey, hint); err != nil {
		return fmt.Errorf("txlog: write _last_checkpoint: %w", err)
	}
	return nil
}

// afterCommit writes a checkpoint every delta.checkpointInterval versions and cleans up
// expired log files. Failures are logged: the commit has already succeeded. snap is the
// snapshot of version when the commit built it (nil: it is read from the log).
func (l *Log) afterCommit(ctx context.Context, version int64, m Metadata, read, snap *Snapshot) {
	if !l.checkpoints || version == 0 {
		return
	}
	interval := int64(defaultCheckpointInterval)
	if s, ok := m.Configuration[PropCheckpointInterval]; ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			interval = n
		}
	}
	if version%interval != 0 {
		return
	}
	var err error
	if snap == nil {
		snap, err = l.committedSnapshot(ctx, version, read)
	}
	if err == nil {
		err = l.Checkpoint(ctx, snap)
	}
	if err != nil {
		l.logger.Warn("txlog: checkpoint failed; the commit stands", "version", version, "err", err)
		return
	}
	if m.Configuration[PropEnableExpiredLogCleanup] == "false" {
		return
	}
	if _, err := l.Cleanup(ctx, snap); err != nil {
		l.logger.Warn("txlog: log cleanup failed", "err", err)
	}
}

// committedSnapshot is the snapshot of the version just committed: read (the transaction's
// snapshot) brought up to it by Refresh, which replays only the commits since, or a load of
// that version when others committed after it.
func (l *Log) committedSnapshot(ctx context.Context, version int64, read *Snapshot) (*Snapshot, error) {
	if read != nil {
		if snap, err := l.Refresh(ctx, read); err == nil && snap.version == version {
			return snap, nil
		}
	}
	return l.SnapshotAt(ctx, version)
}

// Cleanup deletes commits, checkpoints and .crc files older than the newest checkpoint that is
// itself older than delta.logRetentionDuration (30 days by default), oldest first. It returns
// the number of files deleted. Data files are never touched.
//
// Its cost follows what can expire, not the table's age. Commit times only grow with the
// version (Delta monotonizes them), so the first log file newer than the cut-off ends the
// range that can expire: the listing stops there, and starts after the versions an earlier
// cleanup of this Log deleted. The file backend stats only the entries the listing yields.
func (l *Log) Cleanup(ctx context.Context, snap *Snapshot) (int, error) {
	if err := CheckWrite(snap.protocol, snap.metadata, WriteLog); err != nil {
		return 0, err
	}
	retention, err := durationProperty(snap.metadata, PropLogRetentionDuration, defaultLogRetentionDuration)
	if err != nil {
		return 0, err
	}
	cutoff := l.now().Add(-retention).UnixMilli()
	if cutoff < l.cleanup.nextExpiry.Load() {
		return 0, nil // the file an earlier cleanup stopped at is still too young: nothing is
	}
	from := l.cleanup.below.Load()
	if l.cleanup.nextExpiry.Load() == 0 {
		// This Log's first cleanup: when the oldest version it may delete is still within
		// the retention (a table younger than it), one stat says so without a listing.
		if info, err := l.bucket.Stat(ctx, CommitKey(from)); err == nil && info.ModTime.UnixMilli() > cutoff {
			l.cleanup.nextExpiry.Store(info.ModTime.UnixMilli())
			return 0, nil
		}
	}
	var expired []logFile
	keep, first := int64(-1), int64(-1)
	for info, err := range l.bucket.List(ctx, LogDir, objstore.ListOptions{StartAfter: versionsBefore(from)}) {
		if err != nil {
			return 0, fmt.Errorf("txlog: list %s: %w", LogDir, err)
		}
		lf := parseLogName(info.Key)
		if lf.kind == kindUnknown {
			continue
		}
		if first < 0 {
			first = lf.version // none of the versions before it is left
		}
		if lf.modMs = info.ModTime.UnixMilli(); lf.version > snap.version {
			break
		}
		if lf.modMs > cutoff {
			l.cleanup.nextExpiry.Store(lf.modMs)
			break
		}
		if lf.kind == kindCheckpointClassic {
			keep = max(keep, lf.version)
		}
		expired = append(expired, lf)
	}
	if keep <= 0 {
		l.cleanup.advance(first)
		return 0, nil
	}
	deleted := 0
	for _, f := range expired {
		if f.version >= keep {
			break
		}
		if err := l.bucket.Delete(ctx, f.key); err != nil {
			return deleted, fmt.Errorf("txlog: delete %s: %w", f.key, err)
		}
		deleted++
	}
	l.cleanup.advance(keep)
	return deleted, nil
}

// cleanupMark is how far a Log's cleanups got, so that the next one reads only what can
// expire. Both marks only grow: a table that went back (restored) keeps some expired files
// until a new Log cleans it, which costs space, never a needed file.
type cleanupMark struct {
	below      atomic.Int64 // no log file of a version below it is left
	nextExpiry atomic.Int64 // ms: the oldest file left is not older (commit times only grow)
}

// advance raises below to v; another cleanup of this Log may have got further meanwhile.
func (c *cleanupMark) advance(v int64) {
	for {
		old := c.below.Load()
		if old >= v || c.below.CompareAndSwap(old, v) {
			return
		}
	}
}

// versionsBefore is the listing start key that skips every log file of the versions below v:
// "%020d/" sorts after all of version v-1's files ("%020d.…", '.' < '/') and before v's.
func versionsBefore(v int64) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%s%020d/", LogDir, v-1)
}

// durationProperty reads a Spark interval property ("interval 30 days", "7 days", "1 week").
func durationProperty(m Metadata, key string, def time.Duration) (time.Duration, error) {
	s, ok := m.Configuration[key]
	if !ok {
		return def, nil
	}
	d, err := ParseInterval(s)
	if err != nil {
		return 0, fmt.Errorf("txlog: table property %s: %w", key, err)
	}
	return d, nil
}

// ParseInterval parses a Spark calendar interval of one unit: "interval 30 days", "1 week",
// "12 hours". Months and years are not accepted (their length varies).
func ParseInterval(s string) (time.Duration, error) {
	fields := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(fields) > 0 && fields[0] == "interval" {
		fields = fields[1:]
	}
	if len(fields) != 2 {
		return 0, fmt.Errorf("invalid interval %q: want \"interval <n> <unit>\"", s)
	}
	n, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid interval %q: %q is not a non-negative integer", s, fields[0])
	}
	units := map[string]time.Duration{
		"millisecond": time.Millisecond, "second": time.Second, "minute": time.Minute,
		"hour": time.Hour, "day": 24 * time.Hour, "week": 7 * 24 * time.Hour,
	}
	u, ok := units[strings.TrimSuffix(fields[1], "s")]
	if !ok {
		return 0, fmt.Errorf("invalid interval %q: unknown unit %q", s, fields[1])
	}
	// A retention that overflows would wrap negative and put cleanup's cutoff in the future.
	if n > math.MaxInt64/int64(u) {
		return 0, fmt.Errorf("invalid interval %q: longer than %v", s, time.Duration(math.MaxInt64))
	}
	return time.Duration(n) * u, nil
}
