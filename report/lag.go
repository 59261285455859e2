package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// ErrBadRange reports a lag range whose end is not after its start.
var ErrBadRange = errors.New("report: bad time range")

// ErrNoBronze reports a pipeline whose bronze table does not exist yet: there is no lag to
// measure.
var ErrNoBronze = errors.New("report: no bronze table yet")

// RelativeAccuracy bounds the relative error of the lag percentiles: the sketch returns, for
// the rank asked, a value within 0.5% of the true one.
const RelativeAccuracy = 0.005

// LagOptions select the rows of a lag analysis.
type LagOptions struct {
	// From and To bound the event time, [From, To); a zero value leaves that side open. Bronze
	// files whose event-time stats fall outside are not read.
	From, To time.Time
}

// Bucket is one bar of the lag histogram: the rows with Lo < lag <= Hi. The first bucket has
// Lo 0 (lags of zero included), the last has Hi 0 (no upper bound). Negative lags are counted
// in LagReport.Negative, not here.
type Bucket struct {
	Lo, Hi time.Duration
	Count  int64
}

// Label names the bucket for a text histogram or an axis ("1m-2m", "<=1s", ">7d").
func (b Bucket) Label() string {
	switch {
	case b.Lo <= 0:
		return "<=" + niceName(b.Hi)
	case b.Hi <= 0:
		return ">" + niceName(b.Lo)
	}
	return niceName(b.Lo) + "-" + niceName(b.Hi)
}

// Candidate is one watermark and the rows it would have made late.
type Candidate struct {
	// Name says where the value comes from: "1x p95", "2x p95", "3x p95", "current",
	// "recommended".
	Name      string
	Watermark time.Duration
	// LateRows are the rows whose lag exceeds Watermark. This approximates the stream, which
	// judges a (row, window) pair late when the window's end is at or before the previous
	// batch's max event time minus the watermark: a row is given (window end - event time)
	// more slack there, and the max event time seen stands in for the ingest time, so the
	// stream's counts differ from these, usually lower.
	LateRows     int64
	LateFraction float64
	// Exact is false when LateRows was read from the sketch (within 0.5% of Watermark); true
	// when it was counted row by row (the current watermark and the histogram's edges).
	Exact bool
}

// DayCount is a number of rows on one UTC day ("2024-05-01").
type DayCount struct {
	Day  string
	Rows int64
}

// QuarantineLate is what one gold aggregation's quarantine table holds.
type QuarantineLate struct {
	Gold, Table string
	// Exists is false when the stream has not created the table yet.
	Exists bool
	Rows   int64
	// DayColumn is the column the days are taken from: _ingest_time (when the row arrived)
	// when the table has it, else the event time.
	DayColumn string
	PerDay    []DayCount
	// MergedVersion is the last quarantine version merge-late folded into gold (-1: none yet).
	// Merged and Pending split the whole table's rows (whatever the range) into those
	// versions and the later ones, from file stats (-1 when a file has no row count).
	MergedVersion   int64
	Merged, Pending int64
	// ProgressPerDay is the late rows the stream's progress reports for this aggregation,
	// per UTC day of batch time (the latest MaxLagProgress batches).
	ProgressPerDay []DayCount
}

