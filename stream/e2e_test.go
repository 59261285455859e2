package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

const e2eGold = `
  - name: g5
    table: gold/g5
    quarantine: silver/late_g5
    window: {type: tumbling, size: 5s}
    group_by: [event_type]
    aggregates:
      - {fn: count, as: count}
      - {fn: sum, column: amount, as: total}
      - {fn: avg, column: amount, as: avg_amount}
  - name: g10
    table: gold/g10
    quarantine: silver/late_g10
    window: {type: sliding, size: 10s, slide: 5s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`

// landBronze generates a workload and ingests it into bronze on a fresh mem lake.
func landBronze(t testing.TB, seed int64, lines int64, files int) *mem.Bucket {
	t.Helper()
	ctx := context.Background()
	lake := mem.New()
	opts := gen.DefaultOptions()
	opts.Seed, opts.Lines, opts.Files, opts.Rate = seed, lines, files, 200
	opts.DuplicateFraction, opts.LateResendFraction = 0.03, 0.3
	opts.MalformedFraction, opts.WrongTypeFraction, opts.FutureFraction = 0.002, 0.005, 0.002
	opts.OutageRate, opts.OutageDuration = 0.0005, 30*time.Second
	_, err := gen.Generate(ctx, lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	x, err := bronze.NewIngester(lake, bronze.IngestOptions{LandingPrefix: "landing/events/", Declared: declared(),
		BronzePath: "bronze/events", RejectsPath: "bronze/rejects", CheckpointPath: "_checkpoints/ingest",
		MaxFilesPerTrigger: 1, FlushRows: 400, Workers: 1,
		Clock: func() time.Time { return time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return lake
}

// orow is a bronze row as the oracle sees it.
type orow struct {
	id, typ  string
	amt      float64
	amtOK    bool
	t        int64
	dataBtch int
}

// oracle recomputes, without the runner's code, what the stream must produce from bronze:
// validation, first-arrival dedup, data batches of maxFiles files in Delta's snapshot order,
// the watermarks of each batch, and the on-time/late split of each (row, window) pair.
type oracle struct {
	bronzeRows, invalid, dups int
	silver                    []orow
	lateWM                    []int64 // per data batch
	finalWM                   int64
}

func computeOracle(t testing.TB, lake objstore.Bucket, maxFiles int, delay, skew time.Duration) *oracle {
	t.Helper()
	ctx := context.Background()
	tbl := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{})
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files := slices.Clone(snap.Files())
	slices.SortStableFunc(files, func(a, b *txlog.Add) int {
		return cmp.Or(cmp.Compare(a.ModificationTime, b.ModificationTime), cmp.Compare(a.Path, b.Path))
	})
	fs, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := &oracle{}
	seen := map[string]bool{}
	w := int64(0) // µs
	prevEvict := int64(0)
	for k := 0; k*maxFiles < len(files); k++ {
		o.lateWM = append(o.lateWM, prevEvict)
		prevEvict = w
		maxT := int64(math.MinInt64)
		for _, f := range files[k*maxFiles : min(len(files), (k+1)*maxFiles)] {
			bs, err := fs.ReadFile(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs {
				for i := range b.Len() {
					o.bronzeRows++
					id, et, ing := b.Column("event_id"), b.Column("event_time"), b.Column("_ingest_time")
					if id.IsNull(i) || et.IsNull(i) || et.Int64[i] > ing.Int64[i]+skew.Microseconds() {
						o.invalid++
						continue
					}
					maxT = max(maxT, et.Int64[i])
					if seen[id.StringAt(i)] {
						o.dups++
						continue
					}
					seen[id.StringAt(i)] = true
					r := orow{id: id.StringAt(i), t: et.Int64[i], dataBtch: k}
					if c := b.Column("event_type"); !c.IsNull(i) {
						r.typ = c.StringAt(i)
					}
					if c := b.Column("amount"); !c.IsNull(i) {
						r.amt, r.amtOK = c.Float64[i], true
					}
					o.silver = append(o.silver, r)
				}
			}
		}
		if maxT != math.MinInt64 {
			w = max(w, (maxT/1000-delay.Milliseconds())*1000)
		}
	}
	o.finalWM = w
	return o
}

type gkey struct {
	start int64
	typ   string
}

type gval struct {
	count, n int64
	sum      float64
}

// windows lists the [start, end) windows of t with plain floor arithmetic.
func windows(t, size, slide int64) [][2]int64 {
	last := t - ((t%slide)+slide)%slide
	var out [][2]int64
	for s := last; s > t-size; s -= slide {
		out = append(out, [2]int64{s, s + size})
	}
	return out
}

// expectGold aggregates the on-time pairs of windows closed by the final watermark, and lists
// the late rows (id -> judging watermark).
func (o *oracle) expectGold(size, slide time.Duration) (map[gkey]gval, map[string]int64) {
	g := map[gkey]gval{}
	late := map[string]int64{}
	for _, r := range o.silver {
		lw := o.lateWM[r.dataBtch]
		for _, w := range windows(r.t, size.Microseconds(), slide.Microseconds()) {
			if w[1] <= lw {
				late[r.id] = lw
				continue
			}
			if w[1] > o.finalWM {
				continue
			}
			k := gkey{w[0], r.typ}
			v := g[k]
			v.count++
			if r.amtOK {
				v.n++
				v.sum += r.amt
			}
			g[k] = v
		}
	}
	return g, late
}

func jsonRows(t testing.TB, lake objstore.Bucket, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, s := range tableRows(t, lake, path) {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func parseTS(t testing.TB, s any) int64 {
	ts, err := time.Parse(time.RFC3339Nano, s.(string))
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixMicro()
}

// checkAgainstOracle checks invariant A part 2, silver, quarantines and gold (append mode).
func checkAgainstOracle(t *testing.T, lake objstore.Bucket, o *oracle, rep Report) {
	t.Helper()
	silverRows := jsonRows(t, lake, "silver/events")
	var rejects int
	for _, r := range jsonRows(t, lake, "bronze/rejects") {
		if r["stage"] == silver.StageValidate {
			rejects++
		}
	}
	if o.bronzeRows != len(silverRows)+rejects+int(rep.Duplicates) {
		t.Errorf("invariant A: bronze %d != silver %d + validation rejects %d + duplicates %d", o.bronzeRows, len(silverRows), rejects, rep.Duplicates)
	}
	if rejects != o.invalid || int(rep.Duplicates) != o.dups || len(silverRows) != len(o.silver) {
		t.Errorf("rejects %d, duplicates %d, silver %d; oracle %d, %d, %d", rejects, rep.Duplicates, len(silverRows), o.invalid, o.dups, len(o.silver))
	}
	inSilver := map[string]bool{}
	for _, r := range silverRows {
		id := r["event_id"].(string)
		if inSilver[id] {
			t.Errorf("dedup key %s twice in silver", id)
		}
		inSilver[id] = true
	}
	for _, r := range o.silver {
		if !inSilver[r.id] {
			t.Errorf("silver lacks %s", r.id)
		}
	}
	if rep.WatermarkMs*1000 != o.finalWM {
		t.Errorf("final watermark %d ms, oracle %d µs", rep.WatermarkMs, o.finalWM)
	}
	for _, gc := range []struct {
		name        string
		size, slide time.Duration
		sums        bool
	}{{"g5", 5 * time.Second, 5 * time.Second, true}, {"g10", 10 * time.Second, 5 * time.Second, false}} {
		want, wantLate := o.expectGold(gc.size, gc.slide)
		q := jsonRows(t, lake, "silver/late_"+gc.name)
		if len(q) != len(wantLate) {
			t.Errorf("%s: %d quarantined rows, oracle %d", gc.name, len(q), len(wantLate))
		}
		for _, r := range q {
			id := r["event_id"].(string)
			lw, ok := wantLate[id]
			if !ok || !inSilver[id] || parseTS(t, r["late_watermark"]) != lw {
				t.Errorf("%s: quarantined %s (watermark %v) not late in the oracle (%v, %d) or not in silver", gc.name, id, r["late_watermark"], ok, lw)
			}
		}
		got := jsonRows(t, lake, "gold/"+gc.name)
		if len(got) != len(want) {
			t.Errorf("%s: %d gold rows, oracle %d", gc.name, len(got), len(want))
		}
		for _, r := range got {
			win := r["window"].(map[string]any)
			typ, _ := r["event_type"].(string)
			k := gkey{parseTS(t, win["start"]), typ}
			v, ok := want[k]
			if !ok || int64(r["count"].(float64)) != v.count {
				t.Errorf("%s: gold %v, oracle %+v (%v)", gc.name, r, v, ok)
				continue
			}
			if gc.sums && v.n > 0 {
				if s := r["total"].(float64); math.Abs(s-v.sum) > 1e-6*math.Max(1, math.Abs(v.sum)) {
					t.Errorf("%s: %v total %v, oracle %v", gc.name, k, s, v.sum)
				}
				if a := r["avg_amount"].(float64); math.Abs(a-v.sum/float64(v.n)) > 1e-6*math.Max(1, math.Abs(a)) {
					t.Errorf("%s: %v avg %v, oracle %v", gc.name, k, a, v.sum/float64(v.n))
				}
			}
			if r["late_rows"].(float64) != 0 {
				t.Errorf("%s: late_rows %v from the stream", gc.name, r["late_rows"])
			}
		}
	}
}

// TestStreamEndToEndOracle ingests a generated workload (lag tail, outage bursts, late
// resends, malformed and wrongly typed lines, far-future events) and streams it available-now:
// invariant A part 2 holds, and silver, quarantines and gold equal an independent oracle.
func TestStreamEndToEndOracle(t *testing.T) {
	for _, seed := range []int64{1, 2} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			// 6000 lines under -race (12000 without) in the same 12 files and batches; the
			// guards below fail the test if duplicates, invalid or late rows ever go missing.
			lake := landBronze(t, seed, int64(testshared.Sized(12000, 6000)), 12)
			cfg := parseConfig(t, "5s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
			o := computeOracle(t, lake, 2, 5*time.Second, time.Hour)
			if o.dups == 0 || o.invalid == 0 {
				t.Fatalf("workload has %d duplicates and %d invalid rows: the test would not exercise them", o.dups, o.invalid)
			}
			rep := mustRun(t, lake, cfg, "available-now")
			if rep.Batches < len(o.lateWM) {
				t.Fatalf("%d batches, want at least %d data batches", rep.Batches, len(o.lateWM))
			}
			checkAgainstOracle(t, lake, o, rep)
			var late int64
			for _, g := range rep.Gold {
				late += g.LateRows
			}
			if late == 0 {
				t.Fatal("no late rows: the workload does not exercise quarantine")
			}
			// A second run finds nothing new and changes nothing.
			v := testutil.TableVersion(t, lake, "gold/g5")
			if rep2 := mustRun(t, lake, cfg, "available-now"); rep2.Batches != 0 || testutil.TableVersion(t, lake, "gold/g5") != v {
				t.Fatalf("rerun ran %d batches", rep2.Batches)
			}
		})
	}
}

// TestStreamEndToEndOracleMinIO is the oracle test on a real MinIO server (skipped without
// one: run it with scripts/minio.sh run -- go test ./stream/).
func TestStreamEndToEndOracleMinIO(t *testing.T) {
	lake := s3test.NewTestBucket(t)
	base := landBronze(t, 3, 3000, 6)
	copyInto(t, base, lake)
	cfg := parseConfig(t, "2s", "  dedup: [event_id]\n  max_files_per_trigger: 2", e2eGold)
	o := computeOracle(t, lake, 2, 2*time.Second, time.Hour)
	rep := mustRun(t, lake, cfg, "available-now")
	checkAgainstOracle(t, lake, o, rep)
	if rep.Gold[0].LateRows == 0 {
		t.Fatal("no late rows: the workload does not exercise quarantine")
	}
}
