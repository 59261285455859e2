package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report/eventlog"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// progressReaders is how many progress files StreamProgress reads at once.
const progressReaders = 8

// ErrBadProgress reports a progress file that is not a StreamingQueryProgress JSON object.
var ErrBadProgress = errors.New("report: bad progress file")

// TableStatus is one pipeline table as its transaction log describes it.
type TableStatus struct {
	// Role says what the table is to the pipeline: "bronze", "rejects", "silver",
	// "quarantine events_5m", "gold events_5m".
	Role, Path string
	// Exists is false when nothing has created the table yet; the other fields are then zero.
	Exists  bool
	Version int64
	Files   int
	Bytes   int64
	// LastOperation and LastCommit come from the latest commit's commitInfo (empty when the
	// writer recorded none).
	LastOperation string
	LastCommit    time.Time
	// ChangeFeed is true when the table records its change data feed
	// (delta.enableChangeDataFeed=true); ChangeVersion is then the newest version whose feed
	// has rows, among the last changeLookBack versions (-1: none there), the version a feed
	// consumer (a sink, a rollup) has to reach.
	ChangeFeed    bool
	ChangeVersion int64
}

// changeLookBack bounds how many commits the status reads back for a table's latest change
// version: a gold table changes at almost every version, so the first one or two decide.
const changeLookBack = 20

// Tables reads the latest version of every pipeline table, bronze first and gold last.
func Tables(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline) ([]TableStatus, error) {
	out := []TableStatus{{Role: "bronze", Path: cfg.Tables.Bronze}, {Role: "rejects", Path: cfg.Tables.Rejects},
		{Role: "silver", Path: cfg.Tables.Silver}}
	for _, g := range cfg.Gold {
		out = append(out, TableStatus{Role: "quarantine " + g.Name, Path: g.Quarantine}, TableStatus{Role: "gold " + g.Name, Path: g.Table})
	}
	if err := tableStatuses(ctx, lake, out); err != nil {
		return nil, err
	}
	return out, nil
}

// tableStatuses fills each table's status from its transaction log.
func tableStatuses(ctx context.Context, lake objstore.Bucket, out []TableStatus) error {
	for i := range out {
		ts := &out[i]
		tbl := table.Open(objstore.WithPrefix(lake, ts.Path), table.Options{})
		log := tbl.Log()
		snap, err := log.Snapshot(ctx)
		if errors.Is(err, txlog.ErrTableNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("report: table %s: %w", ts.Path, err)
		}
		ts.Exists, ts.Version, ts.Files, ts.Bytes = true, snap.Version(), len(snap.Files()), snap.TotalSize()
		ts.LastCommit = snap.Timestamp()
		if ts.ChangeFeed = table.ChangeFeedOn(snap); ts.ChangeFeed {
			v, found, err := tbl.LatestChangeVersion(ctx, snap, changeLookBack)
			if err != nil {
				return fmt.Errorf("report: table %s: latest change version: %w", ts.Path, err)
			}
			if ts.ChangeVersion = -1; found {
				ts.ChangeVersion = v
			}
		}
		hist, err := log.History(ctx, 1)
		if err != nil {
			return fmt.Errorf("report: table %s: history: %w", ts.Path, err)
		}
		if len(hist) > 0 {
			ts.LastCommit = hist[0].Timestamp
			if ci := hist[0].CommitInfo; ci != nil {
				ts.LastOperation = ci.Operation
			}
		}
	}
	return nil
}

