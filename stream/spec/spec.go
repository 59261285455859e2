// Package spec holds the typed spec of a streaming query: what the stream runner (package
// stream) and the late-data jobs (package late) run, without YAML. jobs builds it from the
// pipeline config (jobs/specs); tests and embedding users may build it directly. A spec is a
// plain value: the engines check it against the tables' schemas when they run, with the same
// errors whether it came from a config or not.
//
// It holds no state, so nothing here is affected by a crash.
package spec

import (
	"time"

	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/table/source"
)

// Query is one streaming query over the lake, with its gold aggregations.
type Query struct {
	// Name is the query's name in its progress reports.
	Name   string
	Tables Tables
	// Rules validate bronze rows on their way to silver (event time, required columns, future
	// skew).
	Rules silver.Rules
	// Dedup are the key columns of the exact dedup (none: no dedup).
	Dedup     []string
	Watermark Watermark
	// IdleTimeout moves the watermark with the clock when the source is silent that long
	// (0: never).
	IdleTimeout time.Duration
	Trigger     Trigger
	// Limit bounds each batch of an available-now or processing-time trigger.
	Limit  source.ReadLimit
	Source source.Options
	// LateAlertFraction logs a warning when a batch's late rows exceed this fraction of its
	// rows (0: never).
	LateAlertFraction float64
	State             State
	Gold              []Aggregation
}

// Tables are the lake paths the query reads and writes.
type Tables struct {
	Bronze, Silver, Rejects string
	// Checkpoint is the stream's checkpoint folder.
	Checkpoint string
	// ChangeDataFeed creates bronze, rejects and silver with the change data feed (config
	// tables.change_data_feed: true; TableProps); the zero value creates them without. A
	// table that exists keeps what it has.
	ChangeDataFeed bool
}

// TableProps are the table properties the query's bronze, rejects and silver are created
// with: props (silver's definition, nil for the others) plus delta.enableChangeDataFeed=true
// when t.ChangeDataFeed. Every creation of them goes through it (ingest, the stream, medallion
// init), so that they agree.
func (t Tables) TableProps(props map[string]string) map[string]string {
	return CreateProps(props, !t.ChangeDataFeed)
}

// Watermark is the event-time watermark's delay; unset: no watermark.
type Watermark struct {
	Delay time.Duration
	Set   bool
}

// TriggerKind says how the query runs.
type TriggerKind string

// The triggers.
const (
	// Once runs one batch over everything new.
	Once TriggerKind = "once"
	// AvailableNow runs batches (within Limit) until the source is drained, then stops.
	AvailableNow TriggerKind = "available-now"
	// ProcessingTime drains the source every Interval until cancelled.
	ProcessingTime TriggerKind = "processing-time"
)

// Trigger is when batches run.
type Trigger struct {
	Kind     TriggerKind
	Interval time.Duration // ProcessingTime only
}

// State tunes the state store.
type State struct {
	// MinDeltasForSnapshot is how many state versions hold deltas between full snapshots.
	MinDeltasForSnapshot int
	// MinBatchesToRetain is how many batches' checkpoint files are kept (0: 100).
	MinBatchesToRetain int
	// DedupRetention keeps dedup keys this long past the watermark.
	DedupRetention time.Duration
}

// The output modes of an aggregation.
const (
	OutputAppend   = "append"
	OutputUpdate   = "update"
	OutputComplete = "complete"
)

// Aggregation is one gold table: windows over the event time, grouped by columns.
type Aggregation struct {
	Name, Table, Quarantine string
	Window                  Window
	GroupBy                 []string
	Aggregates              []Aggregate
	// OutputMode is OutputAppend (or ""), OutputUpdate or OutputComplete.
	OutputMode string
	// TimeColumn is the input column the windows are over (empty: the query's event time;
	// for an aggregation over a join, a time column of the joined table).
	TimeColumn string
	// NoChangeDataFeed creates the gold table without the change data feed (config
	// change_data_feed: false); the zero value creates it with the feed on. A table that
	// exists keeps what it has.
	NoChangeDataFeed bool
}

// Window is a tumbling (Slide = Size), sliding or session window.
type Window struct {
	Session            bool
	Size, Slide, Start time.Duration // tumbling and sliding
	Gap                time.Duration // session
}

