package txlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/medallion-lake/medallion/internal/backoff"
	"github.com/medallion-lake/medallion/objstore"
)

// IsolationLevel is a Delta isolation level, as recorded in commitInfo.isolationLevel.
type IsolationLevel string

const (
	// Serializable: the result equals some serial order of all reads and writes (the
	// open-source Delta default).
	Serializable IsolationLevel = "Serializable"
	// WriteSerializable: only the writes are serializable; a transaction may commit after a
	// concurrent blind append into data it read (the Databricks default).
	WriteSerializable IsolationLevel = "WriteSerializable"
	// snapshotIsolation is used for rearrange-only commits (every file action dataChange=false,
	// no metadata change): they never conflict with added files.
	snapshotIsolation IsolationLevel = "SnapshotIsolation"
)

// Operation describes a commit for commitInfo. Parameters follow Spark's encoding: strings,
// booleans and numbers are written as JSON values; lists and maps as a string holding their JSON.
type Operation struct {
	Name       string
	Parameters map[string]any
	Metrics    map[string]int64
	// UserMetadata is free text recorded in commitInfo.userMetadata.
	UserMetadata string
}

type readPredicate struct {
	desc  string
	match func(partitionValues map[string]*string) bool
}

// Transaction collects the actions of one commit and what the writer read, for conflict
// checks. It is not safe for concurrent use.
type Transaction struct {
	log       *Log
	read      *Snapshot
	adds      []*Add
	removes   []*Remove
	cdcs      []*CDC
	metadata  *Metadata
	protocol  *Protocol
	txns      map[string]int64
	domains   map[string]DomainMetadata
	readWhole bool
	// replaceAll: the commit removes every file of the read snapshot (ReplaceAllRows).
	replaceAll bool
	readPreds  []readPredicate
	readFiles  map[string]bool
	isolation  IsolationLevel
	txnID      string
	done       bool
	// winners are the actions of the commits that won races against this one, in version
	// order from read's version + 1 (checkWinners), for the snapshot after the commit.
	winners [][]Action
}

// Begin starts a transaction on top of read (nil when creating the table).
func (l *Log) Begin(read *Snapshot) *Transaction {
	return &Transaction{
		log:       l,
		read:      read,
		txns:      map[string]int64{},
		domains:   map[string]DomainMetadata{},
		readFiles: map[string]bool{},
		isolation: Serializable,
		txnID:     uuid.NewString(),
	}
}

// Add adds data files (already written under unique names).
func (tx *Transaction) Add(adds ...*Add) { tx.adds = append(tx.adds, adds...) }

// AddCDC adds change data files (already written under _change_data/ with unique names): the
// change rows of this commit, which a table with the change data feed on needs whenever the
// commit changes existing rows. Readers of the feed take them instead of the commit's adds and
// removes; snapshots and checkpoints never hold them.
func (tx *Transaction) AddCDC(cdcs ...*CDC) { tx.cdcs = append(tx.cdcs, cdcs...) }

// Remove tombstones data files. Removing a file implies having read it.
func (tx *Transaction) Remove(removes ...*Remove) { tx.removes = append(tx.removes, removes...) }

// SetMetadata replaces the table metadata.
func (tx *Transaction) SetMetadata(m Metadata) { tx.metadata = &m }

// SetProtocol replaces the protocol.
func (tx *Transaction) SetProtocol(p Protocol) { tx.protocol = &p }

// SetTxn records an idempotent writer's version; a concurrent commit of the same appId
// conflicts.
func (tx *Transaction) SetTxn(appID string, version int64) { tx.txns[appID] = version }

// SetDomain writes a domain's metadata; a concurrent commit of the same domain conflicts.
func (tx *Transaction) SetDomain(d DomainMetadata) { tx.domains[d.Domain] = d }

// ReadWholeTable records a read of every file: any concurrent data change conflicts.
func (tx *Transaction) ReadWholeTable() { tx.readWhole = true }