// LagReport is the lag distribution of bronze rows: lag = _ingest_time - event time. The
// ingest time is when the ingest batch that read the row started, so the lag includes the
// time an object waited in the landing prefix for ingest to run: schedule ingest often (or
// event-driven) for a lag that measures the sources rather than the schedule.
type LagReport struct {
	From, To  time.Time
	Table     string
	EventTime string
	// Rows have both timestamps; NullEventTime rows lack an event time and are left out
	// (counted without a range only: a range excludes them anyway).
	Rows, NullEventTime int64
	// Future counts rows whose event time is more than the config's max_future_skew after
	// their ingest time: the stream rejects them (reason "future"), so they are left out of
	// Rows and of every figure below, as they would only distort the average.
	Future int64
	// Negative counts the other rows whose event time is after their ingest time (clock
	// skew); they are part of Rows and of the percentiles.
	Negative int64
	// Avg, Min and Max are exact; the percentiles are the values at rank floor(q*(Rows-1))
	// of the sorted lags, within RelativeAccuracy.
	Avg, Min, Max      time.Duration
	P50, P90, P95, P99 time.Duration
	Histogram          []Bucket
	// ArrivalP95, ArrivalP99 and ArrivalMax measure arrival order: how far behind the newest
	// event time ingested before it (in ingest order) a row's event time is. The stream judges
	// lateness against that maximum, so these are the lags a watermark must cover.
	ArrivalP95, ArrivalP99, ArrivalMax time.Duration
	// Backfill is true when the lag is a backfill's: event times far behind the ingest time in
	// bulk (p50 at least 1h and 4x ArrivalP95) while rows arrive in about event-time order.
	// The recommendation and the candidates are then based on arrival order.
	Backfill bool
	// Current is the config's stream watermark (0 when unset).
	Current     time.Duration
	Recommended time.Duration
	Candidates  []Candidate
	Quarantine  []QuarantineLate
	// Kafka is the consumer lag of a Kafka landing (nil for a files landing), filled by jobs.
	Kafka *KafkaLag
}

// niceLadder is the list of "nice" watermark values; a recommendation is rounded up to one of
// them (whole days past the end) and the histogram's edges are the same values, so the late
// fractions of nice watermarks are exact.
var niceLadder = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
	24 * time.Hour, 48 * time.Hour, 72 * time.Hour, 7 * 24 * time.Hour,
}

const day = 24 * time.Hour

// Recommend is the recommended watermark for a p95 lag: the smallest nice value at least
// 2 x p95 (nice values: 1s 2s 5s 10s 15s 30s 1m 2m 5m 10m 15m 30m 1h 2h 3h 6h 12h 1d 2d 3d 7d,
// then whole days). The ladder's steps are at most 2.5x, so the result lies between 2 and
// 5 x p95, and between 2 and 3 x p95 whenever a nice value falls in that range. A p95 at or
// below zero gives the smallest nice value.
func Recommend(p95 time.Duration) time.Duration {
	target := 2 * max(p95, 0)
	for _, v := range niceLadder {
		if v >= target {
			return v
		}
	}
	return (target + day - 1) / day * day
}

// niceName prints a duration in the largest unit that divides it ("15m", "2h", "7d", "90s").
func niceName(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{day, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d != 0 && d%u.d == 0 {
			return fmt.Sprintf("%d%s", d/u.d, u.name)
		}
	}
	return d.String()
}

// lagAcc accumulates lags in microseconds.
type lagAcc struct {
	sketch           *ddsketch.DDSketch
	edges            []int64 // histogram upper bounds (µs), ascending
	counts           []int64 // len(edges)+1: the last is the open bucket
	rows, neg        int64
	sum              float64 // seconds
	min, max         int64
	current          int64 // µs; 0: none
	futureSkew       int64 // µs: a lag below -futureSkew is a future event
	future           int64
	lateAtCurrent    int64
	nullEventTime    int64
	hasMin, checkCur bool
}

func newLagAcc(current, futureSkew time.Duration) (*lagAcc, error) {
	sk, err := ddsketch.LogUnboundedDenseDDSketch(RelativeAccuracy)
	if err != nil {
		return nil, fmt.Errorf("report: sketch: %w", err)
	}
	a := &lagAcc{sketch: sk, current: current.Microseconds(), checkCur: current > 0, futureSkew: futureSkew.Microseconds()}
	for _, v := range niceLadder {
		a.edges = append(a.edges, v.Microseconds())
	}
	a.counts = make([]int64, len(a.edges)+1)
	return a, nil
}

func (a *lagAcc) add(lag int64) {
	if lag < -a.futureSkew {
		a.future++
		return
	}
	a.rows++
	a.sum += float64(lag) / 1e6
	if !a.hasMin || lag < a.min {
		a.min = lag
	}
	if !a.hasMin || lag > a.max {
		a.max = lag
	}
	a.hasMin = true
	if a.checkCur && lag > a.current {
		a.lateAtCurrent++
	}
	// The sketch cannot fail on a finite value.
	_ = a.sketch.Add(float64(lag) / 1e6)
	if lag < 0 {
		a.neg++
		return
	}
	i, _ := slices.BinarySearch(a.edges, lag) // first edge >= lag: the bucket (edge[i-1], edge[i]]
	a.counts[i]++
}

