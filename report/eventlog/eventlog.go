// Package eventlog owns the event log table: its schema (one flat row per job run, micro-batch,
// expectation result and table maintenance, with the full figures as a JSON string in
// `details`), appending rows to it idempotently, and reading them back for the status page and
// `medallion report`. When and what to append is the jobs package's business (jobs/eventlog.go);
// this package knows nothing about jobs or engines, so that the read-only views (report) can
// read what jobs wrote. The columns and the questions they answer are documented in
// docs/event-log.md.
//
// Crash safety: an append is one Delta commit (a blind append). Rows that must be written
// exactly once although a rerun may produce them again (a micro-batch's) are appended with a
// txn(appId, version) that the table records in the same commit, so that the second append is
// skipped; a crash before the commit leaves at most an unreferenced data file, which vacuum
// removes.
package eventlog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// The event types (column event_type).
const (
	// TypeJobRun is one run of a job (ingest, stream, merge-late, replay, optimize, vacuum,
	// checkpoint, backfill-columns): its start, end, outcome, error and summary.
	TypeJobRun = "job_run"
	// TypeBatch is one micro-batch of a streaming query: its progress.
	TypeBatch = "batch"
	// TypeExpectation is one expectation's counts over one micro-batch.
	TypeExpectation = "expectation"
	// TypeMaintenance is one table's part of an optimize, vacuum or checkpoint run.
	TypeMaintenance = "maintenance"
)

// The outcomes (column outcome).
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
	// OutcomeViolations is an expectation row whose batch had rows that violated it.
	OutcomeViolations = "violations"
	// OutcomeSkipped is a maintenance row of a table that does not exist yet.
	OutcomeSkipped = "skipped"
)

// Event is one row of the event log. Zero times and nil counts are written as NULL; so are
// empty strings, so that SQL's IS NULL finds what a row does not have.
type Event struct {
	// EventID is unique and deterministic for what the row describes (a rerun that produces
	// the same event again produces the same id): run/<run id>, batch/<query id>/<batch id>,
	// expectation/<query id>/<batch id>/<name>, maintenance/<run id>/<table>.
	EventID   string
	EventType string
	// EventTime is when the event ended (a run's end, a batch's trigger time).
	EventTime time.Time
	// Job is the job's name (for batch and expectation rows: stream).
	Job string
	// RunID identifies the job run that wrote the row (empty for a batch recovered from the
	// checkpoint after a killed run; details then still has the stream's runId).
	RunID string
	// Source is the source or join of a run, batch or expectation (a run of every source: empty).
	Source string
	// QueryID is the streaming query's id (batch and expectation rows).
	QueryID string
	// TablePath is the table of a maintenance row, relative to the lake.
	TablePath          string
	BatchID            *int64
	StartTime, EndTime time.Time
	DurationMs         *int64
	Outcome            string
	Error              string
	// RowsIn are input rows (a batch's bronze rows; a run's lines or rows read).
	RowsIn *int64
	// RowsOut are rows written to the main output (silver for a batch).
	RowsOut *int64
	// RowsLate are rows written to quarantine tables (a row late for two aggregations
	// counts in both).
	RowsLate *int64
	// RowsRejected are rows written to a rejects table (validation, expectations with drop).
	RowsRejected *int64
	// RowsDropped are rows dropped as duplicates (the only rows medallion drops).
	RowsDropped *int64
	// Watermark is the batch's watermark (eventTime.watermark).
	Watermark time.Time
	// Expectation, Action, RowsPassed, RowsFailed: an expectation row's name, on_violation and
	// counts.
	Expectation            string
	Action                 string
	RowsPassed, RowsFailed *int64
	// Details is the full record as JSON: a run's summary, a batch's progress, a table's
	// maintenance result.
	Details string
}

// Int is a count for an Event's nullable columns.
func Int(n int64) *int64 { return &n }

// column is one column of the schema with how an Event fills it.
type column struct {
	name     string
	typ      string
	nullable bool
	// Exactly one of str, tm and num is set: the Event field the column holds.
	str func(*Event) *string
	tm  func(*Event) *time.Time
	num func(*Event) **int64
}

