package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

const testYAML = `
lake: mem
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_time, type: timestamp, required: true}
stream:
  watermark: 10m
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    aggregates: [{fn: count, as: count}]
  - name: events_1h
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: count, as: count}]
`

func testConfig(t testing.TB) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, testYAML)
}

func declaredSchema() *txlog.StructType {
	return &txlog.StructType{Fields: []txlog.StructField{
		{Name: "event_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "event_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: true},
	}}
}

// row is one bronze row; a nil event time is a null.
type row struct {
	ev     *time.Time
	ingest time.Time
}

// writeBronze creates the bronze table and appends each group of rows as its own commit
// (one file each, so that event-time pruning has something to skip).
func writeBronze(t testing.TB, lake objstore.Bucket, path string, groups [][]row) {
	t.Helper()
	ctx := context.Background()
	schema := bronze.BronzeSchema(declaredSchema())
	tb := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	if _, err := tb.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	for g, rows := range groups {
		b, err := pq.NewBatch(schema)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range rows {
			b.Columns[0].AppendString("e")
			if r.ev == nil {
				b.Columns[1].AppendNull()
			} else {
				b.Columns[1].AppendTime(*r.ev)
			}
			b.Columns[2].AppendNull()
			b.Columns[3].AppendTime(r.ingest)
			b.Columns[4].AppendString("landing/f" + string(rune('a'+g)))
			b.Columns[5].AppendInt64(int64(i))
		}
		if _, err := tb.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

var base = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

// workload draws lags from a log-normal body (median 20s) with a 2% Pareto tail and a few
// negative lags, spread over three days of event time, one file per 6 hours.
func workload(seed uint64, n int) ([][]row, []time.Time, []time.Duration) {
	rng := rand.New(rand.NewPCG(seed, 7))
	groups := make([][]row, 12)
	var evs []time.Time
	var lags []time.Duration
	for i := range n {
		ev := base.Add(time.Duration(rng.Int64N(int64(72 * time.Hour)))).Truncate(time.Microsecond)
		var lag time.Duration
		switch u := rng.Float64(); {
		case u < 0.001:
			lag = -time.Hour - time.Duration(rng.Int64N(int64(50*365*24*time.Hour))) // future: left out
		case u < 0.005:
			lag = -time.Duration(rng.Int64N(int64(30 * time.Second)))
		case u < 0.025:
			lag = time.Duration(float64(time.Minute) / math.Pow(rng.Float64(), 1/1.5))
			lag = min(lag, 30*time.Hour)
		default:
			lag = time.Duration(float64(20*time.Second) * math.Exp(rng.NormFloat64()))
		}
		lag = lag.Truncate(time.Microsecond)
		g := int(ev.Sub(base) / (6 * time.Hour))
		if i%997 == 0 {
			groups[g] = append(groups[g], row{ingest: ev.Add(lag)})
			continue
		}
		groups[g] = append(groups[g], row{ev: &ev, ingest: ev.Add(lag)})
		evs = append(evs, ev)
		lags = append(lags, lag)
	}
	return groups, evs, lags
}

// oracle is the lag statistics computed here, from the rows the test wrote.
type oracle struct {
	sorted []time.Duration
	sum    time.Duration
	neg    int64
	future int64
}

func newOracle(evs []time.Time, lags []time.Duration, from, to time.Time) oracle {
	var o oracle
	for i, ev := range evs {
		if (!from.IsZero() && ev.Before(from)) || (!to.IsZero() && !ev.Before(to)) {
			continue
		}
		if lags[i] < -time.Hour { // the config's max_future_skew (default 1h)
			o.future++
			continue
		}
		o.sorted = append(o.sorted, lags[i])
		o.sum += lags[i]
		if lags[i] < 0 {
			o.neg++
		}
	}
	slices.Sort(o.sorted)
	return o
}

// at is the value at rank floor(q*(n-1)) of the sorted lags.
func (o oracle) at(q float64) time.Duration {
	return o.sorted[int(q*float64(len(o.sorted)-1))]
}

func (o oracle) lateAbove(w time.Duration) int64 {
	i, _ := slices.BinarySearch(o.sorted, w+1)
	return int64(len(o.sorted) - i)
}

func within(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*math.Abs(float64(want))+float64(time.Microsecond)
}

func TestLagAgainstSortedOracle(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	lake := mem.New()
	groups, evs, lags := workload(1, 40000)
	writeBronze(t, lake, cfg.Tables.Bronze, groups)

	for _, tc := range []struct {
		name     string
		from, to time.Time
	}{
		{"all", time.Time{}, time.Time{}},
		{"one day", base.Add(24 * time.Hour), base.Add(48 * time.Hour)},
		{"open end", base.Add(60 * time.Hour), time.Time{}},
		{"mid-file bounds", base.Add(7 * time.Hour), base.Add(20*time.Hour + 30*time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Lag(ctx, lake, cfg, LagOptions{From: tc.from, To: tc.to})
			if err != nil {
				t.Fatal(err)
			}
			o := newOracle(evs, lags, tc.from, tc.to)
			if rep.Rows != int64(len(o.sorted)) {
				t.Fatalf("rows %d, want %d", rep.Rows, len(o.sorted))
			}
			if rep.Future != o.future || o.future == 0 && tc.name == "all" {
				t.Errorf("future %d, want %d (> 0 over all rows)", rep.Future, o.future)
			}
			if rep.Negative != o.neg {
				t.Errorf("negative %d, want %d", rep.Negative, o.neg)
			}
			if rep.Max != o.sorted[len(o.sorted)-1] || rep.Min != o.sorted[0] {
				t.Errorf("min/max %v/%v, want %v/%v", rep.Min, rep.Max, o.sorted[0], o.sorted[len(o.sorted)-1])
			}
			if avg := o.sum / time.Duration(len(o.sorted)); !within(rep.Avg, avg, 1e-9) {
				t.Errorf("avg %v, want %v", rep.Avg, avg)
			}
			for _, p := range []struct {
				q   float64
				got time.Duration
			}{{0.5, rep.P50}, {0.9, rep.P90}, {0.95, rep.P95}, {0.99, rep.P99}} {
				if want := o.at(p.q); !within(p.got, want, RelativeAccuracy) {
					t.Errorf("p%v = %v, want %v within %.1f%%", p.q*100, p.got, want, RelativeAccuracy*100)
				}
			}
			var total int64
			for _, b := range rep.Histogram {
				var want int64
				for _, l := range o.sorted {
					if l >= 0 && l > b.Lo && (b.Hi <= 0 || l <= b.Hi) || (b.Lo == 0 && l == 0) {
						want++
					}
				}
				if b.Count != want {
					t.Errorf("bucket %s: %d rows, want %d", b.Label(), b.Count, want)
				}
				total += b.Count
			}
			if total+rep.Negative != rep.Rows {
				t.Errorf("histogram holds %d + %d negative, want %d", total, rep.Negative, rep.Rows)
			}
			if len(rep.Candidates) != 5 {
				t.Fatalf("candidates %+v, want 1x 2x 3x current recommended", rep.Candidates)
			}
			for _, c := range rep.Candidates {
				if c.Exact {
					if want := o.lateAbove(c.Watermark); c.LateRows != want {
						t.Errorf("%s (%v): %d late, want %d", c.Name, c.Watermark, c.LateRows, want)
					}
					continue
				}
				// The sketch places each row within 0.5% of its lag.
				w := float64(c.Watermark)
				lo := o.lateAbove(time.Duration(w * (1 + RelativeAccuracy)))
				hi := o.lateAbove(time.Duration(w * (1 - RelativeAccuracy)))
				if c.LateRows < lo || c.LateRows > hi {
					t.Errorf("%s (%v): %d late, want within [%d, %d]", c.Name, c.Watermark, c.LateRows, lo, hi)
				}
			}
			if c := rep.Candidates[3]; c.Name != "current" || c.Watermark != 10*time.Minute || !c.Exact {
				t.Errorf("current candidate %+v", c)
			}
			if rep.Recommended != Recommend(rep.P95) {
				t.Errorf("recommended %v for p95 %v", rep.Recommended, rep.P95)
			}
		})
	}
}

func TestLagNullEventTimeAndEmptyRange(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	lake := mem.New()
	groups, evs, _ := workload(2, 3000)
	writeBronze(t, lake, cfg.Tables.Bronze, groups)
	rep, err := Lag(ctx, lake, cfg, LagOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var nulls int64
	for _, g := range groups {
		for _, r := range g {
			if r.ev == nil {
				nulls++
			}
		}
	}
	if rep.NullEventTime != nulls || rep.Rows+rep.Future != int64(len(evs)) || nulls == 0 {
		t.Errorf("rows %d, nulls %d; want %d, %d", rep.Rows, rep.NullEventTime, len(evs), nulls)
	}
	empty, err := Lag(ctx, lake, cfg, LagOptions{From: base.Add(-48 * time.Hour), To: base.Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if empty.Rows != 0 || len(empty.Candidates) != 0 || empty.Recommended != time.Second {
		t.Errorf("empty range: %+v", empty)
	}
	// Nothing to plot still gives a well-formed chart and a text report.
	if elems := parseSVG(t, LagChart(empty).SVG()); len(elems) < 5 {
		t.Errorf("empty chart has %d elements", len(elems))
	}
	var text bytes.Buffer
	if err := empty.WriteText(&text); err != nil || !strings.Contains(text.String(), "No rows") {
		t.Errorf("empty text report: %v\n%s", err, text.String())
	}
}

func TestLagErrors(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	if _, err := Lag(ctx, mem.New(), cfg, LagOptions{}); !errors.Is(err, ErrNoBronze) {
		t.Errorf("no bronze: %v, want ErrNoBronze", err)
	}
	_, err := Lag(ctx, mem.New(), cfg, LagOptions{From: base, To: base})
	if !errors.Is(err, ErrBadRange) {
		t.Errorf("empty range: %v, want ErrBadRange", err)
	}
}

func TestRecommend(t *testing.T) {
	for _, tc := range []struct {
		p95, want time.Duration
	}{
		{0, time.Second},
		{-time.Minute, time.Second},
		{300 * time.Millisecond, time.Second},
		{time.Second, 2 * time.Second},
		{1500 * time.Millisecond, 5 * time.Second},
		{7 * time.Second, 15 * time.Second},
		{30 * time.Second, time.Minute},
		{40 * time.Second, 2 * time.Minute},
		{61 * time.Second, 5 * time.Minute},
		{2 * time.Minute, 5 * time.Minute},
		{4 * time.Minute, 10 * time.Minute},
		{5 * time.Minute, 10 * time.Minute},
		{6 * time.Minute, 15 * time.Minute},
		{20 * time.Minute, time.Hour},
		{90 * time.Minute, 3 * time.Hour},
		{5 * time.Hour, 12 * time.Hour},
		{13 * time.Hour, 48 * time.Hour},
		{3 * 24 * time.Hour, 7 * 24 * time.Hour},
		{4 * 24 * time.Hour, 8 * 24 * time.Hour},
		{4*24*time.Hour + time.Second, 9 * 24 * time.Hour},
	} {
		got := Recommend(tc.p95)
		if got != tc.want {
			t.Errorf("Recommend(%v) = %v, want %v", tc.p95, got, tc.want)
		}
		if tc.p95 > 0 && (got < 2*tc.p95 || got > 5*tc.p95) {
			t.Errorf("Recommend(%v) = %v, outside 2..5x p95", tc.p95, got)
		}
	}
}

// TestLagTextGolden pins the text and JSON reports of a fixed workload, with one quarantine
// table present (days by _ingest_time) and one not created yet.
func TestLagTextGolden(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	lake := mem.New()
	groups, _, _ := workload(4, 5000)
	writeBronze(t, lake, cfg.Tables.Bronze, groups)
	// The quarantine of events_5m: bronze's shape is enough (it has event_time and _ingest_time).
	var late [][]row
	for d := range 3 {
		var g []row
		for i := range 4 + 3*d {
			ev := base.Add(time.Duration(d)*24*time.Hour + time.Duration(i)*time.Minute)
			g = append(g, row{ev: &ev, ingest: ev.Add(20 * time.Minute)})
		}
		late = append(late, g)
	}
	writeBronze(t, lake, cfg.Gold[0].Quarantine, late)
	// merge-late has folded quarantine versions up to 2 (days 1 and 2) into gold.
	if err := objstore.PutBytes(ctx, lake, cfg.Stream.Checkpoint+"/metadata", []byte(`{"id":"q1"}`)); err != nil {
		t.Fatal(err)
	}
	gt := table.Open(objstore.WithPrefix(lake, cfg.Gold[0].Table), table.Options{})
	if _, err := gt.Create(ctx, declaredSchema(), nil, nil); err != nil {
		t.Fatal(err)
	}
	gb, _ := pq.NewBatch(declaredSchema())
	gb.Columns[0].AppendString("w")
	gb.Columns[1].AppendTime(base)
	if _, err := gt.Append(ctx, []*pq.Batch{gb}, table.AppendOptions{Txn: &table.AppTxn{AppID: "merge-late:q1", Version: 2}}); err != nil {
		t.Fatal(err)
	}
	// The stream reported late rows on days 2 and 4 (batch time).
	writeProgress(t, lake, cfg.Stream.Checkpoint, 0, base.Add(30*time.Hour), 50, map[string]int64{"events_5m": 6})
	writeProgress(t, lake, cfg.Stream.Checkpoint, 1, base.Add(31*time.Hour), 50, map[string]int64{"events_5m": 1, "events_1h": 2})
	writeProgress(t, lake, cfg.Stream.Checkpoint, 2, base.Add(80*time.Hour), 50, map[string]int64{"events_5m": 3})

	rep, err := Lag(ctx, lake, cfg, LagOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Quarantine
	if len(q) != 2 || !q[0].Exists || q[0].Rows != 4+7+10 || q[1].Exists {
		t.Fatalf("quarantine %+v", q)
	}
	if q[0].MergedVersion != 2 || q[0].Merged != 4+7 || q[0].Pending != 10 {
		t.Errorf("merge state %d: %d merged, %d pending; want 2: 11, 10", q[0].MergedVersion, q[0].Merged, q[0].Pending)
	}
	wantDays := []DayLate{{"2024-05-01", 4, -1}, {"2024-05-02", 7, 7}, {"2024-05-03", 10, -1}, {"2024-05-04", -1, 3}}
	if got := q[0].Days(); !slices.Equal(got, wantDays) {
		t.Errorf("days %+v, want %+v", got, wantDays)
	}
	if got := q[1].Days(); !slices.Equal(got, []DayLate{{"2024-05-02", -1, 2}, {"2024-05-04", -1, 0}}) {
		t.Errorf("days of a missing quarantine %+v", got)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden(t, "lag.txt", text.Bytes())
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "lag.json", append(js, '\n'))
	golden(t, "lag.svg", []byte(LagChart(rep).SVG()))

	ranged, err := Lag(ctx, lake, cfg, LagOptions{From: base.Add(24 * time.Hour), To: base.Add(48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if q := ranged.Quarantine[0]; q.Rows != 7 || len(q.PerDay) != 1 || q.PerDay[0] != (DayCount{"2024-05-02", 7}) {
		t.Errorf("quarantine over one day: %+v", q)
	}
}

func TestFormatLag(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {12 * time.Microsecond, "12µs"}, {850 * time.Millisecond, "850ms"},
		{1987 * time.Millisecond, "1.99s"}, {2 * time.Second, "2s"}, {19800 * time.Millisecond, "19.8s"},
		{4*time.Minute + 5*time.Second, "4m05s"}, {10 * time.Minute, "10m"}, {59*time.Minute + 59700*time.Millisecond, "60m"},
		{2*time.Hour + 3*time.Minute, "2h03m"}, {6 * time.Hour, "6h"}, {3*day + 4*time.Hour, "3d04h"},
		{7 * day, "7d"}, {-12 * time.Second, "-12s"},
	} {
		if got := FormatLag(tc.d); got != tc.want {
			t.Errorf("FormatLag(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// TestLagBackfill: six hours of history ingested at once (a backfill) give lags of 0 to 6
// hours, but the rows arrive in about event-time order (at most 45 s behind the newest one
// before them). lag says so and recommends a watermark for that arrival order, not the
// "12h" that 2 x p95 of the lag gives; the same rows ingested as they happened are no backfill.
func TestLagBackfill(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	rng := rand.New(rand.NewPCG(5, 9))
	const n, batches = 36000, 12
	step := 6 * time.Hour / n
	done := base.Add(6*time.Hour + time.Minute) // when the backfill's ingest ran
	backfill := make([][]row, batches)
	live := make([][]row, batches)
	var evs []time.Time
	for i := range n {
		ev := base.Add(time.Duration(i)*step - time.Duration(rng.Int64N(int64(45*time.Second)))).Truncate(time.Microsecond)
		evs = append(evs, ev)
		g := i * batches / n
		backfill[g] = append(backfill[g], row{ev: &ev, ingest: done.Add(time.Duration(g) * 5 * time.Second)})
		live[g] = append(live[g], row{ev: &ev, ingest: base.Add(time.Duration(g+1) * 30 * time.Minute)})
	}
	// The oracle: how far behind the running maximum event time each row arrives, in the
	// order written; its p95 at rank floor(0.95 (n-1)) as Lag's percentiles are defined.
	var newest time.Time
	behind := make([]time.Duration, 0, n)
	for _, ev := range evs {
		if ev.After(newest) {
			newest = ev
		}
		behind = append(behind, newest.Sub(ev))
	}
	slices.Sort(behind)
	p95 := behind[int(math.Floor(0.95*float64(n-1)))]

	lake := mem.New()
	writeBronze(t, lake, cfg.Tables.Bronze, backfill)
	rep, err := Lag(ctx, lake, cfg, LagOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Backfill || rep.P50 < 2*time.Hour {
		t.Fatalf("a 6-hour backfill: backfill %v, p50 %v", rep.Backfill, rep.P50)
	}
	if !within(rep.ArrivalP95, p95, 2*RelativeAccuracy) {
		t.Errorf("arrival p95 %v, want %v", rep.ArrivalP95, p95)
	}
	// The recommendation covers the arrival order (2 x p95, rounded up to a nice value, at
	// most 2.5x more) instead of the backfill's hours.
	if rep.Recommended < 2*p95 || rep.Recommended > 5*p95 {
		t.Errorf("recommended %v for an arrival p95 of %v (lag p95 %v)", rep.Recommended, p95, rep.P95)
	}
	var late int64 // rows more than the recommendation behind: the oracle's count
	for _, b := range behind {
		if b > rep.Recommended {
			late++
		}
	}
	if c := rep.Candidates[len(rep.Candidates)-1]; c.Name != "recommended" || c.LateRows != late {
		t.Errorf("recommended candidate %+v, want %d late rows", c, late)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Backfill: these lags are a backfill's") || !strings.Contains(text.String(), "2x arrival p95") {
		t.Errorf("the text does not say it is a backfill:\n%s", text.String())
	}
	if js, err := json.Marshal(rep); err != nil || !strings.Contains(string(js), `"backfill":true`) {
		t.Errorf("json: %v\n%s", err, js)
	}

	// The same rows, ingested every half hour as they happened: no backfill, the lag decides.
	lake = mem.New()
	writeBronze(t, lake, cfg.Tables.Bronze, live)
	rep, err = Lag(ctx, lake, cfg, LagOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Backfill || rep.Recommended != Recommend(rep.P95) {
		t.Errorf("live ingest: backfill %v, recommended %v for p95 %v", rep.Backfill, rep.Recommended, rep.P95)
	}
}