// lateFromSketch estimates the rows with lag > w (seconds) from the sketch's bins.
func (a *lagAcc) lateFromSketch(w float64) int64 {
	var n float64
	a.sketch.ForEach(func(v, c float64) bool {
		if v > w {
			n += c
		}
		return false
	})
	return int64(math.Round(n))
}

// lateAtEdge counts the rows with lag > edges[i] exactly from the histogram.
func (a *lagAcc) lateAtEdge(i int) int64 {
	var n int64
	for _, c := range a.counts[i+1:] {
		n += c
	}
	return n
}

func (a *lagAcc) quantile(q float64) time.Duration {
	v, err := a.sketch.GetValueAtQuantile(q)
	if err != nil {
		return 0
	}
	return time.Duration(math.Round(v*1e6)) * time.Microsecond
}

// candidate fills in the late rows of watermark w: exact when w is the current watermark or a
// histogram edge, from the sketch otherwise.
func (a *lagAcc) candidate(name string, w time.Duration) Candidate {
	c := Candidate{Name: name, Watermark: w}
	us := w.Microseconds()
	switch i, found := slices.BinarySearch(a.edges, us); {
	case a.checkCur && us == a.current:
		c.LateRows, c.Exact = a.lateAtCurrent, true
	case found:
		c.LateRows, c.Exact = a.lateAtEdge(i), true
	default:
		c.LateRows = a.lateFromSketch(float64(us) / 1e6)
	}
	if a.rows > 0 {
		c.LateFraction = float64(c.LateRows) / float64(a.rows)
	}
	return c
}

// Lag measures lag = _ingest_time - event time over the bronze rows whose event time is in
// the options' range (future events beyond stream.max_future_skew counted apart), reading only those two columns and skipping files by their event-time
// stats. When the quarantine tables exist, it counts their rows per day too.
func Lag(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, opts LagOptions) (*LagReport, error) {
	if !opts.From.IsZero() && !opts.To.IsZero() && !opts.To.After(opts.From) {
		return nil, fmt.Errorf("%w: --to %s is not after --from %s", ErrBadRange,
			opts.To.UTC().Format(time.RFC3339), opts.From.UTC().Format(time.RFC3339))
	}
	ev := cfg.Stream.EventTime
	rep := &LagReport{From: opts.From, To: opts.To, Table: cfg.Tables.Bronze, EventTime: ev,
		Current: cfg.Stream.Watermark.Duration}
	acc, err := newLagAcc(rep.Current, cfg.Stream.MaxFutureSkew.Duration)
	if err != nil {
		return nil, err
	}
	bt := table.Open(objstore.WithPrefix(lake, cfg.Tables.Bronze), table.Options{})
	snap, err := bt.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoBronze, cfg.Tables.Bronze)
	}
	if err != nil {
		return nil, fmt.Errorf("report: bronze %s: %w", cfg.Tables.Bronze, err)
	}
	arr, err := newLagAcc(rep.Current, cfg.Stream.MaxFutureSkew.Duration)
	if err != nil {
		return nil, err
	}
	lo, hi := rangeMicros(opts)
	// Rows in the order ingest committed them (a bronze file holds its landing objects' lines in
	// order), so that the running maximum event time is what the stream had seen before a row.
	newest := int64(math.MinInt64)
	for b, err := range scanPruned(ctx, bt, snap, ingestOrder(snap.Files()), []string{ev, bronze.ColIngestTime}, rangeFilter(ev, opts)) {
		if err != nil {
			return nil, fmt.Errorf("report: scan bronze %s: %w", cfg.Tables.Bronze, err)
		}
		et, it := b.Columns[0], b.Columns[1]
		if et.Kind != pq.KindInt64 || it.Kind != pq.KindInt64 {
			return nil, fmt.Errorf("report: bronze %s: columns %s and %s must be timestamps", cfg.Tables.Bronze, ev, bronze.ColIngestTime)
		}
		for i := range b.Len() {
			if et.IsNull(i) || it.IsNull(i) {
				if lo == math.MinInt64 && hi == math.MaxInt64 {
					acc.nullEventTime++ // a range excludes rows without an event time
				}
				continue
			}
			if t := et.Int64[i]; t >= lo && t < hi {
				lag := it.Int64[i] - t
				acc.add(lag)
				if lag < -acc.futureSkew {
					continue // the stream rejects it: it moves no watermark
				}
				newest = max(newest, t)
				arr.add(newest - t)
			}
		}
	}
	rep.fill(acc, arr)
	queryID, err := streamQueryID(ctx, lake, cfg)
	if err != nil {
		return nil, err
	}
	batches, _, err := StreamProgress(ctx, lake, cfg, MaxLagProgress)
	if err != nil {
		return nil, err
	}
	for i := range cfg.Gold {
		g := &cfg.Gold[i]
		q, err := quarantineLate(ctx, lake, g, ev, opts)
		if err != nil {
			return nil, err
		}
		if err := q.mergeState(ctx, lake, g, queryID); err != nil {
			return nil, err
		}
		q.ProgressPerDay = progressPerDay(batches, g.Name)
		rep.Quarantine = append(rep.Quarantine, q)
	}
	return rep, nil
}

