package late

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

const testYAML = `
lake: mem
schema:
  - {name: event_id,   type: string, required: true}
  - {name: event_type, type: string}
  - {name: device_id,  type: string}
  - {name: amount,     type: double}
  - {name: qty,        type: long}
  - {name: event_time, type: timestamp, required: true}
stream:
  watermark: 5s
  dedup: [event_id]
  max_files_per_trigger: 1
gold:
  - name: t5
    window: {type: tumbling, size: 5s}
    group_by: [event_type, device_id]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
      - {fn: min, column: amount, as: lo}
      - {fn: max, column: qty, as: hi}
      - {fn: avg, column: amount, as: mean}
      - {fn: sum, column: qty, as: qsum}
  - name: s10
    window: {type: sliding, size: 10s, slide: 5s}
    group_by: [event_type]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: qty, as: qsum}
      - {fn: max, column: amount, as: hi}
      - {fn: avg, column: qty, as: mean}
      - {fn: approx_count_distinct, column: device_id, as: devices}
      - {fn: approx_percentile, column: amount, as: amt_pct, percentiles: [0.5]}
%s
`

const sessionYAML = `  - name: sess
    window: {type: session, gap: 20ms}
    group_by: [event_type, device_id]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
`

func testConfig(t testing.TB, extra string) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, fmt.Sprintf(testYAML, extra))
}

var streamClock = func() time.Time { return time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC) }

var ingestClock = func() time.Time { return time.Date(2024, 5, 1, 6, 0, 0, 0, time.UTC) }

// land generates a workload (log-normal lag, heavy tail, outage bursts, duplicates and late
// resends, malformed and wrongly typed lines) into the landing prefix of lake.
func land(t testing.TB, lake objstore.Bucket, seed, lines int64, files int) {
	t.Helper()
	landAt(t, lake, seed, lines, files, time.Time{})
}

// landAt lands a workload whose arrival clock starts at start (zero: gen's default).
func landAt(t testing.TB, lake objstore.Bucket, seed, lines int64, files int, start time.Time) {
	t.Helper()
	opts := gen.DefaultOptions()
	if !start.IsZero() {
		opts.Start = start
	}
	opts.Seed, opts.Lines, opts.Files, opts.Rate = seed, lines, files, 200
	opts.Columns = append(gen.DefaultColumns(), gen.Column{Name: "device_id", Kind: "string"}, gen.Column{Name: "qty", Kind: "long"})
	opts.Devices, opts.EventTypes = 3, 3
	opts.DuplicateFraction, opts.LateResendFraction = 0.03, 0.3
	opts.MalformedFraction, opts.WrongTypeFraction, opts.FutureFraction = 0.002, 0.005, 0.002
	opts.OutageRate, opts.OutageDuration = 0.002, 30*time.Second
	opts.LagMedian, opts.TailFraction, opts.TailScale = 2*time.Second, 0.05, 10*time.Second
	if _, err := gen.Generate(context.Background(), lake, opts); err != nil {
		t.Fatal(err)
	}
}

func declared(cfg *config.Pipeline) *txlog.StructType {
	st := &txlog.StructType{}
	for _, c := range cfg.Schema {
		st.Fields = append(st.Fields, txlog.StructField{Name: c.Name, Type: txlog.PrimitiveType{Name: string(c.Type.Kind)}, Nullable: !c.Required})
	}
	return st
}