var columns = []column{
	{name: "event_id", typ: txlog.TypeString, str: func(e *Event) *string { return &e.EventID }},
	{name: "event_type", typ: txlog.TypeString, str: func(e *Event) *string { return &e.EventType }},
	{name: "event_time", typ: txlog.TypeTimestamp, tm: func(e *Event) *time.Time { return &e.EventTime }},
	{name: "job", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Job }},
	{name: "run_id", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.RunID }},
	{name: "source", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Source }},
	{name: "query_id", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.QueryID }},
	{name: "table_path", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.TablePath }},
	{name: "batch_id", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.BatchID }},
	{name: "start_time", typ: txlog.TypeTimestamp, nullable: true, tm: func(e *Event) *time.Time { return &e.StartTime }},
	{name: "end_time", typ: txlog.TypeTimestamp, nullable: true, tm: func(e *Event) *time.Time { return &e.EndTime }},
	{name: "duration_ms", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.DurationMs }},
	{name: "outcome", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Outcome }},
	{name: "error", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Error }},
	{name: "rows_in", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsIn }},
	{name: "rows_out", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsOut }},
	{name: "rows_late", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsLate }},
	{name: "rows_rejected", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsRejected }},
	{name: "rows_dropped", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsDropped }},
	{name: "watermark", typ: txlog.TypeTimestamp, nullable: true, tm: func(e *Event) *time.Time { return &e.Watermark }},
	{name: "expectation", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Expectation }},
	{name: "action", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Action }},
	{name: "rows_passed", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsPassed }},
	{name: "rows_failed", typ: txlog.TypeLong, nullable: true, num: func(e *Event) **int64 { return &e.RowsFailed }},
	{name: "details", typ: txlog.TypeString, nullable: true, str: func(e *Event) *string { return &e.Details }},
}

// Schema is the event log's schema, in column order.
func Schema() *txlog.StructType {
	st := &txlog.StructType{}
	for _, c := range columns {
		st.Fields = append(st.Fields, txlog.StructField{Name: c.name, Type: txlog.PrimitiveType{Name: c.typ}, Nullable: c.nullable})
	}
	return st
}

// Columns lists the column names, in order.
func Columns() []string {
	out := make([]string, len(columns))
	for i, c := range columns {
		out[i] = c.name
	}
	return out
}

// batchOf lays events out as one batch of the schema.
func batchOf(events []Event) (*pq.Batch, error) {
	b, err := pq.NewBatch(Schema())
	if err != nil {
		return nil, err
	}
	for i := range events {
		e := &events[i]
		if e.EventID == "" || e.EventType == "" || e.EventTime.IsZero() {
			return nil, fmt.Errorf("eventlog: event %d (%q, %q) lacks its id, type or time", i, e.EventID, e.EventType)
		}
		for j, c := range columns {
			col := b.Columns[j]
			switch {
			case c.str != nil:
				if s := *c.str(e); s != "" {
					col.AppendString(s)
				} else {
					col.AppendNull()
				}
			case c.tm != nil:
				if t := *c.tm(e); !t.IsZero() {
					col.AppendTime(t)
				} else {
					col.AppendNull()
				}
			default:
				if n := *c.num(e); n != nil {
					col.AppendInt64(*n)
				} else {
					col.AppendNull()
				}
			}
		}
	}
	return b, nil
}

// Log is the event log table at a path of the lake.
// A Log is safe for concurrent use; it keeps the newest snapshot it has seen, so that a
// long-lived writer (a stream logging every batch) replays only the commits after it.
type Log struct {
	path string
	t    *table.Table
}

// Open returns the event log at path (relative to lake). Nothing is read or written yet.
func Open(lake objstore.Bucket, path string, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{path: path, t: table.Open(objstore.WithPrefix(lake, path), table.Options{Clock: now})}
}

// Path is the table's path under the lake.
func (l *Log) Path() string { return l.path }

func (l *Log) table() *table.Table { return l.t }

// Txn is the idempotence key of an append: the commit records txn(AppID, Version), and an
// append whose txn the table already has (a version >= Version for AppID) writes nothing.
type Txn = table.AppTxn

// BatchTxnAppID is the txn app id under which the micro-batch rows of a query are appended
// (version: the batch id).
func BatchTxnAppID(queryID string) string { return "medallion-event-log/" + queryID }

