package late

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
)

// hashAggInput is the schema of the engine tests' rows: two group-by columns (a string and
// a long, both nullable) and a double and a long to aggregate.
var hashAggInput = &txlog.StructType{Fields: []txlog.StructField{
	{Name: "ts", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}},
	{Name: "dev", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
	{Name: "zone", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
	{Name: "x", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
	{Name: "n", Type: txlog.PrimitiveType{Name: txlog.TypeLong}, Nullable: true},
}}

// hashAggFns are the aggregates under test: every function of the engine over both types.
var hashAggFns = []spec.Aggregate{
	{Fn: "count", As: "c"}, {Fn: "count", Column: "x", As: "cx"},
	{Fn: "sum", Column: "x", As: "sx"}, {Fn: "avg", Column: "x", As: "ax"}, {Fn: "min", Column: "x", As: "mnx"}, {Fn: "max", Column: "x", As: "mxx"},
	{Fn: "sum", Column: "n", As: "sn"}, {Fn: "avg", Column: "n", As: "an"}, {Fn: "min", Column: "n", As: "mnn"}, {Fn: "max", Column: "n", As: "mxn"},
}

// testAgg resolves the engine tests' aggregation for window w against the gold schema the
// stream would create.
func testAgg(t testing.TB, w spec.Window) *agg { return testAggBy(t, w, "dev", "zone") }

// testAggBy is testAgg grouping by keys (of dev and zone, in that order).
func testAggBy(t testing.TB, w spec.Window, keys ...string) *agg {
	t.Helper()
	return testAggOf(t, w, hashAggFns, keys...)
}

// testAggOf is testAggBy computing fns (of hashAggFns' columns).
func testAggOf(t testing.TB, w spec.Window, fns []spec.Aggregate, keys ...string) *agg {
	t.Helper()
	dbl, long := txlog.PrimitiveType{Name: txlog.TypeDouble}, txlog.PrimitiveType{Name: txlog.TypeLong}
	fields := []txlog.StructField{gold.WindowField()}
	for _, k := range keys {
		fields = append(fields, *hashAggInput.Field(k))
	}
	for _, f := range fns {
		fn, err := gold.ParseFunc(f.Fn)
		if err != nil {
			t.Fatal(err)
		}
		in, num := txlog.DataType(dbl), txlog.DataType(dbl)
		if f.Column == "n" {
			in, num = long, long
		}
		fields = append(fields, gold.AggregateFields(fn, f.As, in, num)...)
	}
	goldSchema := &txlog.StructType{Fields: append(fields, gold.LateRowsField())}
	q := &spec.Query{Rules: silver.Rules{EventTime: "ts"}}
	a, err := resolve(q, &spec.Aggregation{Name: "g", Window: w, GroupBy: keys, Aggregates: fns}, hashAggInput, goldSchema)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// skewedBatches are rows rows of random events over span µs in batches of batch rows: the
// keys Zipf-distributed over keys devices (the hottest holding a large share), a few nulls in
// every column but the time, NaN and infinities among the doubles. The doubles are multiples
// of 1/4 small enough that every sum is exact in any order, so the oracle can ask for equality.
func skewedBatches(t testing.TB, seed uint64, rows, batch int, keys uint64, span int64) []*pq.Batch {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	zipf := rand.NewZipf(rng, 1.2, 4, keys-1)
	var out []*pq.Batch
	for len(out)*batch < rows {
		b, err := pq.NewBatch(hashAggInput)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < batch && len(out)*batch+i < rows; i++ {
			b.Columns[0].AppendInt64(1_700_000_000_000_000 + rng.Int64N(span) - span/10)
			if rng.IntN(500) == 0 {
				b.Columns[1].AppendNull()
			} else {
				b.Columns[1].AppendString("dev-" + strconv.FormatUint(zipf.Uint64(), 10))
			}
			if rng.IntN(300) == 0 {
				b.Columns[2].AppendNull()
			} else {
				b.Columns[2].AppendInt64(int64(rng.IntN(3)))
			}
			switch r := rng.IntN(1000); {
			case r < 10:
				b.Columns[3].AppendNull()
			case r < 12:
				b.Columns[3].AppendFloat64(math.NaN())
			case r < 13:
				b.Columns[3].AppendFloat64(math.Inf(1 - 2*rng.IntN(2)))
			default:
				b.Columns[3].AppendFloat64(float64(rng.IntN(40000)-20000) / 4)
			}
			if rng.IntN(100) == 0 {
				b.Columns[4].AppendNull()
			} else {
				b.Columns[4].AppendInt64(rng.Int64N(1<<40) - 1<<39)
			}
		}
		out = append(out, b)
	}
	return out
}

// oracleAgg is one group's aggregates as the test computes them, plainly.
type oracleAgg struct {
	c, cx, cn      int64
	sx             float64
	mnx, mxx       float64
	sn, mnn, mxn   int64
	seenX, seenNaN bool
}

// oracleRows aggregates the batches with maps and a window assignment of the test's own, and
// renders each group as renderGold renders a gold row.
func oracleRows(batches []*pq.Batch, size, slide, startTime, wlo, whi int64) []string {
	type gk struct {
		start    int64
		dev      string
		devNull  bool
		zone     int64
		zoneNull bool
	}
	groups := map[gk]*oracleAgg{}
	for _, b := range batches {
		for i := range b.Len() {
			t := b.Columns[0].Int64[i]
			// The windows [s, s+size) holding t, s on the grid startTime + k*slide.
			first := startTime + int64(math.Floor(float64(t-startTime)/float64(slide)))*slide
			for first > t {
				first -= slide
			}
			for first+slide <= t {
				first += slide
			}
			for s := first; s > t-size; s -= slide {
				if s < wlo || s > whi {
					continue
				}
				k := gk{start: s}
				if b.Columns[1].IsNull(i) {
					k.devNull = true
				} else {
					k.dev = b.Columns[1].StringAt(i)
				}
				if b.Columns[2].IsNull(i) {
					k.zoneNull = true
				} else {
					k.zone = b.Columns[2].Int64[i]
				}
				g := groups[k]
				if g == nil {
					g = &oracleAgg{}
					groups[k] = g
				}
				g.c++
				if !b.Columns[3].IsNull(i) {
					x := b.Columns[3].Float64[i]
					g.cx++
					g.sx += x
					switch {
					case math.IsNaN(x):
						g.seenNaN = true
					case !g.seenX:
						g.mnx, g.mxx, g.seenX = x, x, true
					default:
						g.mnx, g.mxx = min(g.mnx, x), max(g.mxx, x)
					}
				}
				if !b.Columns[4].IsNull(i) {
					n := b.Columns[4].Int64[i]
					if g.cn == 0 {
						g.mnn, g.mxn = n, n
					}
					g.cn++
					g.sn += n
					g.mnn, g.mxn = min(g.mnn, n), max(g.mxn, n)
				}
			}
		}
	}
	var out []string
	for k, g := range groups {
		dev, zone := "null", "null"
		if !k.devNull {
			dev = k.dev
		}
		if !k.zoneNull {
			zone = strconv.FormatInt(k.zone, 10)
		}
		// Spark orders NaN above every number: it is the max of a group holding one, and
		// the min only of a group holding nothing else.
		mnx, mxx := fmtNum(g.cx, g.mnx), fmtNum(g.cx, g.mxx)
		if g.seenNaN {
			mxx = "NaN"
			if !g.seenX {
				mnx = "NaN"
			}
		}
		avgx, avgn := "null", "null"
		if g.cx > 0 {
			avgx = strconv.FormatFloat(g.sx/float64(g.cx), 'g', -1, 64)
		}
		if g.cn > 0 {
			avgn = strconv.FormatFloat(float64(g.sn)/float64(g.cn), 'g', -1, 64)
		}
		sn, mnn, mxn := "null", "null", "null"
		if g.cn > 0 {
			sn, mnn, mxn = strconv.FormatInt(g.sn, 10), strconv.FormatInt(g.mnn, 10), strconv.FormatInt(g.mxn, 10)
		}
		out = append(out, fmt.Sprintf("%d-%d %s %s | c=%d cx=%d sx=%s ax=%s/%s/%d mnx=%s mxx=%s sn=%s an=%s/%s/%d mnn=%s mxn=%s late=0",
			k.start, k.start+size, dev, zone, g.c, g.cx, fmtNum(g.cx, g.sx), avgx, fmtNum(g.cx, g.sx), g.cx, mnx, mxx,
			sn, avgn, sn, g.cn, mnn, mxn))
	}
	slices.Sort(out)
	return out
}

func fmtNum(n int64, x float64) string {
	if n == 0 {
		return "null"
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// renderGold renders the gold rows of b (testAgg's schema) as oracleRows does.
func renderGold(t testing.TB, b *pq.Batch) []string {
	t.Helper()
	cell := func(c *pq.Column, i int) string {
		if c == nil {
			return "0" // a gold table grouped by dev alone: the test's input has zone 0
		}
		if c.IsNull(i) {
			return "null"
		}
		switch c.Kind {
		case pq.KindInt64:
			return strconv.FormatInt(c.Int64[i], 10)
		case pq.KindFloat64:
			return strconv.FormatFloat(c.Float64[i], 'g', -1, 64)
		case pq.KindBytes:
			return c.StringAt(i)
		}
		t.Fatalf("column of kind %v", c.Kind)
		return ""
	}
	col := func(name string) *pq.Column { return b.Column(name) }
	out := make([]string, 0, b.Len())
	for i := range b.Len() {
		w := col(gold.ColWindow)
		out = append(out, fmt.Sprintf("%d-%d %s %s | c=%s cx=%s sx=%s ax=%s/%s/%s mnx=%s mxx=%s sn=%s an=%s/%s/%s mnn=%s mxn=%s late=%s",
			w.Children[0].Int64[i], w.Children[1].Int64[i], cell(col("dev"), i), cell(col("zone"), i),
			cell(col("c"), i), cell(col("cx"), i), cell(col("sx"), i), cell(col("ax"), i), cell(col("ax_sum"), i), cell(col("ax_count"), i),
			cell(col("mnx"), i), cell(col("mxx"), i), cell(col("sn"), i), cell(col("an"), i), cell(col("an_sum"), i), cell(col("an_count"), i),
			cell(col("mnn"), i), cell(col("mxn"), i), cell(col(gold.ColLateRows), i)))
	}
	return out
}

// TestHashAggOracle compares the columnar engine with a plain map aggregation written for the
// test, on large skewed inputs (a hot key, nulls in every key and value column, NaN and
// infinities) cut into partial tables merged as a parallel replay merges them, for tumbling,
// sliding and uneven sliding windows and a window range that cuts the input. The engine's
// rows must also come in window order. MEDALLION_HASHAGG_ROWS sets the input size (default
// 50k rows, seven batches, so every case still spans several batches and grows its tables many
// times; 150k with MEDALLION_LONG=1, 32 CPU s under -race against 12 at 50k). Under -race it is
// 25k (four batches of 8192: still several, and 100k-key tables still grow many times).
func TestHashAggOracle(t *testing.T) {
	// Parallel: its own in-memory lake, no environment or package state changed; one of the
	// package's longest tests, so it overlaps the others instead of ending the run alone.
	t.Parallel()
	rows := testshared.Sized(50_000, 25_000)
	if os.Getenv("MEDALLION_LONG") == "1" {
		rows = 150_000
	}
	if v := os.Getenv("MEDALLION_HASHAGG_ROWS"); v != "" {
		var err error
		if rows, err = strconv.Atoi(v); err != nil {
			t.Fatal(err)
		}
	}
	const span = int64(6 * time.Hour / time.Microsecond)
	for _, tc := range []struct {
		name         string
		win          spec.Window
		keys         uint64
		parts        int
		cutLo, cutHi float64 // the window starts kept, as fractions of the span
		// subset: each batch is added through a random selection of its rows (as a replay
		// passes the rows of its time range), the oracle given only those.
		subset bool
	}{
		{"tumbling 5m, 100k keys, 1 part", spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute}, 100_000, 1, 0, 1, false},
		{"tumbling 5m, 100k keys, 2 parts, row subsets", spec.Window{Size: 5 * time.Minute, Slide: 5 * time.Minute}, 100_000, 2, 0, 1, true},
		{"sliding 10m/5m, 100k keys, 3 parts", spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, 100_000, 3, 0.2, 0.7, false},
		{"sliding 7m/3m offset 1m, 1k keys, 2 parts", spec.Window{Size: 7 * time.Minute, Slide: 3 * time.Minute, Start: time.Minute}, 1_000, 2, 0.1, 0.9, false},
		{"sliding 7m/3m offset 1m, 1k keys, 3 parts, row subsets", spec.Window{Size: 7 * time.Minute, Slide: 3 * time.Minute, Start: time.Minute}, 1_000, 3, 0.1, 0.9, true},
		{"tumbling 1h, 10 keys, 4 parts", spec.Window{Size: time.Hour, Slide: time.Hour}, 10, 4, 0, 0.5, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := testAgg(t, tc.win)
			if !canHashAgg(a) {
				t.Fatal("the engine does not take the test's aggregates")
			}
			batches := skewedBatches(t, uint64(tc.keys)+uint64(tc.parts), rows, 8192, tc.keys, span)
			base := int64(1_700_000_000_000_000) - span/10
			wlo := alignStart(base+int64(tc.cutLo*float64(span)), a.window)
			whi := alignStart(base+int64(tc.cutHi*float64(span)), a.window)
			// Partial tables with one hash seed (as a replay's) and, for an even count, each
			// with its own (merge then hashes the keys again).
			parts := make([]*hashAgg, tc.parts)
			seed := maphash.MakeSeed()
			for i := range parts {
				if tc.parts%2 == 0 {
					parts[i] = newHashAgg(a)
				} else {
					parts[i] = newHashAggSeed(a, seed)
				}
			}
			var sel []int32
			rng := rand.New(rand.NewPCG(tc.keys, 11))
			oracleIn := batches
			if tc.subset {
				oracleIn = nil
			}
			for k, b := range batches {
				src, err := a.source(b)
				if err != nil {
					t.Fatal(err)
				}
				sel = sel[:0]
				keep := make([]bool, b.Len())
				for i := range b.Len() {
					if tc.subset && rng.IntN(4) == 0 {
						continue
					}
					keep[i] = true
					sel = append(sel, int32(i))
				}
				if tc.subset {
					oracleIn = append(oracleIn, b.Filter(keep))
				}
				if err := parts[k%tc.parts].add(src, sel, wlo, whi); err != nil {
					t.Fatal(err)
				}
			}
			h := parts[0]
			for _, p := range parts[1:] {
				h.merge(p)
			}
			out, err := pq.NewBatch(a.gold)
			if err != nil {
				t.Fatal(err)
			}
			n, err := h.emit(out, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := out.Validate(); err != nil {
				t.Fatal(err)
			}
			got := renderGold(t, out)
			if int(n) != len(got) {
				t.Fatalf("emit reports %d rows, wrote %d", n, len(got))
			}
			// The collector's order: by window start, then by encoded key.
			starts := out.Column(gold.ColWindow).Children[0].Int64
			var prev, key []byte
			for i := range out.Len() {
				key = pq.AppendKeyPart(pq.AppendKeyPart(pq.AppendKeyInt64(key[:0], starts[i]), out.Column("dev"), i), out.Column("zone"), i)
				if i > 0 && string(prev) >= string(key) {
					t.Fatalf("row %d (%s) is not after row %d (%s)", i, got[i], i-1, got[i-1])
				}
				prev = append(prev[:0], key...)
			}
			// Emitted again through a flush every emitChunk rows (as a replay writes them), the
			// same rows in the same order.
			chunk, err := pq.NewBatch(a.gold)
			if err != nil {
				t.Fatal(err)
			}
			var flushed []string
			flushes := 0
			n, err = h.emit(chunk, nil, func() error {
				if err := chunk.Validate(); err != nil {
					return err
				}
				flushes++
				flushed = append(flushed, renderGold(t, chunk)...)
				chunk.Reset()
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			flushed = append(flushed, renderGold(t, chunk)...)
			if int(n) != len(got) || !slices.Equal(flushed, got) || flushes != len(got)/emitChunk {
				t.Fatalf("emit in chunks: %d rows in %d flushes, want the %d rows of one emit in %d", len(flushed), flushes, len(got), len(got)/emitChunk)
			}
			want := oracleRows(oracleIn, a.window.Size, a.window.Slide, a.window.StartTime, wlo, whi)
			if len(want) < 10 {
				t.Fatalf("the oracle has %d groups: the test proves little", len(want))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				diffs := 0
				for _, r := range got {
					if _, ok := slices.BinarySearch(want, r); !ok && diffs < 5 {
						t.Errorf("engine only: %s", r)
						diffs++
					}
				}
				for _, r := range want {
					if _, ok := slices.BinarySearch(got, r); !ok && diffs < 10 {
						t.Errorf("oracle only: %s", r)
						diffs++
					}
				}
				t.Fatalf("%d engine rows, %d oracle rows", len(got), len(want))
			}
		})
	}
}

// TestHashAggDictionaryKeys: rows whose one key column was read through a Parquet dictionary
// get their key ids an entry at a time (keyIDsByDictionary); batches read that way and batches
// without a dictionary (the per-row path) fill the same tables, and the result equals the
// plain map oracle's. The input: skewed rows over 1k keys (nulls among them), zone 0 so that
// the oracle's (dev, zone) groups are dev's, each batch written to Parquet and read back.
func TestHashAggDictionaryKeys(t *testing.T) {
	const span = int64(6 * time.Hour / time.Microsecond)
	a := testAggBy(t, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, "dev")
	batches := skewedBatches(t, 3, 30_000, 6000, 1000, span)
	base := int64(1_700_000_000_000_000) - span/10
	wlo, whi := alignStart(base+span/5, a.window), alignStart(base+span*4/5, a.window)
	parts := []*hashAgg{newHashAgg(a), newHashAgg(a)}
	rng := rand.New(rand.NewPCG(3, 5))
	var oracleIn []*pq.Batch
	dictBatches := 0
	for k, b := range batches {
		zone := b.Columns[2]
		zone.Reset()
		for range b.Len() {
			zone.AppendInt64(0)
		}
		data, _, err := pq.EncodeFile(hashAggInput, []*pq.Batch{b}, pq.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		read, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), hashAggInput)
		if err != nil {
			t.Fatal(err)
		}
		for _, rb := range read {
			keep := make([]bool, rb.Len())
			var sel []int32
			for i := range keep {
				if rng.IntN(5) != 0 {
					keep[i] = true
					sel = append(sel, int32(i))
				}
			}
			oracleIn = append(oracleIn, rb.Filter(keep))
			if k%3 == 2 {
				rb = rb.Filter(nil) // no dictionary: the per-row path into the same tables
			}
			src, err := a.source(rb)
			if err != nil {
				t.Fatal(err)
			}
			if dictionaryKey(src, len(sel)) != nil {
				dictBatches++
			}
			if err := parts[k%2].add(src, sel, wlo, whi); err != nil {
				t.Fatal(err)
			}
		}
	}
	if dictBatches < 2 || dictBatches == len(batches) {
		t.Fatalf("%d of %d batches took the dictionary path: the test needs both paths", dictBatches, len(batches))
	}
	h := parts[0]
	h.merge(parts[1])
	out, err := pq.NewBatch(a.gold)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.emit(out, nil, nil); err != nil {
		t.Fatal(err)
	}
	wantOracleRows(t, renderGold(t, out), oracleRows(oracleIn, a.window.Size, a.window.Slide, a.window.StartTime, wlo, whi), 1000)
}

// wantOracleRows fails t unless the engine's rows got, in any order, are the oracle's sorted
// rows want, of which there must be at least minRows for the test to prove something.
func wantOracleRows(t *testing.T, got, want []string, minRows int) {
	t.Helper()
	if len(want) < minRows {
		t.Fatalf("the oracle has %d groups: the test proves little", len(want))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("row %d: engine %s, oracle %s", i, got[i], want[i])
			}
		}
		t.Fatalf("%d engine rows, %d oracle rows", len(got), len(want))
	}
}

// allRows is the selection of every row of a batch of n rows.
func allRows(n int) []int32 {
	sel := make([]int32, n)
	for i := range sel {
		sel[i] = int32(i)
	}
	return sel
}

// BenchmarkReplayAggregate aggregates 200k skewed rows into sliding 10m/5m windows over 100k
// keys (every function of the engine), from decoded batches to gold rows: the row-at-a-time
// collector replay used before, then the columnar engine in one and two partial tables. The
// figure to compare is ns/op (and allocs/op) between the engines.
func BenchmarkReplayAggregate(b *testing.B) {
	const rows = 200_000
	const span = int64(6 * time.Hour / time.Microsecond)
	a := testAgg(b, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute})
	batches := skewedBatches(b, 1, rows, 8192, 100_000, span)
	var srcs []*source
	var sels [][]int32
	for _, bt := range batches {
		s, err := a.source(bt)
		if err != nil {
			b.Fatal(err)
		}
		sel := allRows(bt.Len())
		srcs, sels = append(srcs, s), append(sels, sel)
	}
	lo, hi := int64(math.MinInt64/2), int64(math.MaxInt64/2)
	out := func(b *testing.B) *pq.Batch {
		o, err := pq.NewBatch(a.gold)
		if err != nil {
			b.Fatal(err)
		}
		return o
	}
	b.Run("collector", func(b *testing.B) {
		b.ReportAllocs()
		var wins []gold.Window
		for b.Loop() {
			c, err := newCollector(a)
			if err != nil {
				b.Fatal(err)
			}
			for k, s := range srcs {
				for _, i := range sels[k] {
					wins = a.window.Assign(wins[:0], s.ev.Int64[i])
					for _, w := range wins {
						if err := c.add(s, int(i), w); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			groups, err := c.groups()
			if err != nil {
				b.Fatal(err)
			}
			o := out(b)
			for _, g := range groups {
				if err := a.appendRow(o, g.win, g.keys, g.vals, 0); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	})
	for _, parts := range []int{1, 2} {
		b.Run(fmt.Sprintf("hashagg/parts=%d", parts), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				hs := make([]*hashAgg, parts)
				seed := maphash.MakeSeed()
				for i := range hs {
					hs[i] = newHashAggSeed(a, seed)
				}
				for k, s := range srcs {
					if err := hs[k%parts].add(s, sels[k], lo, hi); err != nil {
						b.Fatal(err)
					}
				}
				for _, p := range hs[1:] {
					hs[0].merge(p)
				}
				if _, err := hs[0].emit(out(b), nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
		})
	}
}

// BenchmarkReplayAggregateFewKeys is the engine at 1k keys as a replay runs it: 400k skewed
// rows grouped by one string key over a 6h range of sliding 10m/5m windows, each 8k-row batch
// written to Parquet and read back (the key then has a dictionary), added whole and emitted.
// no-dictionary adds the same batches without it (copied row by row, as a PLAIN key reads).
func BenchmarkReplayAggregateFewKeys(b *testing.B) {
	const rows = 400_000
	const span = int64(6 * time.Hour / time.Microsecond)
	a := testAggBy(b, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute}, "dev")
	base := int64(1_700_000_000_000_000) - span/10
	lo, hi := alignStart(base-span, a.window), alignStart(base+2*span, a.window)
	var dict, plain []*source
	for _, bt := range skewedBatches(b, 1, rows, 8192, 1000, span) {
		data, _, err := pq.EncodeFile(hashAggInput, []*pq.Batch{bt}, pq.WriteOptions{})
		if err != nil {
			b.Fatal(err)
		}
		read, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), hashAggInput)
		if err != nil {
			b.Fatal(err)
		}
		for _, rb := range read {
			s, err := a.source(rb)
			if err != nil {
				b.Fatal(err)
			}
			p, err := a.source(rb.Filter(nil))
			if err != nil {
				b.Fatal(err)
			}
			dict, plain = append(dict, s), append(plain, p)
		}
	}
	for _, tc := range []struct {
		name string
		srcs []*source
	}{{"dictionary", dict}, {"no-dictionary", plain}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			start := pqtest.CPUClock() // the process's CPU: the machine is shared, wall is not the measure
			for b.Loop() {
				h := newHashAgg(a)
				for _, s := range tc.srcs {
					if err := h.add(s, allRows(s.b.Len()), lo, hi); err != nil {
						b.Fatal(err)
					}
				}
				out, err := pq.NewBatch(a.gold)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.emit(out, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			b.ReportMetric(float64(pqtest.CPUClock()-start)/float64(b.N*rows), "cpu-ns/row")
		})
	}
}

// BenchmarkHashAggMerge folds one partial table into another as a two-worker replay does at
// 100k keys: each holds the groups of half of 400k skewed rows in sliding 10m/5m windows over
// 24h (random halves, so the tables share many groups: more work per group than a replay's
// workers, which read different files, have). Only the merge is timed.
func BenchmarkHashAggMerge(b *testing.B) {
	const rows = 400_000
	const span = int64(24 * time.Hour / time.Microsecond)
	a := testAgg(b, spec.Window{Size: 10 * time.Minute, Slide: 5 * time.Minute})
	batches := skewedBatches(b, 3, rows, 8192, 100_000, span)
	lo, hi := int64(math.MinInt64/2), int64(math.MaxInt64/2)
	build := func(seed maphash.Seed, bs []*pq.Batch) *hashAgg {
		h := newHashAggSeed(a, seed)
		for _, bt := range bs {
			s, err := a.source(bt)
			if err != nil {
				b.Fatal(err)
			}
			sel := allRows(bt.Len())
			if err := h.add(s, sel, lo, hi); err != nil {
				b.Fatal(err)
			}
		}
		return h
	}
	seed := maphash.MakeSeed()
	b.ReportAllocs()
	var groups int
	for b.Loop() {
		b.StopTimer()
		h0, h1 := build(seed, batches[:len(batches)/2]), build(seed, batches[len(batches)/2:])
		b.StartTimer()
		h0.merge(h1)
		groups = len(h0.gkey)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups), "ns/group")
}
