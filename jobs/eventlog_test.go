package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report"
	"github.com/medallion-lake/medallion/report/eventlog"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/table"
)

// eventLogPipeline is the test pipeline with two expectations (one dropping) and extra YAML.
func eventLogPipeline(t *testing.T, dir, extra string) Env {
	t.Helper()
	cfg := testPipeline(t, dir, `expectations:
  - {name: non_negative, expect: "amount >= 0", on_violation: drop}
  - {name: is_a, expect: "event_type = 'a'", on_violation: warn}
`+extra)
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Lake.Close() })
	return env
}

// landEvents puts n events as one landing object; amounts i-3 (three negative when n >= 3),
// type b for every fourth. It returns the negative amounts and the non-"a" types.
func landEvents(t *testing.T, env Env, key string, first, n int) (negative, notA int64) {
	t.Helper()
	var lines strings.Builder
	for i := first; i < first+n; i++ {
		typ := "a"
		if i%4 == 0 {
			typ, notA = "b", notA+1
		}
		if i-3 < 0 {
			negative++
		}
		fmt.Fprintf(&lines, `{"event_id":"e%d","event_type":%q,"amount":%d,"event_time":"2024-05-01T12:%02d:00Z"}`+"\n", i, typ, i-3, i%60)
	}
	if err := objstore.PutBytes(context.Background(), env.Lake, key, []byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	return negative, notA
}

func readEvents(t *testing.T, env Env) []eventlog.Event {
	t.Helper()
	evs, err := eventlog.Open(env.Lake, config.DefaultEventLog, nil).Read(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// progressBatches lists the batch ids whose progress the stream's checkpoint keeps: the
// oracle for the batch rows, read from the engine's own files, not from the event log.
func progressBatches(t *testing.T, env Env) []int64 {
	t.Helper()
	ns, err := checkpoint.Open(objstore.WithPrefix(env.Lake, env.Config.Stream.Checkpoint)).ProgressBatches(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func streamJob(ctx context.Context, env Env) (any, error) {
	return Stream(ctx, env, config.Trigger{}, nil)
}
func ingestJob(ctx context.Context, env Env) (any, error) { return Ingest(ctx, env) }

// TestEventLogRowsForEveryJobKind: after ingest, stream (two batches over two runs),
// merge-late, optimize, vacuum and checkpoint, the event log has one run row per run with its
// outcome, one batch row per micro-batch the checkpoint reports, one row per expectation and
// batch with the counts the data implies, and one maintenance row per table and maintenance
// run (the event log's own table included).
func TestEventLogRowsForEveryJobKind(t *testing.T) {
	ctx := context.Background()
	env := eventLogPipeline(t, t.TempDir(), "")
	neg1, notA1 := landEvents(t, env, "landing/events/a.json", 0, 10)
	runs := []string{}
	run := func(job string, fn Func) {
		t.Helper()
		if _, err := RunLogged(ctx, env, job, "", fn); err != nil {
			t.Fatalf("%s: %v", job, err)
		}
		runs = append(runs, job)
	}
	run("ingest", ingestJob)
	run("stream", streamJob)
	neg2, notA2 := landEvents(t, env, "landing/events/b.json", 10, 6)
	run("ingest", ingestJob)
	run("stream", streamJob)
	run("merge-late", func(ctx context.Context, env Env) (any, error) { return MergeLate(ctx, env, "") })
	for _, j := range []string{"optimize", "vacuum", "checkpoint"} {
		run(j, Lookup(j))
	}
	// A failed run is logged too, with its error.
	boom := errors.New("boom: the way out is to rerun")
	if _, err := RunLogged(ctx, env, "replay", "", func(context.Context, Env) (any, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("RunLogged returned %v, want the job's error", err)
	}

	evs := readEvents(t, env)
	ids := map[string]bool{}
	var gotRuns []string
	var batchIDs []int64
	var rowsIn int64
	failed := map[string]int64{}
	maint := map[string][]string{}
	for _, e := range evs {
		if ids[e.EventID] {
			t.Errorf("event %s appears twice", e.EventID)
		}
		ids[e.EventID] = true
		switch e.EventType {
		case eventlog.TypeJobRun:
			gotRuns = append(gotRuns, e.Job)
			if e.Job == "replay" {
				if e.Outcome != eventlog.OutcomeError || e.Error != boom.Error() {
					t.Errorf("failed run row: outcome %q error %q", e.Outcome, e.Error)
				}
				continue
			}
			if e.Outcome != eventlog.OutcomeOK || e.StartTime.IsZero() || e.EndTime.Before(e.StartTime) || e.Details == "" {
				t.Errorf("run row %+v: want ok with start, end and details", e)
			}
		case eventlog.TypeBatch:
			batchIDs = append(batchIDs, *e.BatchID)
			rowsIn += *e.RowsIn
			if e.Source != "events" || e.QueryID == "" || e.Watermark.IsZero() || !strings.Contains(e.Details, `"batchId"`) {
				t.Errorf("batch row %+v: want source events, a query id, a watermark and the progress", e)
			}
		case eventlog.TypeExpectation:
			failed[e.Expectation] += *e.RowsFailed
		case eventlog.TypeMaintenance:
			maint[e.Job] = append(maint[e.Job], e.TablePath)
		}
	}
	if want := append(runs, "replay"); !slices.Equal(gotRuns, want) {
		t.Errorf("run rows %v, want %v", gotRuns, want)
	}
	slices.Sort(batchIDs)
	if want := progressBatches(t, env); len(want) < 2 || !slices.Equal(batchIDs, want) {
		t.Errorf("batch rows %v, want the checkpoint's progress batches %v (at least two)", batchIDs, want)
	}
	if rowsIn != 16 {
		t.Errorf("batch rows_in add up to %d, want the 16 landed rows", rowsIn)
	}
	if failed["non_negative"] != neg1+neg2 || failed["is_a"] != notA1+notA2 {
		t.Errorf("expectation failures %v, want non_negative %d, is_a %d", failed, neg1+neg2, notA1+notA2)
	}
	// The report reads the history from the event log: with the checkpoint's progress files
	// gone (as its cleanup removes old ones), it still has every batch, from the log.
	dir := objstore.WithPrefix(env.Lake, env.Config.Stream.Checkpoint)
	for _, n := range progressBatches(t, env) {
		if err := dir.Delete(ctx, checkpoint.ProgressKey(n)); err != nil {
			t.Fatal(err)
		}
	}
	got, problems, err := report.StreamProgress(ctx, env.Lake, env.Config, 0)
	if err != nil || len(problems) > 0 {
		t.Fatalf("report.StreamProgress: %v %v", err, problems)
	}
	var reported []int64
	for _, b := range got {
		reported = append(reported, b.BatchID)
	}
	if !slices.Equal(reported, batchIDs) {
		t.Errorf("the report's batches %v, want the event log's %v", reported, batchIDs)
	}

	tables := append(TablePaths(env), config.DefaultEventLog)
	for _, j := range []string{"optimize", "vacuum", "checkpoint"} {
		if !slices.Equal(maint[j], tables) {
			t.Errorf("%s maintenance rows for %v, want %v", j, maint[j], tables)
		}
	}
}

// TestEventLogExactlyOnceAcrossKill: a stream run killed after its batches' progress was kept
// but before their event log rows were committed (here: run without the event log) loses no
// row: the next run logs them from the checkpoint, once; logging a batch again (a batch run
// again after a kill) adds nothing.
func TestEventLogExactlyOnceAcrossKill(t *testing.T) {
	ctx := context.Background()
	env := eventLogPipeline(t, t.TempDir(), "")
	landEvents(t, env, "landing/events/a.json", 0, 10)
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	killed := env
	killed.Events = nil // the rows this run would have written never land
	if _, err := Stream(ctx, killed, config.Trigger{}, nil); err != nil {
		t.Fatal(err)
	}
	lost := progressBatches(t, env)
	if len(lost) == 0 {
		t.Fatal("the stream ran no batch")
	}
	if _, err := eventlog.Open(env.Lake, config.DefaultEventLog, nil).Read(ctx, ""); !errors.Is(err, eventlog.ErrNoEventLog) {
		t.Fatalf("before the rerun the event log should not exist, got %v", err)
	}
	// The last batch was killed between its commit and its progress file: its figures are
	// gone, its row is not.
	lastLost := lost[len(lost)-1]
	ckptDir := objstore.WithPrefix(env.Lake, env.Config.Stream.Checkpoint)
	if err := ckptDir.Delete(ctx, checkpoint.ProgressKey(lastLost)); err != nil {
		t.Fatal(err)
	}
	// The rerun with nothing new to read: no batch runs, the lost rows are logged all the same.
	if _, err := RunLogged(ctx, env, "stream", "", streamJob); err != nil {
		t.Fatal(err)
	}
	var logged []int64
	for _, e := range readEvents(t, env) {
		if e.EventType == eventlog.TypeBatch {
			logged = append(logged, *e.BatchID)
			if *e.BatchID == lastLost && !strings.Contains(e.Details, "progressLost") {
				t.Errorf("batch %d without progress: details %s, want progressLost", lastLost, e.Details)
			}
		}
	}
	if slices.Sort(logged); !slices.Equal(logged, lost) {
		t.Fatalf("after the rerun the event log has batches %v, want the killed run's %v", logged, lost)
	}
	landEvents(t, env, "landing/events/b.json", 10, 4)
	for range 2 { // the rerun, and once more: nothing new the second time
		if _, err := Ingest(ctx, env); err != nil {
			t.Fatal(err)
		}
		if _, err := RunLogged(ctx, env, "stream", "", streamJob); err != nil {
			t.Fatal(err)
		}
	}
	// Logging the last batch again, as a rerun of it after a kill would.
	all := progressBatches(t, env)
	last := all[len(all)-1]
	all = append([]int64{lastLost}, all...) // the batch without progress file
	slices.Sort(all)
	data, err := checkpoint.Open(objstore.WithPrefix(env.Lake, env.Config.Stream.Checkpoint)).ReadProgress(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	queryID, err := checkpoint.Open(objstore.WithPrefix(env.Lake, env.Config.Stream.Checkpoint)).ReadQueryID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Events.recordBatches(ctx, env.Lake, "again", "events", env.Config.Stream.Checkpoint, queryID, []loggedBatch{{n: last, data: data}})

	checkOneRowPerBatch(t, env, all)
}

// checkOneRowPerBatch checks that the event log has exactly one row for each of batches and
// none for another batch.
func checkOneRowPerBatch(t *testing.T, env Env, batches []int64) {
	t.Helper()
	counts := map[int64]int{}
	for _, e := range readEvents(t, env) {
		if e.EventType == eventlog.TypeBatch {
			counts[*e.BatchID]++
		}
	}
	for _, n := range batches {
		if counts[n] != 1 {
			t.Errorf("batch %d has %d rows, want exactly 1 (rows per batch: %v)", n, counts[n], counts)
		}
	}
	if len(counts) != len(batches) {
		t.Errorf("rows for batches %v, want those of the checkpoint %v", counts, batches)
	}
}

// heldEventLog holds every commit of the event log until the stream has committed its batch
// last (its commit file in the checkpoint), or the test gives up; it counts the event log's
// commits.
type heldEventLog struct {
	objstore.Bucket
	last    string // the checkpoint's commit file of the stream's last batch
	done    chan struct{}
	once    sync.Once
	giveUp  <-chan struct{}
	mu      sync.Mutex
	commits int
	gaveUp  bool // a commit went through because the test gave up waiting
}

func (h *heldEventLog) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, config.DefaultEventLog+"/_delta_log/") && strings.HasSuffix(key, ".json") {
		gaveUp := false
		select {
		case <-h.done:
		case <-h.giveUp:
			gaveUp = true
		}
		h.mu.Lock()
		h.commits++
		h.gaveUp = h.gaveUp || gaveUp
		h.mu.Unlock()
	}
	err := h.Bucket.PutIfAbsent(ctx, key, r, size)
	if key == h.last && err == nil {
		h.once.Do(func() { close(h.done) })
	}
	return err
}

// TestEventLogOffTheBatchPath: the stream runs its batches while the event log's commits are
// held (on S3 an append is four round trips each batch waited for), and the batches the
// held append did not take are logged together in the next commit, each exactly once, by the
// time the run returns. A recorder that appends on the batch's path never gets past the first
// batch while the commit is held: the test gives up on it after a minute (a guard against a
// hang, not a measured time).
func TestEventLogOffTheBatchPath(t *testing.T) {
	ctx := context.Background()
	cfg := testPipeline(t, t.TempDir(), "")
	for k, v := range map[string]string{"landing.max_files_per_trigger": "1", "stream.max_files_per_trigger": "1"} {
		if err := cfg.Override(k, v); err != nil {
			t.Fatal(err)
		}
	}
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Lake.Close() })
	const files = 4
	for i := range files {
		landEvents(t, env, fmt.Sprintf("landing/events/%d.json", i), 10*i, 10)
	}
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	giveUp := make(chan struct{})
	timer := time.AfterFunc(time.Minute, func() { close(giveUp) })
	defer timer.Stop()
	held := &heldEventLog{Bucket: env.Lake, done: make(chan struct{}), giveUp: giveUp,
		last: path.Join(env.Config.Stream.Checkpoint, "commits", fmt.Sprint(files-1))}
	env.Lake = held
	env.Events = NewEventLog(env)
	if _, err := RunLogged(ctx, env, "stream", "", streamJob); err != nil {
		t.Fatal(err)
	}
	if held.gaveUp {
		t.Fatalf("the stream did not commit batch %d while the event log's append was held", files-1)
	}
	batches := progressBatches(t, env) // one a file, and the one the watermark's advance runs
	checkOneRowPerBatch(t, env, batches)
	t.Logf("%d event log commits for %d batches and a run row", held.commits, len(batches))
	// The table's creation, an append a batch and the run's row would be two commits more
	// than batches: batches 1 and 2, queued while batch 0's append was held, share one.
	if held.commits > len(batches)+1 {
		t.Errorf("the event log took %d commits (its creation, %d batches, a run row); want at most %d", held.commits, len(batches), len(batches)+1)
	}
}

// failingEventLog fails every write under the event log's prefix, as a store that refuses
// them (permissions, quota) would.
type failingEventLog struct{ objstore.Bucket }

var errRefused = errors.New("injected: writes under _medallion/ refused")

func (f failingEventLog) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, "_medallion/") {
		return errRefused
	}
	return f.Bucket.Put(ctx, key, r, size)
}

func (f failingEventLog) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	if strings.HasPrefix(key, "_medallion/") {
		return errRefused
	}
	return f.Bucket.PutIfAbsent(ctx, key, r, size)
}

