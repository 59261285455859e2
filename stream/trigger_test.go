package stream

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"

	"github.com/medallion-lake/medallion/objstore/mem"
)

type chanListener chan *Progress

func (c chanListener) OnProgress(p *Progress) { c <- p }

// TestProcessingTimeTrigger runs the query until its context is cancelled: new bronze commits
// are picked up by later triggers, the no-data batch the watermark asks for runs, and
// cancelling ends the run without an error.
func TestProcessingTimeTrigger(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:07")}, {ID: "b", T: hm("12:08")}})
	progress := make(chanListener, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Trigger: parseTrigger(t, "processing-time=10ms"), Listener: progress})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var rep Report
	go func() {
		var err error
		rep, err = r.Run(ctx)
		done <- err
	}()
	await := func(batch int64, rows int64) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case p := <-progress:
				if p.BatchID == batch {
					if p.NumInputRows != rows {
						t.Fatalf("batch %d read %d rows, want %d", batch, p.NumInputRows, rows)
					}
					return
				}
			case <-timeout:
				t.Fatalf("batch %d never ran", batch)
			}
		}
	}
	await(0, 2)
	await(1, 0) // no-data batch: the watermark moved to 11:58
	appendBronze(t, lake, []ev{{ID: "c", T: hm("12:30")}})
	await(2, 1)
	await(3, 0) // closes [12:05, 12:10)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rep.LastBatch != 3 {
		t.Fatalf("last batch %d, want 3 (nothing runs without data or a watermark move)", rep.LastBatch)
	}
	if got := goldCounts(t, lake, "gold/w5"); len(got) != 1 || got[0] != "12:05=2" {
		t.Fatalf("gold %v", got)
	}
}

// TestIdleTimeoutAdvancesWatermark: with stream.idle_timeout, a source silent for longer than
// the timeout no longer holds the watermark: later runs move it with the clock from where the
// last data left it, and the windows it passes are emitted; a re-run after a restart keeps the
// moved watermark (it is in offsets/N).
func TestIdleTimeoutAdvancesWatermark(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "  idle_timeout: 5m", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:01")}, {ID: "b", T: hm("12:07")}})
	t0 := day.Add(48 * time.Hour)
	run := func(at time.Time) Report {
		t.Helper()
		r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := run(t0); rep.WatermarkMs != hm("11:57").UnixMilli() {
		t.Fatalf("watermark %d, want 11:57", rep.WatermarkMs)
	}
	if rep := run(t0.Add(4 * time.Minute)); rep.Batches != 0 {
		t.Fatalf("not idle yet, but %d batches ran", rep.Batches)
	}
	rep := run(t0.Add(15 * time.Minute)) // silent 10 minutes past the timeout: W = 11:57 + 10m
	if rep.Batches != 1 || rep.WatermarkMs != hm("12:07").UnixMilli() {
		t.Fatalf("idle run: %d batches, watermark %s", rep.Batches, time.UnixMilli(rep.WatermarkMs).UTC())
	}
	if got := goldCounts(t, lake, "gold/w5"); !slices.Equal(got, []string{"12:00=1"}) {
		t.Fatalf("gold %v", got)
	}
	run(t0.Add(30 * time.Minute))
	if got := goldCounts(t, lake, "gold/w5"); !slices.Equal(got, []string{"12:00=1", "12:05=1"}) {
		t.Fatalf("gold %v", got)
	}
	// New data resets the idle clock: a late row for a closed window is quarantined.
	appendBronze(t, lake, []ev{{ID: "c", T: hm("12:03")}})
	run(t0.Add(31 * time.Minute))
	if n := len(tableRows(t, lake, "silver/late_w5")); n != 1 {
		t.Fatalf("%d quarantined rows, want 1", n)
	}
}

// TestLateAlert logs a warning when a batch's late rows exceed stream.late_alert_fraction of
// its input (batch 4 of vector WM: 2 of 3 rows late).
func TestLateAlert(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "  late_alert_fraction: 0.5", countGold)
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, in := range [][]string{{"12:07", "12:08", "12:14"}, {"12:09", "12:15", "12:03"}, {"12:21", "12:02", "12:04"}} {
		var rows []ev
		for _, ts := range in {
			rows = append(rows, ev{ID: ts, T: hm(ts)})
		}
		appendBronze(t, lake, rows)
		r, _ := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock, Logger: logger})
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if late := strings.Contains(logs.String(), "late rows above the alert fraction"); late != (in[0] == "12:21") {
			t.Fatalf("after batch with %v: alert logged = %v\n%s", in, late, logs.String())
		}
	}
	if !strings.Contains(logs.String(), `"lateRows":2`) || !strings.Contains(logs.String(), `"gold":"w5"`) {
		t.Fatalf("alert lacks the numbers: %s", logs.String())
	}
}

// TestMaxBytesPerTrigger: available-now cuts the backlog into batches of about
// max_bytes_per_trigger bronze bytes, at least one file each.
func TestMaxBytesPerTrigger(t *testing.T) {
	for _, tc := range []struct {
		bound       string
		dataBatches int
	}{{"1", 3}, {"1GB", 1}} {
		lake := mem.New()
		for i, id := range []string{"a", "b", "c"} {
			appendBronze(t, lake, []ev{{ID: id, T: hm("12:07").Add(time.Duration(i) * time.Minute)}})
		}
		cfg := parseConfig(t, "10m", "  max_bytes_per_trigger: "+tc.bound, countGold)
		progress := make(chanListener, 100)
		r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock, Listener: progress})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		close(progress)
		var sizes []int64
		for p := range progress {
			if p.NumInputRows > 0 {
				sizes = append(sizes, p.NumInputRows)
			}
		}
		if len(sizes) != tc.dataBatches {
			t.Errorf("max_bytes_per_trigger %s: data batches of %v rows, want %d batches", tc.bound, sizes, tc.dataBatches)
		}
	}
}

// TestSilverCarriesDedupBloomFilters: silver's files have bloom filters on the dedup key, so
// the silver look-up can rule a file out without reading it.
func TestSilverCarriesDedupBloomFilters(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:07")}, {ID: "b", T: hm("12:08")}})
	cfg := parseConfig(t, "10m", "  dedup: [event_id]", countGold)
	mustRun(t, lake, cfg, "available-now")
	silverT := table.Open(objstore.WithPrefix(lake, cfg.Tables.Silver), table.Options{})
	snap, err := silverT.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := silverT.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pq.NewBatch(&txlog.StructType{Fields: []txlog.StructField{{Name: "event_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}}})
	if err != nil {
		t.Fatal(err)
	}
	keys.Columns[0].AppendString("a")
	for i := range 50 {
		keys.Columns[0].AppendString(fmt.Sprintf("absent-%d", i))
	}
	if len(snap.Files()) == 0 {
		t.Fatal("silver has no files")
	}
	for _, f := range snap.Files() {
		may, err := fs.MayContain(ctx, f, keys)
		if err != nil {
			t.Fatal(err)
		}
		if !may[0] {
			t.Fatalf("%s: the filter rules out key a, which the file holds", f.Path)
		}
		if absent := slices.Index(may[1:], false); absent < 0 {
			t.Fatalf("%s: no absent key ruled out: the file has no bloom filter on event_id", f.Path)
		}
	}
}