// ReplaceAllRows says the commit replaces every row of the table it read (removes each of its
// files, adds the new rows, maybe under a new schema): the one commit on a table with the
// change data feed on that needs no change files, since a reader's inference from its adds
// and removes (every old row deleted, every new one inserted) is exactly the change. It
// implies ReadWholeTable; Commit refuses it unless every file of the read snapshot is removed.
func (tx *Transaction) ReplaceAllRows() { tx.replaceAll, tx.readWhole = true, true }

// ReadPredicate records a read of the partitions matching match: concurrent adds whose
// partition values match conflict (on an unpartitioned table, every concurrent add does).
func (tx *Transaction) ReadPredicate(desc string, match func(partitionValues map[string]*string) bool) {
	tx.readPreds = append(tx.readPreds, readPredicate{desc, match})
}

// ReadFiles records reads of data files (decoded paths): their concurrent removal conflicts.
func (tx *Transaction) ReadFiles(paths ...string) {
	for _, p := range paths {
		tx.readFiles[p] = true
	}
}

// SetIsolation sets the isolation level (default Serializable).
func (tx *Transaction) SetIsolation(level IsolationLevel) { tx.isolation = level }

// TxnID is the id written into commitInfo.txnId.
func (tx *Transaction) TxnID() string { return tx.txnID }

func (tx *Transaction) readSomething() bool {
	return tx.readWhole || len(tx.readPreds) > 0 || len(tx.readFiles) > 0 || len(tx.removes) > 0
}

// isBlindAppend: only adds, nothing read, no metadata or protocol change.
func (tx *Transaction) isBlindAppend() bool {
	return !tx.readSomething() && tx.metadata == nil && tx.protocol == nil
}

// effectiveIsolation downgrades rearrange-only commits, as Spark does.
func (tx *Transaction) effectiveIsolation() IsolationLevel {
	if tx.metadata != nil || tx.protocol != nil || len(tx.adds)+len(tx.removes) == 0 {
		return tx.isolation
	}
	for _, a := range tx.adds {
		if a.DataChange {
			return tx.isolation
		}
	}
	for _, r := range tx.removes {
		if r.DataChange {
			return tx.isolation
		}
	}
	return snapshotIsolation
}

// kind is what the transaction does to the table's rows, for CheckWrite.
func (tx *Transaction) kind() WriteKind {
	k := WriteLog
	for _, r := range tx.removes {
		if r.DataChange {
			return WriteChange
		}
		k = WriteRearrange
	}
	for _, a := range tx.adds {
		switch {
		case a.DataChange:
			k = WriteAppend
		case k == WriteLog:
			k = WriteRearrange
		}
	}
	return k
}

