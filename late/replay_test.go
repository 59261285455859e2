package late

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/table"
)

// silverTimes are silver's event times, sorted, for choosing replay ranges by quantile.
func silverTimes(t testing.TB, lake objstore.Bucket) []int64 {
	t.Helper()
	var ts []int64
	for _, r := range readSilver(t, lake, "silver/events") {
		ts = append(ts, r.t)
	}
	slices.Sort(ts)
	return ts
}

// damage deletes the gold rows whose window starts in [from, to): replay must restore them.
func damage(t testing.TB, lake objstore.Bucket, path string, from, to int64) {
	t.Helper()
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	pred := sqlexpr.And(sqlexpr.Ge("window.start", time.UnixMicro(from).UTC()), sqlexpr.Lt("window.start", time.UnixMicro(to).UTC()))
	if _, err := tbl.Overwrite(context.Background(), pred, nil, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// replayRange is the range between two quantiles of the event times.
func replayRange(ts []int64, a, b float64) Range {
	q := func(f float64) time.Time { return time.UnixMicro(ts[int(f*float64(len(ts)-1))]).UTC() }
	return Range{From: q(a), To: q(b)}
}

// TestReplayInvariantE damages gold inside a range (windows deleted), then replays a range
// whose edges cut through windows: afterwards every tumbling and sliding gold table equals the
// batch aggregation of silver (replay runs merge-late first, so outside the range too).
func TestReplayInvariantE(t *testing.T) {
	for _, seed := range []int64{11, 12} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			lake, cfg, srep := pipeline(t, seed, 5000, 6, "")
			r := replayRange(silverTimes(t, lake), 0.3, 0.6)
			r.From = r.From.Add(1234567 * time.Microsecond) // not on a window boundary
			damage(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
			damage(t, lake, "gold/s10", r.From.UnixMicro(), r.To.UnixMicro())
			if n := invariantEDiffs(t, lake, srep.WatermarkMs, func(string, ...any) {}); n == 0 {
				t.Fatal("gold equals the batch aggregation before replay: the test proves nothing")
			}
			rep, err := Replay(context.Background(), opts(lake, cfg), r)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range rep.Gold {
				if g.InputRows == 0 || g.Gold == nil || g.Gold.Inserted == 0 {
					t.Fatalf("%s: replay read %d rows and committed %+v", g.Name, g.InputRows, g.Gold)
				}
			}
			checkInvariantE(t, lake, srep.WatermarkMs)
			checkFeed(t, lake, "gold/t5")
			checkFeed(t, lake, "gold/s10")

			// Replaying again changes no row.
			before := map[string][]string{"gold/t5": goldState(t, lake, "gold/t5"), "gold/s10": goldState(t, lake, "gold/s10")}
			if _, err := Replay(context.Background(), opts(lake, cfg), r); err != nil {
				t.Fatal(err)
			}
			for g, rows := range before {
				if !slices.Equal(goldState(t, lake, g), rows) {
					t.Errorf("%s: a second replay changed rows", g)
				}
			}
		})
	}
}

// TestReplayFromBronze: replay re-validating and deduplicating bronze (bad lines, future
// events, duplicates and late resends in the workload) restores gold as replay from silver
// does: both end equal to the batch aggregation of silver.
func TestReplayFromBronze(t *testing.T) {
	base, cfg, srep := pipeline(t, 13, 4000, 5, "")
	r := replayRange(silverTimes(t, base), 0.2, 0.7)
	for _, src := range []string{SourceSilver, SourceBronze} {
		lake := cloneLake(t, base)
		damage(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
		r.Source = src
		if _, err := Replay(context.Background(), opts(lake, cfg), r); err != nil {
			t.Fatal(err)
		}
		checkInvariantE(t, lake, srep.WatermarkMs)
	}
}

// TestReplaySessions: after replay, the sessions overlapping the range equal batch
// sessionization of silver, per key, up to the key's first session the stream still holds.
func TestReplaySessions(t *testing.T) {
	for _, seed := range []int64{21, 22} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			lake, cfg, srep := pipeline(t, seed, 4000, 6, sessionYAML)
			r := replayRange(silverTimes(t, lake), 0.25, 0.5)
			from, to := r.From.UnixMicro(), r.To.UnixMicro()
			want, got := sessionScope(t, lake, srep.WatermarkMs, from, to)
			if len(want) == 0 {
				t.Fatal("no closed session overlaps the range")
			}
			damage(t, lake, "gold/sess", from, to)
			if diffGold("sess", got(), want, sessChecks, func(string, ...any) {}) == 0 {
				t.Fatal("sessions already equal the batch sessionization: the test proves nothing")
			}
			if _, err := Replay(context.Background(), opts(lake, cfg), r); err != nil {
				t.Fatal(err)
			}
			checkGold(t, "sess", got(), want, sessChecks)
			checkFeed(t, lake, "gold/sess")
		})
	}
}