// BatchProgress is what the report uses of one StreamingQueryProgress.
type BatchProgress struct {
	BatchID                                    int64
	Timestamp                                  time.Time
	NumInputRows                               int64
	InputRowsPerSecond, ProcessedRowsPerSecond float64
	// DurationMs is the trigger's total time (durationMs.triggerExecution).
	DurationMs int64
	// Watermark and MaxEventTime are the eventTime entries (zero when absent).
	Watermark, MaxEventTime time.Time
	// LateRows is each gold aggregation's exact late-row count
	// (sink metric gold.<name>.numLateRowsQuarantined).
	LateRows map[string]int64
	// StateRows is numRowsTotal per state operator, in the progress's order.
	StateRows []NamedCount
	// StateBytes is memoryUsedBytes per state operator, parallel to StateRows (the state's
	// footprint: what a key costs is rows beside bytes).
	StateBytes []NamedCount
	// Expectations are the batch's data-quality counts (progress key expectations), in the
	// config's order; nil without expectations.
	Expectations []ExpectationCounts
	// SilverRows and ValidationRejects are the sink metrics numSilverRows and
	// numValidationRejects (nil when the progress has none).
	SilverRows, ValidationRejects *int64
}

// ExpectationCounts is one expectation's rows in a batch: passed, failed, and of the failed
// the rows dropped to rejects.
type ExpectationCounts struct {
	Name        string `json:"name"`
	OnViolation string `json:"onViolation"`
	Passed      int64  `json:"passed"`
	Failed      int64  `json:"failed"`
	Dropped     int64  `json:"dropped"`
}

// NamedCount is a count with its name.
type NamedCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// progressJSON is the subset of Spark's StreamingQueryProgress read here.
type progressJSON struct {
	BatchID                int64             `json:"batchId"`
	Timestamp              string            `json:"timestamp"`
	NumInputRows           int64             `json:"numInputRows"`
	InputRowsPerSecond     *float64          `json:"inputRowsPerSecond"`
	ProcessedRowsPerSecond *float64          `json:"processedRowsPerSecond"`
	DurationMs             map[string]int64  `json:"durationMs"`
	EventTime              map[string]string `json:"eventTime"`
	StateOperators         []struct {
		OperatorName    string `json:"operatorName"`
		NumRowsTotal    int64  `json:"numRowsTotal"`
		MemoryUsedBytes int64  `json:"memoryUsedBytes"`
	} `json:"stateOperators"`
	Sink struct {
		Metrics map[string]string `json:"metrics"`
	} `json:"sink"`
	Expectations []ExpectationCounts `json:"expectations"`
}

// ParseProgress reads one progress file (key names it in errors).
func ParseProgress(key string, data []byte) (BatchProgress, error) {
	var p progressJSON
	if err := json.Unmarshal(data, &p); err != nil {
		return BatchProgress{}, fmt.Errorf("%w: %s: %v", ErrBadProgress, key, err)
	}
	ts, err := time.Parse(time.RFC3339Nano, p.Timestamp)
	if err != nil {
		return BatchProgress{}, fmt.Errorf("%w: %s: timestamp %q: %v", ErrBadProgress, key, p.Timestamp, err)
	}
	bp := BatchProgress{BatchID: p.BatchID, Timestamp: ts.UTC(), NumInputRows: p.NumInputRows,
		DurationMs: p.DurationMs["triggerExecution"], LateRows: map[string]int64{}}
	if p.InputRowsPerSecond != nil {
		bp.InputRowsPerSecond = *p.InputRowsPerSecond
	}
	if p.ProcessedRowsPerSecond != nil {
		bp.ProcessedRowsPerSecond = *p.ProcessedRowsPerSecond
	}
	for k, dst := range map[string]*time.Time{"watermark": &bp.Watermark, "max": &bp.MaxEventTime} {
		if s, ok := p.EventTime[k]; ok {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return BatchProgress{}, fmt.Errorf("%w: %s: eventTime.%s %q: %v", ErrBadProgress, key, k, s, err)
			}
			*dst = t.UTC()
		}
	}
	bp.Expectations = p.Expectations
	for _, op := range p.StateOperators {
		bp.StateRows = append(bp.StateRows, NamedCount{Name: op.OperatorName, Count: op.NumRowsTotal})
		bp.StateBytes = append(bp.StateBytes, NamedCount{Name: op.OperatorName, Count: op.MemoryUsedBytes})
	}
	for k, dst := range map[string]**int64{"numSilverRows": &bp.SilverRows, "numValidationRejects": &bp.ValidationRejects} {
		if v, ok := p.Sink.Metrics[k]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return BatchProgress{}, fmt.Errorf("%w: %s: sink metric %s = %q: not an integer", ErrBadProgress, key, k, v)
			}
			*dst = &n
		}
	}
	for k, v := range p.Sink.Metrics {
		name, ok := strings.CutPrefix(k, "gold.")
		if !ok {
			continue
		}
		name, ok = strings.CutSuffix(name, ".numLateRowsQuarantined")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return BatchProgress{}, fmt.Errorf("%w: %s: sink metric %s = %q: not an integer", ErrBadProgress, key, k, v)
		}
		bp.LateRows[name] = n
	}
	return bp, nil
}