// Aggregate is one aggregate column of a gold table.
type Aggregate struct {
	// Fn is the function's name (count, sum, min, max, avg, approx_count_distinct,
	// approx_percentile); Column its input (none: count(*)); As the output column.
	Fn, Column, As   string
	Percentiles      []float64
	RelativeAccuracy float64
	RSD              float64
}

// Join is one stream-stream join query (spec/stream-joins.md): it reads the silver tables of
// two sources as Delta streams, joins them with Spark's rules, appends the joined rows to
// Table and the rows Spark would drop as late to Quarantine (join.QuarantineSchema), and runs
// its own aggregations (Gold, each with TimeColumn) over the joined rows with the watermark
// the join propagates (join.Spec.OutputWatermark).
type Join struct {
	// Name names the join (config joins[].name, progress, metrics, --source).
	Name string
	// Type is the config name of the join type: inner, left_outer, right_outer, full_outer
	// or left_semi (join.ParseType).
	Type        string
	Left, Right JoinInput
	// On are the equi-join key pairs.
	On []JoinKey
	// Lower and Upper bound the time condition:
	// right.time BETWEEN left.time + Lower AND left.time + Upper.
	Lower, Upper time.Duration
	// Table is the joined table, Quarantine the join's late input rows.
	Table, Quarantine string
	// Checkpoint is the join query's checkpoint folder.
	Checkpoint string
	Trigger    Trigger
	// Limit bounds what one batch reads of each side.
	Limit source.ReadLimit
	State State
	// Gold are the aggregations over the joined rows.
	Gold []Aggregation
	// NoChangeDataFeed creates the joined table without the change data feed (config
	// change_data_feed: false); the zero value creates it with the feed on.
	NoChangeDataFeed bool
}

// CreateProps are the table properties a gold or joined table is created with: props (its
// definition) plus delta.enableChangeDataFeed=true unless noFeed. Every creation of a gold or
// joined table goes through it (the stream's outputs, medallion init), so that they agree.
func CreateProps(props map[string]string, noFeed bool) map[string]string {
	out := make(map[string]string, len(props)+1)
	for k, v := range props {
		out[k] = v
	}
	if !noFeed {
		out[PropChangeDataFeed] = "true"
	}
	return out
}

// PropChangeDataFeed is the Delta table property that turns a table's change data feed on.
const PropChangeDataFeed = "delta.enableChangeDataFeed"

// JoinInput is one side of a join: a source's silver table and its event time.
type JoinInput struct {
	// Source is the source's name; joined right columns whose name is taken get the prefix
	// Source + "_".
	Source string
	// Silver is the source's silver table, read as a stream.
	Silver string
	// EventTime is the source's event-time column; Watermark its delay (unset: no watermark).
	EventTime string
	Watermark Watermark
}

// JoinKey is one equality of the join condition: left.Left = right.Right.
type JoinKey struct{ Left, Right string }

// Derived is a gold table kept from another gold's change feed (docs/derived-tables.md): a
// rollup whose tumbling windows nest the upstream's and whose keys are a subset of its keys.
type Derived struct {
	Name, Table string
	// Upstream names the gold it is derived from; UpstreamTable is that gold's table, and
	// UpstreamDerived says whether the upstream is itself derived (its emitted watermark is
	// then in its own table, see late.DerivedWatermarkApp).
	Upstream, UpstreamTable string
	UpstreamDerived         bool
	// Size and Start are the tumbling window (start_time).
	Size, Start time.Duration
	GroupBy     []string
	Aggregates  []Rollup
	// Checkpoint is the checkpoint of the query that feeds the graph's first gold (a
	// source's or a join's): its watermark says which windows are complete. Join, when that
	// query is a join, converts its watermark to the join's output watermark.
	Checkpoint string
	Join       *Join
	// NoChangeDataFeed creates the table without the change data feed (as Aggregation's).
	NoChangeDataFeed bool
}

// Rollup is one aggregate of a derived table over the upstream's aggregate column Column,
// written as As. Fn is what both columns are (count, sum, min, max or avg: a sum of an
// upstream count is a count): the upstream column is read back as that aggregate's mergeable
// value and the values of a window merged.
type Rollup struct{ Fn, Column, As string }
