package late

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/join"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	tsource "github.com/medallion-lake/medallion/table/source"
	"github.com/medallion-lake/medallion/txlog"
)

// This file simulates the join host (stream/ hosts the real one): each side's micro-batch is
// appended to its silver table, join.Operator runs it, the output rows go to the joined table
// and the late rows to the join quarantine, each with txn(query id, batch id), and the
// checkpoint gets offsets/N and commits/N with the batch's eviction watermark. merge-late
// then runs on the tables exactly as the stream would leave them.

// jrow is one input row of either side: id (rows with equal fields are duplicates), the join
// key (nil: null) and the event time in µs.
type jrow struct {
	id  string
	ad  *string
	t   int64
	arr int64 // arrival order, for the generator
	// x is the value of the wide left schema's further columns (nil: all null), used by the
	// tests of row identity across column kinds.
	x *xvals
}

// xvals is one value of each further column of wideLeftSchema, in its order.
type xvals struct {
	amount int64 // decimal(10,2), unscaled
	tag    string
	score  float64
	ratio  float32
	day    int32 // date: days since the epoch
	seen   int64 // timestamp_ntz µs
	blob   string
	flag   bool
	labels []string
}

func ad(s string) *string { return &s }

var (
	// wideLeftSchema is leftSchema with a column of every kind silver can hold after the
	// three the simulation joins on.
	wideLeftSchema = &txlog.StructType{Fields: append(slices.Clone(leftSchema.Fields),
		txlog.StructField{Name: "amount", Type: txlog.DecimalType{Precision: 10, Scale: 2}, Nullable: true},
		txlog.StructField{Name: "meta", Type: &txlog.StructType{Fields: []txlog.StructField{
			{Name: "tag", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}}}, Nullable: true},
		txlog.StructField{Name: "score", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
		txlog.StructField{Name: "ratio", Type: txlog.PrimitiveType{Name: txlog.TypeFloat}, Nullable: true},
		txlog.StructField{Name: "day", Type: txlog.PrimitiveType{Name: txlog.TypeDate}, Nullable: true},
		txlog.StructField{Name: "seen", Type: txlog.PrimitiveType{Name: txlog.TypeTimestampNTZ}, Nullable: true},
		txlog.StructField{Name: "blob", Type: txlog.PrimitiveType{Name: txlog.TypeBinary}, Nullable: true},
		txlog.StructField{Name: "flag", Type: txlog.PrimitiveType{Name: txlog.TypeBoolean}, Nullable: true},
		txlog.StructField{Name: "labels", Type: txlog.ArrayType{ElementType: txlog.PrimitiveType{Name: txlog.TypeString}, ContainsNull: true}, Nullable: true},
	)}
	leftSchema = &txlog.StructType{Fields: []txlog.StructField{
		{Name: "imp_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: false},
		{Name: "ad", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "event_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: false},
	}}
	rightSchema = &txlog.StructType{Fields: []txlog.StructField{
		{Name: "click_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: false},
		{Name: "ad", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "click_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: false},
	}}
)

// joinSim is the simulated join host over an in-memory lake.
type joinSim struct {
	t       testing.TB
	ctx     context.Context
	lake    objstore.Bucket
	j       spec.Join
	schema  [2]*txlog.StructType // of the left and right silver tables
	op      *join.Operator
	wm      *join.Watermarks
	queryID string
	ckpt    *checkpoint.Dir
	batch   int64
	rows    [2][]jrow // every row appended to each silver table, in order
	payload [2][]jrow // operator payloads: index into this
	qschema *txlog.StructType
	oschema *txlog.StructType
	// lastEvict is the eviction watermark of the last batch run (W_last).
	lastEvict int64
	// silverV is the last silver version of each side the join has read (-1: none).
	silverV [2]int64
	// gold simulates the stream's aggregation over the join (j.Gold[0], when set): a
	// tumbling count per left key over the left event time, append mode.
	gold *goldSim
	// oneSourceLine writes offsets/N with Spark's single-source layout (no silver versions)
	// instead of one line per side.
	oneSourceLine bool
	// writers are the tables the simulated stream writes, kept open from batch to batch as the
	// stream keeps them: each append refreshes the snapshot from the commits since the last
	// one (the merges' among them) instead of reading the log from its last checkpoint again.
	writers map[string]*table.Table
}

func simJoin(typ string, lower, upper, leftDelay, rightDelay time.Duration) spec.Join {
	return spec.Join{Name: "ic", Type: typ,
		Left:  spec.JoinInput{Source: "imps", Silver: "silver/imps", EventTime: "event_time", Watermark: spec.Watermark{Delay: leftDelay, Set: true}},
		Right: spec.JoinInput{Source: "clicks", Silver: "silver/clicks", EventTime: "click_time", Watermark: spec.Watermark{Delay: rightDelay, Set: true}},
		On:    []spec.JoinKey{{Left: "ad", Right: "ad"}},
		Lower: lower, Upper: upper,
		Table: "silver/ic", Quarantine: "silver/late_ic", Checkpoint: "_checkpoints/ic"}
}

func newJoinSim(t testing.TB, lake objstore.Bucket, j spec.Join) *joinSim {
	t.Helper()
	return newJoinSimSchemas(t, lake, j, leftSchema, rightSchema)
}

// newJoinSimSchemas is newJoinSim over other silver schemas: each starts with the three
// columns of leftSchema (rightSchema), the columns appendRow writes.
func newJoinSimSchemas(t testing.TB, lake objstore.Bucket, j spec.Join, leftSchema, rightSchema *txlog.StructType) *joinSim {
	t.Helper()
	ctx := context.Background()
	p, err := newJoinPlan(&j)
	if err != nil {
		t.Fatal(err)
	}
	op, err := join.New(p.spec)
	if err != nil {
		t.Fatal(err)
	}
	wm, err := join.NewWatermarks(&p.spec, j.Left.Watermark.Delay.Milliseconds(), j.Right.Watermark.Delay.Milliseconds())
	if err != nil {
		t.Fatal(err)
	}
	s := &joinSim{t: t, ctx: ctx, lake: lake, j: j, schema: [2]*txlog.StructType{leftSchema, rightSchema}, op: op, wm: wm, silverV: [2]int64{-1, -1}}
	s.ckpt = checkpoint.Open(objstore.WithPrefix(lake, j.Checkpoint))
	if s.queryID, err = s.ckpt.QueryID(ctx); err != nil {
		t.Fatal(err)
	}
	oc, err := join.Output(p.typ, leftSchema, rightSchema, j.Right.Source)
	if err != nil {
		t.Fatal(err)
	}
	s.oschema = oc.Schema
	if s.qschema, err = join.QuarantineSchema(leftSchema, rightSchema, j.Right.Source); err != nil {
		t.Fatal(err)
	}
	for path, schema := range map[string]*txlog.StructType{j.Left.Silver: leftSchema, j.Right.Silver: rightSchema, j.Table: s.oschema, j.Quarantine: s.qschema} {
		var props map[string]string
		if path == j.Table {
			props = spec.CreateProps(nil, j.NoChangeDataFeed) // as the join query creates it
		}
		if _, err := s.open(path).Create(ctx, schema, nil, props); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func (s *joinSim) open(p string) *table.Table {
	if tbl, ok := s.writers[p]; ok {
		return tbl
	}
	tbl := table.Open(objstore.WithPrefix(s.lake, p), table.Options{})
	if s.writers == nil {
		s.writers = map[string]*table.Table{}
	}
	s.writers[p] = tbl
	return tbl
}

// read opens table p afresh, for the checks: what they read must not depend on the snapshot
// the simulated stream's writers kept.
func (s *joinSim) read(p string) *table.Table {
	return table.Open(objstore.WithPrefix(s.lake, p), table.Options{})
}

// appendRow writes r's columns onto cols (id, ad, time).
func appendRow(cols []*pq.Column, r *jrow) {
	cols[0].AppendString(r.id)
	if r.ad == nil {
		cols[1].AppendNull()
	} else {
		cols[1].AppendString(*r.ad)
	}
	cols[2].AppendInt64(r.t)
	if len(cols) > 3 {
		appendX(cols[3:], r.x)
	}
}

// appendX writes x onto the further columns of wideLeftSchema.
func appendX(cols []*pq.Column, x *xvals) {
	if x == nil {
		appendNulls(cols)
		return
	}
	cols[0].AppendDecimal(pq.Decimal128{Hi: x.amount >> 63, Lo: uint64(x.amount)})
	cols[1].Children[0].AppendString(x.tag)
	cols[1].AppendStruct()
	cols[2].AppendFloat64(x.score)
	cols[3].AppendFloat32(x.ratio)
	cols[4].AppendInt32(x.day)
	cols[5].AppendInt64(x.seen)
	cols[6].AppendBytes([]byte(x.blob))
	cols[7].AppendBool(x.flag)
	for _, l := range x.labels {
		cols[8].Children[0].AppendString(l)
	}
	cols[8].AppendList()
}

// readX reads row i of the further columns of wideLeftSchema (nil: the amount is null, as
// appendX writes a nil x).
func readX(cols []*pq.Column, i int) *xvals {
	if cols[0].IsNull(i) {
		return nil
	}
	d := cols[0].Decimal[i]
	x := &xvals{amount: int64(d.Lo), tag: cols[1].Children[0].StringAt(i), score: cols[2].Float64[i],
		ratio: cols[3].Float32[i], day: cols[4].Int32[i], seen: cols[5].Int64[i], blob: string(cols[6].BytesAt(i)), flag: cols[7].Bool[i]}
	s, e := cols[8].ListRange(i)
	for j := s; j < e; j++ {
		x.labels = append(x.labels, cols[8].Children[0].StringAt(j))
	}
	if d.Hi != int64(d.Lo)>>63 {
		x.amount = math.MinInt64 // out of the test's range: shows as a difference
	}
	return x
}

func appendNulls(cols []*pq.Column) {
	for _, c := range cols {
		c.AppendNull()
	}
}

// step runs one micro-batch (and the no-data batch after it when Spark would run one).
func (s *joinSim) step(left, right []jrow) {
	t := s.t
	t.Helper()
	var in [2]*join.Input
	for side, rows := range [2][]jrow{left, right} {
		if len(rows) == 0 {
			continue
		}
		schema := s.schema[side]
		path := s.j.Left.Silver
		if side == 1 {
			path = s.j.Right.Silver
		}
		b, _ := pq.NewBatch(schema)
		in[side] = &join.Input{KeyNull: make([]bool, len(rows))}
		for i := range rows {
			r := &rows[i]
			appendRow(b.Columns, r)
			in[side].EventTime = append(in[side].EventTime, r.t)
			if r.ad == nil {
				in[side].KeyNull[i] = true
				in[side].Keys.Append(nil)
			} else {
				in[side].Keys.Append(pq.AppendKeyString(nil, *r.ad))
			}
			in[side].Rows.Append(binary.AppendUvarint(nil, uint64(len(s.payload[side]))))
			s.payload[side] = append(s.payload[side], *r)
		}
		res, err := s.open(path).Append(s.ctx, []*pq.Batch{b}, table.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.silverV[side] = res.Version
		s.rows[side] = append(s.rows[side], rows...)
		s.wm.Observe(join.Side(side), in[side].EventTime)
	}
	s.run(in[0], in[1])
	next := s.wm.EndBatch()
	if sp := s.op.Spec(); sp.ShouldRunNoDataBatch(next, s.lastEvict) {
		s.run(nil, nil)
		s.wm.EndBatch()
	}
}

// run processes one batch with the current watermarks and writes its output, late rows and
// checkpoint files.
func (s *joinSim) run(left, right *join.Input) {
	t := s.t
	late, evict := s.wm.Batch()
	n := s.batch
	if s.oneSourceLine {
		if _, err := s.ckpt.WriteOffsets(s.ctx, n, &checkpoint.Offsets{BatchWatermarkMs: evict, BatchTimestampMs: n}); err != nil {
			t.Fatal(err)
		}
	} else {
		// Spark's layout for two sources: one end offset per line, left then right.
		data := fmt.Sprintf("v1\n{\"batchWatermarkMs\":%d,\"batchTimestampMs\":%d,\"conf\":{}}", evict, n)
		for _, v := range s.silverV {
			if v < 0 {
				data += "\n-"
			} else {
				data += "\n" + tsource.Offset{SourceVersion: 1, ReservoirID: "x", ReservoirVersion: v, Index: 0}.String()
			}
		}
		if err := objstore.PutBytesIfAbsent(s.ctx, objstore.WithPrefix(s.lake, s.j.Checkpoint), checkpoint.OffsetsKey(n), []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := s.op.ProcessBatch(left, right, late, evict)
	if err != nil {
		t.Fatal(err)
	}
	txn := &table.AppTxn{AppID: s.queryID, Version: n}
	out, _ := pq.NewBatch(s.oschema)
	nl := len(s.schema[0].Fields)
	for _, r := range res.Rows {
		if r.Kind.HasLeft() {
			id, _ := binary.Uvarint(r.Left)
			appendRow(out.Columns[:nl], &s.payload[0][id])
		} else {
			appendNulls(out.Columns[:nl])
		}
		if len(out.Columns) > nl {
			if r.Kind.HasRight() {
				id, _ := binary.Uvarint(r.Right)
				appendRow(out.Columns[nl:], &s.payload[1][id])
			} else {
				appendNulls(out.Columns[nl:])
			}
		}
	}
	if out.Len() > 0 {
		if _, err := s.open(s.j.Table).Append(s.ctx, []*pq.Batch{out}, table.AppendOptions{Txn: txn}); err != nil {
			t.Fatal(err)
		}
	}
	q, _ := pq.NewBatch(s.qschema)
	nr := len(s.schema[1].Fields)
	for side, idx := range res.Late {
		in := left
		if side == 1 {
			in = right
		}
		for _, i := range idx {
			id, _ := binary.Uvarint(in.Rows.Value(int(i)))
			r := &s.payload[side][id]
			if side == 0 {
				appendRow(q.Columns[:nl], r)
				appendNulls(q.Columns[nl : nl+nr])
				q.Columns[nl+nr].AppendString("left")
			} else {
				appendNulls(q.Columns[:nl])
				appendRow(q.Columns[nl:nl+nr], r)
				q.Columns[nl+nr].AppendString("right")
			}
			q.Column(silver.ColLateWatermark).AppendInt64(late * 1000)
			q.Column(silver.ColBatchID).AppendInt64(n)
			q.Column(silver.ColQueryID).AppendString(s.queryID)
		}
	}
	if q.Len() > 0 {
		if _, err := s.open(s.j.Quarantine).Append(s.ctx, []*pq.Batch{q}, table.AppendOptions{Txn: txn}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.ckpt.WriteCommit(s.ctx, n, evict); err != nil {
		t.Fatal(err)
	}
	if s.gold != nil {
		s.gold.batch(s, res, late, evict)
	}
	s.lastEvict = evict
	s.batch++
}

// goldSim is the stream's windowed count over the joined rows (left key, left event time):
// a row whose window the aggregation's late watermark (the join's output watermark of the
// previous batch) has closed goes to the aggregation's quarantine, the others to state; a
// window is appended once the output watermark of the batch passes its end.
type goldSim struct {
	size    int64 // µs
	schema  *txlog.StructType
	qschema *txlog.StructType
	state   map[[2]string]int64 // (window start, key) -> count
}

func (s *joinSim) withGold(size time.Duration) {
	s.t.Helper()
	s.j.Gold = []spec.Aggregation{{Name: "n_per_ad", Table: "gold/n_per_ad", Quarantine: "silver/late_n_per_ad",
		Window: spec.Window{Size: size, Slide: size}, GroupBy: []string{"ad"}, Aggregates: []spec.Aggregate{{Fn: "count", As: "n"}},
		TimeColumn: "event_time"}}
	g := &goldSim{size: size.Microseconds(), state: map[[2]string]int64{}}
	g.schema = &txlog.StructType{Fields: []txlog.StructField{gold.WindowField(),
		{Name: "ad", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}}}
	g.schema.Fields = append(g.schema.Fields, gold.AggregateFields(gold.Count, "n", nil, nil)...)
	g.schema.Fields = append(g.schema.Fields, gold.LateRowsField())
	g.qschema = silver.QuarantineSchema(s.oschema)
	for path, schema := range map[string]*txlog.StructType{"gold/n_per_ad": g.schema, "silver/late_n_per_ad": g.qschema} {
		if _, err := s.open(path).Create(s.ctx, schema, nil, spec.CreateProps(nil, path != "gold/n_per_ad")); err != nil {
			s.t.Fatal(err)
		}
	}
	s.gold = g
}

func (g *goldSim) batch(s *joinSim, res *join.Result, late, evict int64) {
	t := s.t
	p, _ := newJoinPlan(&s.j)
	aggLate, aggEvict := p.spec.OutputWatermark(late)*1000, p.spec.OutputWatermark(evict)*1000
	q, _ := pq.NewBatch(g.qschema)
	nl := len(s.schema[0].Fields)
	for _, r := range res.Rows {
		if !r.Kind.HasLeft() {
			continue // no left event time: no window
		}
		id, _ := binary.Uvarint(r.Left)
		l := &s.payload[0][id]
		start := l.t - ((l.t%g.size)+g.size)%g.size
		if start+g.size <= aggLate {
			appendRow(q.Columns[:nl], l)
			if r.Kind.HasRight() && len(q.Columns) > nl+3 {
				id, _ := binary.Uvarint(r.Right)
				appendRow(q.Columns[nl:], &s.payload[1][id])
			} else {
				appendNulls(q.Columns[nl : len(q.Columns)-3])
			}
			q.Column(silver.ColLateWatermark).AppendInt64(aggLate)
			q.Column(silver.ColBatchID).AppendInt64(s.batch)
			q.Column(silver.ColQueryID).AppendString(s.queryID)
			continue
		}
		g.state[[2]string{fmt.Sprint(start), keyOf(l.ad)}]++
	}
	txn := &table.AppTxn{AppID: s.queryID, Version: s.batch}
	if q.Len() > 0 {
		if _, err := s.open("silver/late_n_per_ad").Append(s.ctx, []*pq.Batch{q}, table.AppendOptions{Txn: txn}); err != nil {
			t.Fatal(err)
		}
	}
	out, _ := pq.NewBatch(g.schema)
	var keys [][2]string
	for k := range g.state {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	for _, k := range keys {
		var start int64
		fmt.Sscan(k[0], &start)
		if start+g.size > aggEvict {
			continue
		}
		w := out.Columns[0]
		w.AppendStruct()
		w.Children[0].AppendInt64(start)
		w.Children[1].AppendInt64(start + g.size)
		if k[1] == "<null>" {
			out.Columns[1].AppendNull()
		} else {
			out.Columns[1].AppendString(k[1])
		}
		out.Columns[2].AppendInt64(g.state[k])
		out.Columns[3].AppendInt64(0)
		delete(g.state, k)
	}
	if out.Len() > 0 {
		if _, err := s.open("gold/n_per_ad").Append(s.ctx, []*pq.Batch{out}, table.AppendOptions{Txn: txn}); err != nil {
			t.Fatal(err)
		}
	}
}

func keyOf(k *string) string {
	if k == nil {
		return "<null>"
	}
	return *k
}

// checkE asserts invariant E over the joined table: gold holds, for every window the
// aggregation has emitted (end <= the join's output watermark of the last batch), the count
// per left key of the oracle's joined rows, computed here from the oracle's rows.
func (s *joinSim) checkE(what string) {
	t := s.t
	t.Helper()
	p, _ := newJoinPlan(&s.j)
	wm := p.spec.OutputWatermark(s.lastEvict) * 1000
	size := s.gold.size
	want := map[[2]string]int64{}
	for _, row := range s.oracle(s.lastEvict) {
		left := row[:strings.IndexByte(row, '|')]
		if left == "-" {
			continue
		}
		var tt int64
		fmt.Sscan(left[strings.LastIndexByte(left, '@')+1:], &tt)
		k := left[strings.IndexByte(left, '/')+1 : strings.LastIndexByte(left, '@')]
		if k == "null" {
			k = "<null>"
		}
		start := tt - ((tt%size)+size)%size
		if start+size <= wm {
			want[[2]string{fmt.Sprint(start), k}]++
		}
	}
	got := map[[2]string]int64{}
	for b, err := range s.read("gold/n_per_ad").Scan(s.ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			k := "<null>"
			if !b.Columns[1].IsNull(i) {
				k = b.Columns[1].StringAt(i)
			}
			key := [2]string{fmt.Sprint(b.Columns[0].Children[0].Int64[i]), k}
			if _, dup := got[key]; dup {
				t.Fatalf("%s: gold has two rows for window %v", what, key)
			}
			got[key] = b.Columns[2].Int64[i]
		}
	}
	var bad []string
	for k, n := range want {
		if got[k] != n {
			bad = append(bad, fmt.Sprintf("window %s key %s: gold %d, batch %d", k[0], k[1], got[k], n))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("window %s key %s: gold %d, batch none", k[0], k[1], n))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Fatalf("%s: invariant E over the joined table broken at output watermark %d:\n%s", what, wm, strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}

// merge runs merge-late for the join.
func (s *joinSim) merge() JoinMergeReport {
	s.t.Helper()
	rep, err := MergeLateJoin(s.ctx, Options{Lake: s.lake}, s.j)
	if err != nil {
		s.t.Fatal(err)
	}
	return rep
}

// fmtRow renders one side of a joined row ("-": null side).
func fmtRow(r *jrow) string {
	if r == nil {
		return "-"
	}
	k := "null"
	if r.ad != nil {
		k = *r.ad
	}
	if x := r.x; x != nil {
		// Floats by their bits: -0 and each NaN payload are values of their own.
		return fmt.Sprintf("%s/%s@%d{%d %q %x %x %d %d %q %t %q}", r.id, k, r.t, x.amount, x.tag,
			math.Float64bits(x.score), math.Float32bits(x.ratio), x.day, x.seen, x.blob, x.flag, x.labels)
	}
	return fmt.Sprintf("%s/%s@%d", r.id, k, r.t)
}

// joinedRows reads the joined table as sorted "left|right" strings.
func (s *joinSim) joinedRows() []string {
	s.t.Helper()
	var out []string
	nl := len(s.schema[0].Fields)
	for b, err := range s.read(s.j.Table).Scan(s.ctx, table.ScanOptions{}) {
		if err != nil {
			s.t.Fatal(err)
		}
		for i := range b.Len() {
			side := func(cols []*pq.Column) *jrow {
				if len(cols) == 0 || cols[2].IsNull(i) {
					return nil
				}
				r := &jrow{id: cols[0].StringAt(i), t: cols[2].Int64[i]}
				if !cols[1].IsNull(i) {
					r.ad = ad(cols[1].StringAt(i))
				}
				if len(cols) > 3 {
					r.x = readX(cols[3:], i)
				}
				return r
			}
			l, r := side(b.Columns[:nl]), side(b.Columns[nl:])
			out = append(out, fmtRow(l)+"|"+fmtRow(r))
		}
	}
	sort.Strings(out)
	return out
}

// oracle is the batch join of every silver row, written plainly with nested loops (spec §9.1
// and §9.2): null keys never match; a null-extended row only for an unmatched row whose match
// window the watermark wMs has closed (left: t <= W - upper - 1ms, right: t <= W + lower -
// 1ms); left_semi gives each matched left row once per copy.
func (s *joinSim) oracle(wMs int64) []string {
	lower, upper := s.j.Lower.Microseconds(), s.j.Upper.Microseconds()
	L, R := s.rows[0], s.rows[1]
	match := func(l, r *jrow) bool {
		return l.ad != nil && r.ad != nil && *l.ad == *r.ad && r.t >= l.t+lower && r.t <= l.t+upper
	}
	typ := s.j.Type
	var out []string
	rMatched := make([]bool, len(R))
	for i := range L {
		l := &L[i]
		found := false
		for k := range R {
			if match(l, &R[k]) {
				found, rMatched[k] = true, true
				if typ != "left_semi" {
					out = append(out, fmtRow(l)+"|"+fmtRow(&R[k]))
				}
			}
		}
		switch {
		case typ == "left_semi" && found:
			out = append(out, fmtRow(l)+"|-")
		case !found && (typ == "left_outer" || typ == "full_outer") && l.t <= (wMs-upper/1000-1)*1000:
			out = append(out, fmtRow(l)+"|-")
		}
	}
	if typ == "right_outer" || typ == "full_outer" {
		for k := range R {
			if !rMatched[k] && R[k].t <= (wMs+lower/1000-1)*1000 {
				out = append(out, "-|"+fmtRow(&R[k]))
			}
		}
	}
	sort.Strings(out)
	return out
}

// checkJ asserts invariant J: the joined table equals the oracle at the last batch's
// eviction watermark.
func (s *joinSim) checkJ(what string) {
	s.t.Helper()
	got, want := s.joinedRows(), s.oracle(s.lastEvict)
	if !slices.Equal(got, want) {
		s.t.Fatalf("%s: invariant J broken at W=%d:\n%s", what, s.lastEvict, diffLines(got, want))
	}
}

// diffLines lists the rows only in got (+) and only in want (-), counting duplicates.
func diffLines(got, want []string) string {
	n := map[string]int{}
	for _, g := range got {
		n[g]++
	}
	for _, w := range want {
		n[w]--
	}
	var b strings.Builder
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	shown := 0
	for _, k := range keys {
		if d := n[k]; d != 0 && shown < 30 {
			fmt.Fprintf(&b, "  %+d %s\n", d, k)
			shown++
		}
	}
	return b.String()
}