// StreamProgress reads the last limit progress files (all when limit <= 0) the stream keeps under
// <stream.checkpoint>/progress/N.json, in batch order. Files that cannot be read as progress
// are skipped and reported in problems, so that one bad file does not hide the others.
//
// When the event log (docs/event-log.md) has the query's batches, they are read from there
// instead: it keeps the history the checkpoint's cleanup removes.
func StreamProgress(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, limit int) (batches []BatchProgress, problems []string, err error) {
	ckpt := checkpoint.Open(objstore.WithPrefix(lake, cfg.Stream.Checkpoint))
	logged, problems, ok := eventLogProgress(ctx, lake, cfg, ckpt, limit)
	ns, err := ckpt.ProgressBatches(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("report: %w", err)
	}
	if ok {
		// The files the event log lacks (a write of it failed, or is under way) come after it.
		last := logged[len(logged)-1].BatchID
		ns = slices.DeleteFunc(ns, func(n int64) bool { return n <= last })
		batches = logged
	} else {
		problems = nil
	}
	if limit > 0 && len(ns) > limit {
		ns = ns[len(ns)-limit:]
	}
	if limit > 0 && len(batches)+len(ns) > limit {
		batches = batches[len(batches)+len(ns)-limit:]
	}
	// Progress files are small: reading them a few at a time hides the store's latency.
	type result struct {
		data []byte
		err  error
	}
	results := make([]result, len(ns))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(progressReaders, len(ns)) {
		wg.Go(func() {
			for i := range next {
				results[i].data, results[i].err = ckpt.ReadProgress(ctx, ns[i])
			}
		})
	}
	for i := range ns {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, n := range ns {
		key := path.Join(cfg.Stream.Checkpoint, checkpoint.ProgressKey(n))
		data, err := results[i].data, results[i].err
		if errors.Is(err, objstore.ErrNotFound) {
			continue // removed by a cleanup since the listing
		}
		if err != nil {
			return nil, nil, fmt.Errorf("report: read %s: %w", key, err)
		}
		bp, err := ParseProgress(key, data)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		batches = append(batches, bp)
	}
	return batches, problems, nil
}

// eventLogProgress is StreamProgress from the event log's batch rows (their details are the
// progress JSON); false when the log is off, missing, unreadable or has no batch of the query
// (the caller then reads the progress files).
func eventLogProgress(ctx context.Context, lake objstore.Bucket, cfg *config.Pipeline, ckpt *checkpoint.Dir, limit int) ([]BatchProgress, []string, bool) {
	p, on := cfg.EventLogPath()
	if !on {
		return nil, nil, false
	}
	queryID, err := ckpt.ReadQueryID(ctx)
	if err != nil {
		return nil, nil, false
	}
	evs, err := eventlog.Open(lake, p, nil).Batches(ctx, queryID)
	if err != nil || len(evs) == 0 {
		return nil, nil, false
	}
	if limit > 0 && len(evs) > limit {
		evs = evs[len(evs)-limit:]
	}
	var batches []BatchProgress
	var problems []string
	for _, e := range evs {
		bp, err := ParseProgress(p+" "+e.EventID, []byte(e.Details))
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		batches = append(batches, bp)
	}
	return batches, problems, len(batches) > 0
}