// validate checks the transaction against the snapshot it builds on.
func (tx *Transaction) validate() (Protocol, Metadata, error) {
	var p Protocol
	var m Metadata
	switch {
	case tx.read != nil:
		p, m = tx.read.protocol, tx.read.metadata
	case tx.metadata == nil:
		return p, m, fmt.Errorf("%w: creating a table needs metadata", ErrInvalidTransaction)
	default:
		p = Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	}
	if tx.protocol != nil {
		p = *tx.protocol
	}
	if tx.metadata != nil {
		m = *tx.metadata
		if _, err := m.Schema(); err != nil {
			return p, m, fmt.Errorf("%w: %w", ErrInvalidTransaction, err)
		}
	}
	if m.Configuration["delta.appendOnly"] == "true" {
		for _, r := range tx.removes {
			if r.DataChange {
				return p, m, fmt.Errorf("%w: table is append-only (delta.appendOnly=true) but the commit removes %s", ErrInvalidTransaction, r.Path)
			}
		}
	}
	// The last line of defence: the table layer runs the same check before it writes any
	// data file; this one holds for any writer that did not.
	kind := tx.kind()
	if err := CheckWrite(p, m, kind); err != nil {
		return p, m, err
	}
	if tx.replaceAll {
		if err := tx.checkReplacesAll(); err != nil {
			return p, m, err
		}
	} else if err := tx.checkChangeData(m, kind); err != nil {
		return p, m, err
	}
	if tx.metadata != nil {
		if err := checkColumnMapping(m); err != nil {
			return p, m, err
		}
	}
	for name := range tx.domains {
		if strings.HasPrefix(name, "delta.") {
			return p, m, fmt.Errorf("%w: domain %q is system-owned (delta.*)", ErrInvalidTransaction, name)
		}
		if !slices.Contains(p.WriterFeatures, "domainMetadata") {
			return p, m, fmt.Errorf("%w: domain %q needs the domainMetadata writer feature (protocol writer version 7)", ErrInvalidTransaction, name)
		}
	}
	seen := map[fileKey]bool{}
	for _, a := range tx.adds {
		if a.Path == "" {
			return p, m, fmt.Errorf("%w: add without a path", ErrInvalidTransaction)
		}
		if seen[addKey(a)] {
			return p, m, fmt.Errorf("%w: file %s added twice", ErrInvalidTransaction, a.Path)
		}
		seen[addKey(a)] = true
		for _, c := range m.PartitionColumns {
			if _, ok := a.PartitionValues[c]; !ok {
				return p, m, fmt.Errorf("%w: add %s has no value for partition column %q", ErrInvalidTransaction, a.Path, c)
			}
		}
	}
	for _, c := range tx.cdcs {
		if c.Path == "" || c.DataChange {
			return p, m, fmt.Errorf("%w: cdc file %q: a change data file needs a path and dataChange=false", ErrInvalidTransaction, c.Path)
		}
		for _, col := range m.PartitionColumns {
			if _, ok := c.PartitionValues[col]; !ok {
				return p, m, fmt.Errorf("%w: cdc %s has no value for partition column %q", ErrInvalidTransaction, c.Path, col)
			}
		}
	}
	return p, m, nil
}