// Append writes events in one commit (creating the table first when it does not exist). With
// txn set, an append the table already recorded is skipped (written reports whether it was
// written).
func (l *Log) Append(ctx context.Context, events []Event, txn *Txn) (written bool, err error) {
	if len(events) == 0 {
		return false, nil
	}
	b, err := batchOf(events)
	if err != nil {
		return false, err
	}
	t := l.table()
	if err := l.ensure(ctx, t); err != nil {
		return false, err
	}
	opts := table.AppendOptions{Txn: txn}
	res, err := t.Append(ctx, []*pq.Batch{b}, opts)
	if err != nil && txn != nil && errors.Is(err, txlog.ErrConflict) {
		// Another writer committed the same txn (a second process of the same query): the
		// retry sees it and skips.
		res, err = t.Append(ctx, []*pq.Batch{b}, opts)
	}
	if err != nil {
		return false, fmt.Errorf("eventlog: append %d rows to %s: %w", len(events), l.path, err)
	}
	return !res.Skipped, nil
}

// ensure creates the table when it does not exist yet (a concurrent creator may win: fine).
func (l *Log) ensure(ctx context.Context, t *table.Table) error {
	if _, err := t.Latest(ctx); err == nil {
		return nil
	} else if !errors.Is(err, txlog.ErrTableNotFound) {
		return fmt.Errorf("eventlog: open %s: %w", l.path, err)
	}
	// Not partitioned: the log gets a few rows a batch, and a date partition would only make
	// more small files; readers filter on event_time with the files' min/max statistics.
	if _, err := t.Create(ctx, Schema(), nil, map[string]string{}); err != nil && !errors.Is(err, table.ErrTableExists) {
		return fmt.Errorf("eventlog: create %s: %w", l.path, err)
	}
	return nil
}

// TxnVersion is the last version appended under appID, and false when none was (or there is
// no event log yet).
func (l *Log) TxnVersion(ctx context.Context, appID string) (int64, bool, error) {
	snap, err := l.table().Latest(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("eventlog: open %s: %w", l.path, err)
	}
	v, ok := snap.TxnVersion(appID)
	return v, ok, nil
}

// ErrNoEventLog reports that the event log table does not exist (yet).
var ErrNoEventLog = errors.New("eventlog: no event log table")

// Read returns the rows of eventType (every type when empty), oldest event_time first.
func (l *Log) Read(ctx context.Context, eventType string) ([]Event, error) {
	var filter sqlexpr.Expr
	if eventType != "" {
		filter = sqlexpr.Eq("event_type", eventType)
	}
	return l.read(ctx, filter)
}

// Batches returns the batch rows of the streaming query queryID, oldest first: the files whose
// statistics rule the query out are not read.
func (l *Log) Batches(ctx context.Context, queryID string) ([]Event, error) {
	evs, err := l.read(ctx, sqlexpr.And(sqlexpr.Eq("event_type", TypeBatch), sqlexpr.Eq("query_id", queryID)))
	slices.SortStableFunc(evs, func(a, b Event) int { return cmpInt(a.BatchID, b.BatchID) })
	return evs, err
}

func cmpInt(a, b *int64) int {
	switch {
	case a == nil || b == nil:
		return 0
	case *a < *b:
		return -1
	case *a > *b:
		return 1
	}
	return 0
}

func (l *Log) read(ctx context.Context, filter sqlexpr.Expr) ([]Event, error) {
	t := l.table()
	if _, err := t.Latest(ctx); errors.Is(err, txlog.ErrTableNotFound) {
		return nil, fmt.Errorf("%w at %s", ErrNoEventLog, l.path)
	} else if err != nil {
		return nil, fmt.Errorf("eventlog: open %s: %w", l.path, err)
	}
	var out []Event
	for b, err := range t.Scan(ctx, table.ScanOptions{Filter: filter}) {
		if err != nil {
			return nil, fmt.Errorf("eventlog: read %s: %w", l.path, err)
		}
		idx := map[string]*pq.Column{}
		for i, f := range b.Schema.Fields {
			idx[f.Name] = b.Columns[i]
		}
		for r := 0; r < b.Len(); r++ {
			out = append(out, eventAt(idx, r))
		}
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.EventTime.Compare(b.EventTime) })
	return out, nil
}

// eventAt reads row r; columns a newer writer added, or an older table lacks, are skipped.
func eventAt(cols map[string]*pq.Column, r int) Event {
	var e Event
	for _, c := range columns {
		col := cols[c.name]
		if col == nil || col.IsNull(r) {
			continue
		}
		switch {
		case c.str != nil:
			*c.str(&e) = col.StringAt(r)
		case c.tm != nil:
			*c.tm(&e) = time.UnixMicro(col.Int64[r]).UTC()
		default:
			*c.num(&e) = Int(col.Int64[r])
		}
	}
	return e
}