// MaxLagProgress bounds the progress files a lag analysis reads for its per-day late rows
// (two days of one-minute batches): each is one GET.
const MaxLagProgress = 2880

// progressPerDay sums one aggregation's late rows per UTC day of batch time.
func progressPerDay(batches []BatchProgress, name string) []DayCount {
	var out []DayCount
	for _, b := range batches {
		n := b.LateRows[name]
		d := b.Timestamp.UTC().Format(time.DateOnly)
		if k := len(out); k > 0 && out[k-1].Day == d {
			out[k-1].Rows += n
			continue
		}
		out = append(out, DayCount{Day: d, Rows: n})
	}
	return out
}

// streamQueryID reads the stream's query id from its checkpoint ("" before the first run).
func streamQueryID(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline) (string, error) {
	id, err := checkpoint.Open(objstore.WithPrefix(lake, cfg.Stream.Checkpoint)).ReadQueryID(ctx)
	if errors.Is(err, checkpoint.ErrNoQuery) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("report: %w", err)
	}
	return id, nil
}

// mergeState finds the last quarantine version merge-late folded into gold (the version of
// gold's txn "merge-late:" + query id) and splits the quarantine's rows, by file stats, into
// merged (in versions up to it) and pending (after it).
func (q *QuarantineLate) mergeState(ctx context.Context, lake objstore.Bucket, g *config.Gold, queryID string) error {
	q.MergedVersion, q.Merged, q.Pending = -1, -1, -1
	if !q.Exists {
		return nil
	}
	qlog := table.Open(objstore.WithPrefix(lake, g.Quarantine), table.Options{}).Log()
	latest, err := qlog.Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("report: quarantine %s: %w", g.Quarantine, err)
	}
	total, ok := statsRows(latest.Files())
	if !ok {
		return nil
	}
	q.Merged, q.Pending = 0, total
	if queryID == "" {
		return nil
	}
	gsnap, err := table.Open(objstore.WithPrefix(lake, g.Table), table.Options{}).Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("report: gold %s: %w", g.Table, err)
	}
	v, ok := gsnap.TxnVersion(late.AppIDPrefix + queryID)
	if !ok {
		return nil
	}
	q.MergedVersion = v
	at, err := qlog.SnapshotAt(ctx, v)
	if err != nil {
		return fmt.Errorf("report: quarantine %s version %d: %w", g.Quarantine, v, err)
	}
	merged, ok := statsRows(at.Files())
	if !ok {
		q.Merged, q.Pending = -1, -1
		return nil
	}
	q.Merged, q.Pending = merged, total-merged
	return nil
}

// statsRows sums numRecords over files; false when a file has no such stat.
func statsRows(files []*txlog.Add) (int64, bool) {
	var n int64
	for _, f := range files {
		var st struct {
			NumRecords *int64 `json:"numRecords"`
		}
		if f.Stats == "" || json.Unmarshal([]byte(f.Stats), &st) != nil || st.NumRecords == nil {
			return 0, false
		}
		n += *st.NumRecords
	}
	return n, true
}