// TestReplayConvergesAfterFailures injects a failure at every object-store write of a replay
// in turn (before and after the write lands), then reruns it cleanly: gold ends equal to the
// batch aggregation every time.
func TestReplayConvergesAfterFailures(t *testing.T) {
	base, cfg, srep := pipeline(t, 14, 2500, 4, "")
	r := replayRange(silverTimes(t, base), 0.2, 0.8)
	damage(t, base, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
	ctx := context.Background()
	for _, op := range []string{objstore.OpPut, objstore.OpPutIfAbsent} {
		for _, after := range []bool{false, true} {
			failed := 0
			for k := 1; ; k++ {
				lake := cloneLake(t, base)
				faulty := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: op, Nth: k, After: after}}})
				_, firstErr := Replay(ctx, opts(faulty, cfg), r)
				if _, err := Replay(ctx, opts(lake, cfg), r); err != nil {
					t.Fatalf("%s k=%d after=%v: clean rerun failed: %v (first run: %v)", op, k, after, err, firstErr)
				}
				if n := invariantEDiffs(t, lake, srep.WatermarkMs, t.Errorf); n > 0 {
					t.Fatalf("%s k=%d after=%v: %d differences after the rerun (first run: %v)", op, k, after, n, firstErr)
				}
				if faulty.Fired() == 0 {
					break
				}
				failed++
			}
			if failed < 2 {
				t.Fatalf("%s after=%v: only %d runs had a fault injected", op, after, failed)
			}
		}
	}
}

// TestReplaySlicesAndWorkers: a replay cut into many time slices (a small SlicePairs) writes
// the same gold as one slice, and every run, on one worker or several, reports the same
// input rows and satisfies invariant E; the sliced runs really read the source once a slice.
// (Across worker counts a float sum adds in another order, so only the one-worker runs are
// compared cell for cell.)
func TestReplaySlicesAndWorkers(t *testing.T) {
	// 3000 lines under -race: the sliced runs must still make three passes or more (checked).
	base, cfg, srep := pipeline(t, 15, int64(testshared.Sized(6000, 3000)), 6, slidingNumericYAML)
	r := replayRange(silverTimes(t, base), 0.1, 0.9)
	r.From = r.From.Add(777 * time.Millisecond)
	type run struct {
		pairs   int64
		workers int
	}
	var states []map[string][]string
	var inputs [][]int64
	runs := []run{{-1, 1}, {400, 1}, {1, 1}, {400, 3}, {1, 2}}
	for _, c := range runs {
		lake := cloneLake(t, base)
		damage(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
		damage(t, lake, "gold/s10", r.From.UnixMicro(), r.To.UnixMicro())
		damage(t, lake, "gold/s15", r.From.UnixMicro(), r.To.UnixMicro())
		o := opts(lake, cfg)
		o.SlicePairs, o.Workers = c.pairs, c.workers
		passes := 0
		o.Progress = func(p ReplayProgress) { passes = max(passes, p.Pass) }
		rep, err := Replay(context.Background(), o, r)
		if err != nil {
			t.Fatal(err)
		}
		if c.pairs > 0 && passes < 3 {
			t.Errorf("%+v: %d passes over the source: the range was not sliced", c, passes)
		}
		// One slice: read once to hash it against gold's tags (merge-late tagged the files it
		// wrote) and, since damage changed windows, once more to write them.
		if c.pairs < 0 && passes != 2 {
			t.Errorf("%+v: %d passes over the source, want 2", c, passes)
		}
		checkInvariantE(t, lake, srep.WatermarkMs)
		silver := readSilver(t, lake, "silver/events")
		closed := func(_, end int64) bool { return end <= srep.WatermarkMs*1000 }
		if n := diffGold("s15", readGold(t, lake, "gold/s15", []string{"device_id"}),
			batchWindows(silver, 15*time.Second, 5*time.Second, []string{"device_id"}, closed), t5Checks, t.Errorf); n > 0 {
			t.Fatalf("%+v: s15: %d differences from the batch aggregation", c, n)
		}
		var in []int64
		for _, g := range rep.Gold {
			in = append(in, g.InputRows)
		}
		inputs = append(inputs, in)
		states = append(states, map[string][]string{"gold/t5": goldState(t, lake, "gold/t5"), "gold/s10": goldState(t, lake, "gold/s10"),
			"gold/s15": goldState(t, lake, "gold/s15")})
	}
	for k := 1; k < len(states); k++ {
		if !slices.Equal(inputs[k], inputs[0]) {
			t.Errorf("run %d: input rows %v, one slice read %v", k, inputs[k], inputs[0])
		}
		for g, rows := range states[0] {
			// Sums are exact: any worker count writes the same bits.
			if !slices.Equal(states[k][g], rows) {
				t.Errorf("run %d: %s differs from the one-slice replay's", k, g)
			}
		}
	}
}

// slidingNumericYAML adds a sliding window of three windows a row whose aggregates the
// columnar engine computes (s10's sketches keep the collector).
const slidingNumericYAML = `  - name: s15
    window: {type: sliding, size: 15s, slide: 5s}
    group_by: [device_id]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
      - {fn: min, column: amount, as: lo}
      - {fn: max, column: qty, as: hi}
      - {fn: avg, column: amount, as: mean}
      - {fn: sum, column: qty, as: qsum}
`

// lateRowsOf maps each gold row with late rows (window start, key columns) to its late_rows.
func lateRowsOf(t testing.TB, lake objstore.Bucket, path string, keys ...string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		win, late := b.Column("window"), b.Column("late_rows")
		for i := range b.Len() {
			if late.Int64[i] == 0 {
				continue
			}
			k := fmt.Sprint(win.Children[0].Int64[i])
			for _, c := range keys {
				k += "|" + string(pq.AppendJSONValue(nil, b.Column(c), i))
			}
			out[k] += late.Int64[i]
		}
	}
	return out
}