// buildActions renders the commit: commitInfo first, then protocol, metadata, txns, domains,
// removes, adds and cdc files.
func (tx *Transaction) buildActions(op Operation, m Metadata, readVersion int64, now time.Time, ict *int64) []Action {
	params := make(map[string]json.RawMessage, len(op.Parameters))
	for k, v := range op.Parameters {
		params[k] = encodeParameter(v)
	}
	var metrics map[string]json.RawMessage
	if len(op.Metrics) > 0 {
		metrics = make(map[string]json.RawMessage, len(op.Metrics))
		for k, v := range op.Metrics {
			metrics[k], _ = json.Marshal(strconv.FormatInt(v, 10))
		}
	}
	blind := tx.isBlindAppend()
	ci := &CommitInfo{
		Timestamp:           now.UnixMilli(),
		InCommitTimestamp:   ict,
		Operation:           op.Name,
		OperationParameters: params,
		IsolationLevel:      string(tx.effectiveIsolation()),
		IsBlindAppend:       &blind,
		OperationMetrics:    metrics,
		UserMetadata:        op.UserMetadata,
		EngineInfo:          tx.log.engineInfo,
		TxnID:               tx.txnID,
	}
	if readVersion >= 0 {
		ci.ReadVersion = &readVersion
	}
	actions := []Action{{CommitInfo: ci}}
	if tx.protocol != nil {
		actions = append(actions, Action{Protocol: tx.protocol})
	}
	if tx.metadata != nil {
		md := m
		actions = append(actions, Action{MetaData: &md})
	}
	nowMs := now.UnixMilli()
	for _, app := range sortedKeys(tx.txns) {
		actions = append(actions, Action{Txn: &Txn{AppID: app, Version: tx.txns[app], LastUpdated: &nowMs}})
	}
	for _, d := range sortedKeys(tx.domains) {
		dm := tx.domains[d]
		actions = append(actions, Action{DomainMetadata: &dm})
	}
	for _, r := range tx.removes {
		if r.DeletionTimestamp == nil {
			c := *r
			c.DeletionTimestamp = &nowMs
			r = &c
		}
		actions = append(actions, Action{Remove: r})
	}
	for _, a := range tx.adds {
		actions = append(actions, Action{Add: a})
	}
	for _, c := range tx.cdcs {
		actions = append(actions, Action{CDC: c})
	}
	return actions
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// encodeParameter applies Spark's encoding of operationParameters.
func encodeParameter(v any) json.RawMessage {
	switch v.(type) {
	case nil, string, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64, json.Number:
		b, err := json.Marshal(v)
		if err == nil {
			return b
		}
	}
	inner, err := json.Marshal(v)
	if err != nil {
		inner = []byte(fmt.Sprint(v))
	}
	b, _ := json.Marshal(string(inner))
	return b
}

// normalizeMetadata fills the fields readers require.
func normalizeMetadata(m *Metadata, now time.Time) {
	if m.ID == "" {
		m.ID = uuid.NewString()
	}
	if m.Format.Provider == "" {
		m.Format.Provider = "parquet"
	}
	if m.Format.Options == nil {
		m.Format.Options = map[string]string{}
	}
	if m.PartitionColumns == nil {
		m.PartitionColumns = []string{}
	}
	if m.Configuration == nil {
		m.Configuration = map[string]string{}
	}
	if m.CreatedTime == nil {
		ms := now.UnixMilli()
		m.CreatedTime = &ms
	}
}

// Commit writes the transaction as the next version with put-if-absent. On a lost race it
// reads the winning commits, runs Delta's conflict checks against each, and retries at the next
// version with jittered backoff. It returns the committed version. On ErrCommitUnknown the
// commit may have landed: never delete its data files.
//
// A commit that lands makes the Log's head (head.go): the snapshot of the new version, built
// from the snapshot read and the actions written, so that the next Refresh does not read the
// commit back. One that fails drops the Log's snapshot from a WithSnapshotScope scope, so that
// the caller's next look sees what made it fail.
func (tx *Transaction) Commit(ctx context.Context, op Operation) (int64, error) {
	v, err := tx.commit(ctx, op)
	if err != nil {
		scopeOf(ctx).note(tx.log, nil)
	}
	return v, err
}

func (tx *Transaction) commit(ctx context.Context, op Operation) (int64, error) {
	if tx.done {
		return -1, fmt.Errorf("%w: transaction already committed", ErrInvalidTransaction)
	}
	l := tx.log
	p, m, err := tx.validate()
	if err != nil {
		return -1, err
	}
	if tx.read == nil && tx.protocol == nil {
		tx.protocol = &p // version 0 must carry the protocol
	}
	if tx.metadata != nil {
		normalizeMetadata(tx.metadata, l.now())
		m = *tx.metadata
	}
	readVersion := int64(-1)
	var lastICT int64
	if tx.read != nil {
		readVersion = tx.read.version
		lastICT = tx.read.timestamp.UnixMilli()
	}
	limit := l.maxConflictRetry
	if tx.isBlindAppend() {
		limit = l.maxAttempts
	}
	version := readVersion + 1
	for attempt := 1; ; attempt++ {
		now := l.now()
		var ict *int64
		if ictEnabledAt(m, version) {
			t := max(now.UnixMilli(), lastICT+1)
			ict = &t
		}
		data, err := MarshalActions(tx.buildActions(op, m, readVersion, now, ict))
		if err != nil {
			return -1, err
		}
		key := CommitKey(version)
		err = objstore.PutBytesIfAbsent(ctx, l.bucket, key, data)
		if errors.Is(err, objstore.ErrNotSupported) && l.unsafeCommits {
			err = l.unsafePut(ctx, key, data)
		}
		if errors.Is(err, objstore.ErrNotSupported) {
			// A store without put-if-absent cannot arbitrate concurrent writers: refuse rather
			// than risk two commits of the same version.
			return -1, fmt.Errorf("txlog: commit %s: the store cannot put-if-absent: %w", key, err)
		}
		if err != nil && !errors.Is(err, objstore.ErrAlreadyExists) {
			if ctx.Err() != nil {
				return -1, fmt.Errorf("%w: %s: %w", ErrCommitUnknown, key, err)
			}
			ours, rerr := tx.readBack(ctx, key)
			switch {
			case rerr != nil:
				return -1, fmt.Errorf("%w: %s: put failed (%w) and read-back failed: %w", ErrCommitUnknown, key, err, rerr)
			case ours == resultOurs:
				err = nil
			case ours == resultTheirs:
				err = objstore.ErrAlreadyExists
			case errors.Is(err, objstore.ErrStorageFull) || errors.Is(err, objstore.ErrStoreReadOnly):
				// The store refused this write and stored nothing (read back: the version is
				// not there, so no earlier attempt landed either); it would refuse every retry
				// too. Fail now with the store's error, which names the path and the way out.
				return -1, fmt.Errorf("txlog: commit %s: %w", key, err)
			default:
				l.logger.Warn("txlog: commit put failed, retrying", "key", key, "err", err)
				if attempt >= limit {
					return -1, fmt.Errorf("%w: %s after %d attempts: %w", ErrTooManyAttempts, key, attempt, err)
				}
				if err := tx.sleep(ctx, attempt); err != nil {
					return -1, err
				}
				continue
			}
		}
		if err == nil {
			tx.done = true
			l.logger.Debug("txlog: committed", "version", version, "operation", op.Name, "attempts", attempt)
			l.afterCommit(ctx, version, m, tx.read, tx.landed(ctx, version, data, now, ict))
			return version, nil
		}
		// Lost the race: check every winner from version to the latest.
		if tx.read == nil {
			return -1, fmt.Errorf("%w: the table was created concurrently (version 0 exists)", ErrProtocolChanged)
		}
		next, ictSeen, mine, cerr := tx.checkWinners(ctx, version)
		if cerr != nil {
			return -1, cerr
		}
		if mine >= 0 {
			// An earlier attempt whose put reported an error (and was not yet visible when read
			// back) did land: committing again would apply the actions twice.
			tx.done = true
			l.afterCommit(ctx, mine, m, tx.read, nil)
			return mine, nil
		}
		lastICT = max(lastICT, ictSeen)
		if attempt >= limit {
			return -1, fmt.Errorf("%w: lost the race for version %d %d times", ErrTooManyAttempts, version, attempt)
		}
		version = next
		if err := tx.sleep(ctx, attempt); err != nil {
			return -1, err
		}
	}
}

// unsafePut emulates put-if-absent with a check then a put: correct only with a single
// writer, which is what WithUnsafeCommits asserts.
func (l *Log) unsafePut(ctx context.Context, key string, data []byte) error {
	_, err := l.bucket.Stat(ctx, key)
	switch {
	case err == nil:
		return fmt.Errorf("txlog: %s: %w", key, objstore.ErrAlreadyExists)
	case !errors.Is(err, objstore.ErrNotFound):
		return err
	}
	return objstore.PutBytes(ctx, l.bucket, key, data)
}

type readBackResult int

const (
	resultMissing readBackResult = iota
	resultOurs
	resultTheirs
)

// readBack resolves an unknown put outcome by reading the commit and comparing txnId.
func (tx *Transaction) readBack(ctx context.Context, key string) (readBackResult, error) {
	data, err := objstore.ReadAll(ctx, tx.log.bucket, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return resultMissing, nil
	}
	if err != nil {
		return resultMissing, err
	}
	actions, err := ParseActions(data)
	if err != nil {
		return resultTheirs, nil
	}
	for _, a := range actions {
		if a.CommitInfo != nil && a.CommitInfo.TxnID == tx.txnID {
			return resultOurs, nil
		}
	}
	return resultTheirs, nil
}

// checkWinners reads commits from version on until one is missing and checks each for
// conflicts. It returns the next free version, the newest in-commit timestamp seen, and the
// version holding this transaction's own txnId (-1 when none does).
func (tx *Transaction) checkWinners(ctx context.Context, version int64) (next, lastICT, mine int64, err error) {
	for v := version; ; v++ {
		key := CommitKey(v)
		data, err := objstore.ReadAll(ctx, tx.log.bucket, key)
		if errors.Is(err, objstore.ErrNotFound) {
			return v, lastICT, -1, nil
		}
		if err != nil {
			return 0, 0, -1, fmt.Errorf("txlog: read winning commit %s: %w", key, err)
		}
		actions, err := ParseActions(data)
		if err != nil {
			return 0, 0, -1, fmt.Errorf("txlog: winning commit %s: %w", key, err)
		}
		for _, a := range actions {
			if a.CommitInfo != nil && a.CommitInfo.TxnID == tx.txnID {
				return 0, 0, v, nil
			}
		}
		if err := tx.checkConflict(v, actions); err != nil {
			return 0, 0, -1, err
		}
		if v == tx.read.version+int64(len(tx.winners))+1 {
			tx.winners = append(tx.winners, actions)
		}
		for _, a := range actions {
			if a.CommitInfo != nil && a.CommitInfo.InCommitTimestamp != nil {
				lastICT = max(lastICT, *a.CommitInfo.InCommitTimestamp)
			}
		}
	}
}

// checkConflict runs Delta's conflict checks (delta-protocol.md §9) against one winner.
func (tx *Transaction) checkConflict(v int64, actions []Action) error {
	winnerBlind := false
	for _, a := range actions {
		if a.CommitInfo != nil && a.CommitInfo.IsBlindAppend != nil {
			winnerBlind = *a.CommitInfo.IsBlindAppend
		}
	}
	partitioned := len(tx.read.metadata.PartitionColumns) > 0
	removing := map[string]bool{}
	for _, r := range tx.removes {
		removing[r.Path] = true
	}
	for _, a := range actions {
		switch {
		case a.Protocol != nil:
			return fmt.Errorf("%w: version %d changed the protocol", ErrProtocolChanged, v)
		case a.MetaData != nil:
			return fmt.Errorf("%w: version %d changed the table metadata", ErrMetadataChanged, v)
		case a.DomainMetadata != nil:
			if _, ok := tx.domains[a.DomainMetadata.Domain]; ok {
				return fmt.Errorf("%w: version %d wrote domain %q", ErrConcurrentTransaction, v, a.DomainMetadata.Domain)
			}
		case a.Txn != nil:
			if _, ok := tx.txns[a.Txn.AppID]; ok {
				return &TxnConflictError{Version: v, AppID: a.Txn.AppID, TxnVersion: a.Txn.Version}
			}
		case a.Add != nil:
			if !a.Add.DataChange || !(tx.readWhole || len(tx.readPreds) > 0) {
				continue
			}
			switch tx.effectiveIsolation() {
			case snapshotIsolation:
				continue
			case WriteSerializable:
				if winnerBlind && tx.metadata == nil {
					continue
				}
			}
			if tx.readWhole || !partitioned {
				return fmt.Errorf("%w: version %d added %s, which this transaction's read covers", ErrConcurrentAppend, v, a.Add.Path)
			}
			for _, p := range tx.readPreds {
				if p.match == nil || p.match(a.Add.PartitionValues) {
					return fmt.Errorf("%w: version %d added %s matching the read predicate %s", ErrConcurrentAppend, v, a.Add.Path, p.desc)
				}
			}
		case a.Remove != nil:
			switch {
			case removing[a.Remove.Path]:
				return fmt.Errorf("%w: version %d also removed %s", ErrConcurrentDeleteDelete, v, a.Remove.Path)
			case tx.readWhole || tx.readFiles[a.Remove.Path]:
				return fmt.Errorf("%w: version %d removed %s, which this transaction read", ErrConcurrentDeleteRead, v, a.Remove.Path)
			}
		}
	}
	return nil
}

// sleep waits the backoff of the attempt-th lost race, or until ctx is done.
func (tx *Transaction) sleep(ctx context.Context, attempt int) error {
	return backoff.Backoff{Min: tx.log.backoffMin, Max: tx.log.backoffMax}.Sleep(ctx, attempt)
}

// checkReplacesAll holds a ReplaceAllRows commit to removing every file of its read snapshot.
func (tx *Transaction) checkReplacesAll() error {
	if tx.read == nil {
		return nil
	}
	gone := make(map[string]bool, len(tx.removes))
	for _, r := range tx.removes {
		gone[r.Path] = true
	}
	for _, a := range tx.read.Files() {
		if !gone[a.Path] {
			return fmt.Errorf("txlog: a commit that replaces all rows keeps file %s of version %d", a.Path, tx.read.Version())
		}
	}
	return nil
}