// scanPruned yields the projected columns of the files (of snap) whose stats may match filter
// (nil: all files), in the order given. It filters files only: callers test rows themselves, which costs one comparison a
// row instead of a predicate evaluation over a copied batch.
func scanPruned(ctx context.Context, t *table.Table, snap *txlog.Snapshot, files []*txlog.Add, cols []string, filter sqlexpr.Expr) iter.Seq2[*pq.Batch, error] {
	return func(yield func(*pq.Batch, error) bool) {
		if filter != nil {
			fs, err := t.FileScan(snap, cols, filter)
			if err != nil {
				yield(nil, err)
				return
			}
			files = fs.Files(files)
		}
		fs, err := t.FileScan(snap, cols, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		for b, err := range fs.Read(ctx, files) {
			if !yield(b, err) || err != nil {
				return
			}
		}
	}
}

// rangeMicros is the options' range as [lo, hi) in microseconds, open ends at the int64 limits.
func rangeMicros(opts LagOptions) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if !opts.From.IsZero() {
		lo = opts.From.UnixMicro()
	}
	if !opts.To.IsZero() {
		hi = opts.To.UnixMicro()
	}
	return lo, hi
}

// rangeFilter is From <= ev < To, or nil for an open range.
func rangeFilter(ev string, opts LagOptions) sqlexpr.Expr {
	var parts []sqlexpr.Expr
	if !opts.From.IsZero() {
		parts = append(parts, sqlexpr.Ge(ev, opts.From.UTC()))
	}
	if !opts.To.IsZero() {
		parts = append(parts, sqlexpr.Lt(ev, opts.To.UTC()))
	}
	if len(parts) == 0 {
		return nil
	}
	return sqlexpr.And(parts...)
}

// ingestOrder sorts bronze files by the first ingest time they hold (their stats), then by
// path: the order ingest committed them. Files without the stat keep their path order, first.
func ingestOrder(files []*txlog.Add) []*txlog.Add {
	type keyed struct {
		add   *txlog.Add
		first string // RFC 3339 in UTC with milliseconds: sorts as text
	}
	ks := make([]keyed, len(files))
	for i, f := range files {
		var st struct {
			MinValues map[string]any `json:"minValues"`
		}
		ks[i].add = f
		if f.Stats != "" && json.Unmarshal([]byte(f.Stats), &st) == nil {
			ks[i].first, _ = st.MinValues[bronze.ColIngestTime].(string)
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.first, b.first) })
	out := make([]*txlog.Add, len(ks))
	for i, k := range ks {
		out[i] = k.add
	}
	return out
}

// Backfill thresholds: the lag measured is a backfill's when the median row arrived at least
// backfillMinP50 after its event time and at least backfillRatio times later than rows
// arrive behind the newest event time before them (arrival p95).
const (
	backfillMinP50 = time.Hour
	backfillRatio  = 4
)