func ingest(t testing.TB, lake objstore.Bucket, cfg *config.Pipeline) {
	t.Helper()
	x, err := bronze.NewIngester(lake, bronze.IngestOptions{LandingPrefix: "landing/events/", Declared: declared(cfg),
		BronzePath: cfg.Tables.Bronze, RejectsPath: cfg.Tables.Rejects, CheckpointPath: "_checkpoints/ingest",
		MaxFilesPerTrigger: 1, FlushRows: 400, Workers: 1, Clock: ingestClock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func runStream(t testing.TB, lake objstore.Bucket, cfg *config.Pipeline) stream.Report {
	t.Helper()
	r, err := stream.New(stream.Options{Lake: lake, Query: specs.Query(cfg), Trigger: spec.Trigger{Kind: spec.AvailableNow}, Clock: streamClock})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// pipeline lands, ingests and streams a workload on a fresh mem lake.
func pipeline(t testing.TB, seed, lines int64, files int, extra string) (*mem.Bucket, *config.Pipeline, stream.Report) {
	t.Helper()
	lake := mem.New()
	cfg := testConfig(t, extra)
	land(t, lake, seed, lines, files)
	ingest(t, lake, cfg)
	return lake, cfg, runStream(t, lake, cfg)
}

func opts(lake objstore.Bucket, cfg *config.Pipeline) Options {
	return Options{Lake: lake, Query: specs.Query(cfg), Clock: func() time.Time { return time.Date(2024, 5, 1, 8, 0, 0, 0, time.UTC) }}
}

// srow is a silver row as the oracle sees it.
type srow struct {
	t            int64
	typ, dev     string
	typOK, devOK bool
	amt          float64
	amtOK        bool
	qty          int64
	qtyOK        bool
}

func readSilver(t testing.TB, lake objstore.Bucket, path string) []srow {
	t.Helper()
	var out []srow
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		et, typ, dev, amt, qty := b.Column("event_time"), b.Column("event_type"), b.Column("device_id"), b.Column("amount"), b.Column("qty")
		for i := range b.Len() {
			r := srow{t: et.Int64[i]}
			if r.typOK = !typ.IsNull(i); r.typOK {
				r.typ = typ.StringAt(i)
			}
			if r.devOK = !dev.IsNull(i); r.devOK {
				r.dev = dev.StringAt(i)
			}
			if r.amtOK = !amt.IsNull(i); r.amtOK {
				r.amt = amt.Float64[i]
			}
			if r.qtyOK = !qty.IsNull(i); r.qtyOK {
				r.qty = qty.Int64[i]
			}
			out = append(out, r)
		}
	}
	return out
}

// okey is an oracle group: window and the rendered group keys.
type okey struct {
	start, end int64
	keys       string
}

// oval accumulates every aggregate the tests check.
type oval struct {
	n          int64
	amtN, qtyN int64
	// amtExact is the exact sum of the amounts (big.Rat, independent of gold.Exact): gold's
	// total and mean must be it correctly rounded, bit for bit.
	amtExact       big.Rat
	qtySum         int64
	amtMin, amtMax float64
	qtyMax         int64
	devices        map[string]bool
}

func (v *oval) add(r srow) {
	v.n++
	if r.devOK {
		if v.devices == nil {
			v.devices = map[string]bool{}
		}
		v.devices[r.dev] = true
	}
	if r.amtOK {
		if v.amtN == 0 || r.amt < v.amtMin {
			v.amtMin = r.amt
		}
		if v.amtN == 0 || r.amt > v.amtMax {
			v.amtMax = r.amt
		}
		v.amtN++
		var x big.Rat
		v.amtExact.Add(&v.amtExact, x.SetFloat64(r.amt))
	}
	if r.qtyOK {
		if v.qtyN == 0 || r.qty > v.qtyMax {
			v.qtyMax = r.qty
		}
		v.qtyN++
		v.qtySum += r.qty
	}
}

// floorWindows lists the [start, end) windows containing t, with plain floor arithmetic.
func floorWindows(t, size, slide int64) [][2]int64 {
	last := t - ((t%slide)+slide)%slide
	var out [][2]int64
	for s := last; s > t-size; s -= slide {
		out = append(out, [2]int64{s, s + size})
	}
	return out
}

func keyString(r srow, by []string) string {
	var parts []string
	for _, k := range by {
		switch k {
		case "event_type":
			parts = append(parts, nullable(r.typ, r.typOK))
		case "device_id":
			parts = append(parts, nullable(r.dev, r.devOK))
		}
	}
	return strings.Join(parts, "|")
}

func nullable(s string, ok bool) string {
	if !ok {
		return "<null>"
	}
	return "=" + s
}

// batchWindows is the batch aggregation of rows over tumbling or sliding windows, restricted
// to the windows keep accepts.
func batchWindows(rows []srow, size, slide time.Duration, by []string, keep func(start, end int64) bool) map[okey]*oval {
	out := map[okey]*oval{}
	for _, r := range rows {
		for _, w := range floorWindows(r.t, size.Microseconds(), slide.Microseconds()) {
			if !keep(w[0], w[1]) {
				continue
			}
			k := okey{w[0], w[1], keyString(r, by)}
			v := out[k]
			if v == nil {
				v = &oval{}
				out[k] = v
			}
			v.add(r)
		}
	}
	return out
}

// batchSessions sessionizes rows per key with a static gap (touching sessions merge).
func batchSessions(rows []srow, gap time.Duration, by []string, keep func(start, end int64) bool) map[okey]*oval {
	per := map[string][]srow{}
	for _, r := range rows {
		k := keyString(r, by)
		per[k] = append(per[k], r)
	}
	out := map[okey]*oval{}
	g := gap.Microseconds()
	for k, rs := range per {
		slices.SortFunc(rs, func(a, b srow) int { return int(a.t - b.t) })
		for i := 0; i < len(rs); {
			j, end := i, rs[i].t+g
			for j+1 < len(rs) && rs[j+1].t <= end {
				j++
				end = max(end, rs[j].t+g)
			}
			if keep(rs[i].t, end) {
				v := &oval{}
				for _, r := range rs[i : j+1] {
					v.add(r)
				}
				out[okey{rs[i].t, end, k}] = v
			}
			i = j + 1
		}
	}
	return out
}

// grow is a gold row as the tests read it.
type grow struct {
	key  okey
	vals map[string]any
}

func readGold(t testing.TB, lake objstore.Bucket, path string, by []string) []grow {
	t.Helper()
	var out []grow
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			vals := map[string]any{}
			for ci, f := range b.Schema.Fields {
				vals[f.Name] = b.Columns[ci].Value(i)
			}
			win := b.Column("window")
			var parts []string
			for _, k := range by {
				if v := vals[k]; v == nil {
					parts = append(parts, "<null>")
				} else {
					parts = append(parts, "="+v.(string))
				}
			}
			out = append(out, grow{key: okey{win.Children[0].Int64[i], win.Children[1].Int64[i], strings.Join(parts, "|")}, vals: vals})
		}
	}
	return out
}

// sameFloat is bit equality (NaN equal to NaN): gold's sums are exact, so its doubles equal
// the oracle's correctly rounded ones, with no tolerance.
func sameFloat(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
}

// amtTotal and amtMean are the exact sum and mean of the amounts correctly rounded
// (big.Rat.Float64 rounds to nearest, ties to even); an exact zero is +0.
func (v *oval) amtTotal() float64 { return ratFloat(&v.amtExact) }

func (v *oval) amtMean() float64 {
	if v.amtN == 0 {
		return 0 // orNull drops it
	}
	return ratFloat(new(big.Rat).Quo(&v.amtExact, new(big.Rat).SetInt64(v.amtN)))
}

func ratFloat(r *big.Rat) float64 {
	f, _ := r.Float64()
	return f + 0 // -0 to +0
}

// checkGold compares gold with the oracle: same groups, once each, same aggregates. check
// maps a gold column to the oracle value it must hold (nil: SQL null).
func checkGold(t testing.TB, name string, got []grow, want map[okey]*oval, check map[string]func(*oval) any) {
	t.Helper()
	if n := diffGold(name, got, want, check, t.Errorf); n > 0 {
		t.Fatalf("%s: %d differences", name, n)
	}
}

// diffGold reports (at most 20 of) the differences between gold and the oracle and returns
// how many there were.
func diffGold(name string, got []grow, want map[okey]*oval, check map[string]func(*oval) any, errorf func(string, ...any)) int {
	bad := 0
	report := func(format string, args ...any) {
		if bad++; bad <= 20 {
			errorf(format, args...)
		}
	}
	seen := map[okey]bool{}
	for _, g := range got {
		if seen[g.key] {
			report("%s: window %v twice in gold", name, g.key)
		}
		seen[g.key] = true
		w := want[g.key]
		if w == nil {
			report("%s: gold has %v (%v), the batch aggregation does not", name, g.key, g.vals)
			continue
		}
		for col, f := range check {
			exp, v := f(w), g.vals[col]
			ok := false
			switch e := exp.(type) {
			case nil:
				ok = v == nil
			case int64:
				ok = v == e
			case float64:
				x, isF := v.(float64)
				ok = isF && sameFloat(x, e)
			}
			if !ok {
				report("%s: %v %s = %v, batch aggregation %v", name, g.key, col, v, exp)
			}
		}
	}
	for k := range want {
		if !seen[k] {
			report("%s: gold lacks %v", name, k)
		}
	}
	return bad
}

func orNull[T any](ok bool, v T) any {
	if !ok {
		return nil
	}
	return v
}

var t5Checks = map[string]func(*oval) any{
	"n":     func(v *oval) any { return v.n },
	"total": func(v *oval) any { return orNull(v.amtN > 0, v.amtTotal()) },
	"lo":    func(v *oval) any { return orNull(v.amtN > 0, v.amtMin) },
	"hi":    func(v *oval) any { return orNull(v.qtyN > 0, v.qtyMax) },
	"mean":  func(v *oval) any { return orNull(v.amtN > 0, v.amtMean()) },
	"qsum":  func(v *oval) any { return orNull(v.qtyN > 0, v.qtySum) },
}

var s10Checks = map[string]func(*oval) any{
	"n":    func(v *oval) any { return v.n },
	"qsum": func(v *oval) any { return orNull(v.qtyN > 0, v.qtySum) },
	"hi":   func(v *oval) any { return orNull(v.amtN > 0, v.amtMax) },
	"mean": func(v *oval) any { return orNull(v.qtyN > 0, float64(v.qtySum)/float64(v.qtyN)) },
	// A HyperLogLog of three values is exact; merged sketches must stay so.
	"devices": func(v *oval) any { return int64(len(v.devices)) },
}

var sessChecks = map[string]func(*oval) any{
	"n":     func(v *oval) any { return v.n },
	"total": func(v *oval) any { return orNull(v.amtN > 0, v.amtTotal()) },
}

// checkInvariantE checks every tumbling and sliding gold table against the batch aggregation
// of silver over the windows closed by the stream's final watermark.
func checkInvariantE(t testing.TB, lake objstore.Bucket, wmMs int64) {
	t.Helper()
	if n := invariantEDiffs(t, lake, wmMs, t.Errorf); n > 0 {
		t.Fatalf("invariant E: %d differences", n)
	}
}

func invariantEDiffs(t testing.TB, lake objstore.Bucket, wmMs int64, errorf func(string, ...any)) int {
	silver := readSilver(t, lake, "silver/events")
	closed := func(_, end int64) bool { return end <= wmMs*1000 }
	return diffGold("t5", readGold(t, lake, "gold/t5", []string{"event_type", "device_id"}),
		batchWindows(silver, 5*time.Second, 5*time.Second, []string{"event_type", "device_id"}, closed), t5Checks, errorf) +
		diffGold("s10", readGold(t, lake, "gold/s10", []string{"event_type"}),
			batchWindows(silver, 10*time.Second, 5*time.Second, []string{"event_type"}, closed), s10Checks, errorf)
}

// openSnapshot opens the table at path in lake and reads its latest snapshot.
func openSnapshot(t testing.TB, lake objstore.Bucket, path string) (*table.Table, *txlog.Snapshot) {
	t.Helper()
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	snap, err := tbl.Log().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl, snap
}