// TestEventLogWriteFailureLeavesDataPathOK: when the event log cannot be written, ingest and
// stream still succeed and write their tables; each lost write is a WARN line and counts in
// medallion_event_log_write_failures_total.
func TestEventLogWriteFailureLeavesDataPathOK(t *testing.T) {
	ctx := context.Background()
	env := eventLogPipeline(t, t.TempDir(), "")
	landEvents(t, env, "landing/events/a.json", 0, 10)
	var logs bytes.Buffer
	env.Lake = failingEventLog{env.Lake}
	env.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	env.Events = NewEventLog(env)
	for _, j := range []struct {
		name string
		fn   Func
	}{{"ingest", ingestJob}, {"stream", streamJob}} {
		if _, err := RunLogged(ctx, env, j.name, "", j.fn); err != nil {
			t.Fatalf("%s failed because the event log could not be written: %v", j.name, err)
		}
	}
	silver := table.Open(objstore.WithPrefix(env.Lake, env.Config.Tables.Silver), table.Options{})
	var rows int
	for b, err := range silver.Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		rows += b.Len()
	}
	if rows != 7 { // 10 landed, 3 negative amounts dropped by the expectation
		t.Errorf("silver has %d rows, want 7", rows)
	}
	// Two run rows and at least one batch: three lost writes at least.
	if n := promtest.ToFloat64(env.Events.Collector()); n < 3 {
		t.Errorf("medallion_event_log_write_failures_total = %v, want >= 3", n)
	}
	if !strings.Contains(logs.String(), `"level":"WARN"`) || !strings.Contains(logs.String(), "event log write failed") ||
		!strings.Contains(logs.String(), errRefused.Error()) {
		t.Errorf("no WARN line naming the failure; logs:\n%s", logs.String())
	}
}