func (r *LagReport) fill(a, arr *lagAcc) {
	r.Rows, r.Negative, r.NullEventTime, r.Future = a.rows, a.neg, a.nullEventTime, a.future
	for i, c := range a.counts {
		var b Bucket
		if i > 0 {
			b.Lo = time.Duration(a.edges[i-1]) * time.Microsecond
		}
		if i < len(a.edges) {
			b.Hi = time.Duration(a.edges[i]) * time.Microsecond
		}
		b.Count = c
		r.Histogram = append(r.Histogram, b)
	}
	if a.rows == 0 {
		r.Recommended = Recommend(0)
		return
	}
	r.Avg = time.Duration(math.Round(a.sum/float64(a.rows)*1e6)) * time.Microsecond
	r.Min = time.Duration(a.min) * time.Microsecond
	r.Max = time.Duration(a.max) * time.Microsecond
	r.P50, r.P90, r.P95, r.P99 = a.quantile(0.5), a.quantile(0.9), a.quantile(0.95), a.quantile(0.99)
	r.ArrivalP95, r.ArrivalP99, r.ArrivalMax = arr.quantile(0.95), arr.quantile(0.99), time.Duration(arr.max)*time.Microsecond
	// A backfill (history ingested in bulk) has event times far behind the ingest time while
	// its rows arrive in about event-time order: the ingest lag then measures how old the
	// history is, not how late rows arrive, and the watermark the stream needs follows from
	// arrival order (the stream judges rows against the newest event time it has seen).
	r.Backfill = r.P50 >= backfillMinP50 && r.P50 >= backfillRatio*max(r.ArrivalP95, time.Second)
	basis, p95 := a, r.P95
	if r.Backfill {
		basis, p95 = arr, r.ArrivalP95
	}
	r.Recommended = Recommend(p95)
	for k := 1; k <= 3; k++ {
		if w := time.Duration(k) * p95; w > 0 {
			r.Candidates = append(r.Candidates, basis.candidate(fmt.Sprintf("%dx p95", k), w))
		}
	}
	if r.Current > 0 {
		r.Candidates = append(r.Candidates, basis.candidate("current", r.Current))
	}
	r.Candidates = append(r.Candidates, basis.candidate("recommended", r.Recommended))
}

// quarantineLate counts one quarantine table's rows per UTC day, reading whichever of
// _ingest_time and the event time it has (older tables may lack the newer columns).
func quarantineLate(ctx context.Context, lake objstore.Bucket, g *config.Gold, ev string, opts LagOptions) (QuarantineLate, error) {
	q := QuarantineLate{Gold: g.Name, Table: g.Quarantine}
	t := table.Open(objstore.WithPrefix(lake, g.Quarantine), table.Options{})
	snap, err := t.Log().Snapshot(ctx)
	if errors.Is(err, txlog.ErrTableNotFound) {
		return q, nil
	}
	if err != nil {
		return q, fmt.Errorf("report: quarantine %s: %w", g.Quarantine, err)
	}
	q.Exists = true
	schema, err := snap.Schema()
	if err != nil {
		return q, fmt.Errorf("report: quarantine %s: %w", g.Quarantine, err)
	}
	hasEv := schema.Field(ev) != nil
	switch {
	case schema.Field(bronze.ColIngestTime) != nil:
		q.DayColumn = bronze.ColIngestTime
	case hasEv:
		q.DayColumn = ev
	}
	// Column 0 gives the day, column 1 (when the table has the event time) the range test.
	cols := []string{schema.Fields[0].Name}
	if q.DayColumn != "" {
		cols[0] = q.DayColumn
	}
	var filter sqlexpr.Expr
	if hasEv {
		cols = append(cols, ev)
		filter = rangeFilter(ev, opts)
	}
	lo, hi := rangeMicros(opts)
	perDay := map[int64]int64{}
	for b, err := range scanPruned(ctx, t, snap, snap.Files(), cols, filter) {
		if err != nil {
			return q, fmt.Errorf("report: scan quarantine %s: %w", g.Quarantine, err)
		}
		for j, c := range b.Columns {
			if c.Kind != pq.KindInt64 && (j > 0 || q.DayColumn != "") {
				return q, fmt.Errorf("report: quarantine %s: column %s is not a timestamp", g.Quarantine, cols[j])
			}
		}
		for i := range b.Len() {
			if hasEv {
				et := b.Columns[1]
				if et.IsNull(i) && (lo != math.MinInt64 || hi != math.MaxInt64) {
					continue
				}
				if !et.IsNull(i) && (et.Int64[i] < lo || et.Int64[i] >= hi) {
					continue
				}
			}
			q.Rows++
			if c := b.Columns[0]; q.DayColumn != "" && !c.IsNull(i) {
				perDay[floorDiv(c.Int64[i], day.Microseconds())]++
			}
		}
	}
	days := make([]int64, 0, len(perDay))
	for d := range perDay {
		days = append(days, d)
	}
	slices.Sort(days)
	for _, d := range days {
		q.PerDay = append(q.PerDay, DayCount{Day: time.UnixMicro(d * day.Microseconds()).UTC().Format(time.DateOnly), Rows: perDay[d]})
	}
	return q, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