// TestReplayKeepsLateRows: the windows a replay rewrites keep the late_rows merge-late
// folded into them, whether the engine writes them in one slice or many. A replay of a range
// gold already holds exactly commits nothing, so one count of each table is bumped first:
// the replay then rewrites the whole range.
func TestReplayKeepsLateRows(t *testing.T) {
	base, cfg, _ := pipeline(t, 16, 6000, 6, slidingNumericYAML)
	if _, err := MergeLate(context.Background(), opts(base, cfg)); err != nil {
		t.Fatal(err)
	}
	wantT5, wantS15 := lateRowsOf(t, base, "gold/t5", "event_type", "device_id"), lateRowsOf(t, base, "gold/s15", "device_id")
	if len(wantT5) == 0 || len(wantS15) == 0 {
		t.Fatalf("no gold row has late rows (t5 %d, s15 %d): the test proves nothing", len(wantT5), len(wantS15))
	}
	r := replayRange(silverTimes(t, base), 0, 1)
	r.To = r.To.Add(time.Hour)
	for _, pairs := range []int64{-1, 300} {
		lake := cloneLake(t, base)
		o := opts(lake, cfg)
		o.SlicePairs, o.Workers = pairs, 2
		bumpCount(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
		bumpCount(t, lake, "gold/s15", r.From.UnixMicro(), r.To.UnixMicro())
		rep, err := Replay(context.Background(), o, r)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Gold[0].Gold == nil || rep.Gold[0].Gold.Deleted == 0 {
			t.Fatalf("slice pairs %d: the replay replaced nothing: %+v", pairs, rep.Gold[0])
		}
		if got := lateRowsOf(t, lake, "gold/t5", "event_type", "device_id"); !maps.Equal(got, wantT5) {
			t.Errorf("slice pairs %d: t5 late rows %v, want %v", pairs, got, wantT5)
		}
		if got := lateRowsOf(t, lake, "gold/s15", "device_id"); !maps.Equal(got, wantS15) {
			t.Errorf("slice pairs %d: s15 late rows %v, want %v", pairs, got, wantS15)
		}
	}
}