// TestEventLogScheduledRuns: a run of serve's scheduler (here: ingest, and a job that panics)
// gets its row like a `medallion run`.
func TestEventLogScheduledRuns(t *testing.T) {
	env := eventLogPipeline(t, t.TempDir(), "")
	landEvents(t, env, "landing/events/a.json", 0, 5)
	jobs := []Scheduled{
		{Name: "ingest", Schedule: "@every 1h", Run: Lookup("ingest")},
		{Name: "replay", Schedule: "@every 1h", Run: func(context.Context, Env) (any, error) { panic("a bug") }},
	}
	s, err := NewScheduler(env, NewLeases(env.Lake, "serve-a", 10*time.Second, nil), prometheus.NewRegistry(), jobs)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		s.runOnce(j) // as cron would, but now
	}
	got := map[string]eventlog.Event{}
	for _, e := range readEvents(t, env) {
		got[e.Job] = e
	}
	if e, ok := got["ingest"]; !ok || e.Outcome != eventlog.OutcomeOK || e.RowsOut == nil || *e.RowsOut != 5 {
		t.Errorf("scheduled ingest: row %+v, want ok with rows_out 5", e)
	}
	if e, ok := got["replay"]; !ok || e.Outcome != eventlog.OutcomeError || !strings.Contains(e.Error, "panicked") {
		t.Errorf("panicking run: row %+v, want an error row", e)
	}
}
