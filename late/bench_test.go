package late

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

const benchYAML = `
lake: mem
schema:
  - {name: event_id,   type: string, required: true}
  - {name: amount,     type: double}
  - {name: event_time, type: timestamp, required: true}
stream:
  watermark: 10s
gold:
  - name: g1
    window: {type: tumbling, size: 1s}
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
`

// BenchmarkMergeLate10kInto1M merges 10k late rows (spread over the newest 20k windows, where
// late rows land) into a gold table of 1M windows in 20 files: the bytes rewritten are those
// of the touched files, not the table's.
func BenchmarkMergeLate10kInto1M(b *testing.B) { benchMergeLate(b, nil) }

// benchMergeLate is BenchmarkMergeLate10kInto1M with gold created with props.
func benchMergeLate(b *testing.B, props map[string]string) {
	const windows, files, late = 1_000_000, 20, 10_000
	ctx := context.Background()
	cfg, err := config.Parse([]byte(benchYAML), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	lake := mem.New()
	ts := func(n string) txlog.StructField {
		return txlog.StructField{Name: n, Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: true}
	}
	long := func(n string) txlog.StructField {
		return txlog.StructField{Name: n, Type: txlog.PrimitiveType{Name: txlog.TypeLong}}
	}
	goldSchema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "window", Nullable: true, Type: &txlog.StructType{Fields: []txlog.StructField{ts("start"), ts("end")}}},
		long("n"), {Name: "total", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true}, long("late_rows")}}
	gt := table.Open(objstore.WithPrefix(lake, cfg.Gold[0].Table), table.Options{})
	if _, err := gt.Create(ctx, goldSchema, nil, props); err != nil {
		b.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for f := range files {
		gb, _ := pq.NewBatch(goldSchema)
		for w := f * windows / files; w < (f+1)*windows/files; w++ {
			gb.Columns[0].AppendStruct()
			gb.Columns[0].Children[0].AppendInt64(t0 + int64(w)*1e6)
			gb.Columns[0].Children[1].AppendInt64(t0 + int64(w+1)*1e6)
			gb.Columns[1].AppendInt64(1)
			gb.Columns[2].AppendFloat64(1)
			gb.Columns[3].AppendInt64(0)
		}
		if _, err := gt.Append(ctx, []*pq.Batch{gb}, table.AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	silverSchema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "event_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
		{Name: "amount", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true}, ts("event_time")}}
	qschema := silver.QuarantineSchema(silverSchema)
	qt := table.Open(objstore.WithPrefix(lake, cfg.Gold[0].Quarantine), table.Options{})
	if _, err := qt.Create(ctx, qschema, nil, nil); err != nil {
		b.Fatal(err)
	}
	qb, _ := pq.NewBatch(qschema)
	rng := rand.New(rand.NewPCG(1, 2))
	wmUs := t0 + windows*1e6
	for i := range late {
		qb.Columns[0].AppendString(fmt.Sprint("e", i))
		qb.Columns[1].AppendFloat64(2)
		qb.Columns[2].AppendInt64(wmUs - 1 - rng.Int64N(20_000*1e6))
		qb.Columns[3].AppendInt64(wmUs)
		qb.Columns[4].AppendInt64(7)
		qb.Columns[5].AppendString("q")
	}
	if _, err := qt.Append(ctx, []*pq.Batch{qb}, table.AppendOptions{}); err != nil {
		b.Fatal(err)
	}
	snap, err := gt.Log().Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tableBytes := snap.TotalSize()
	var rewritten, merged int64
	i := 0
	b.ReportAllocs()
	cpu := cpuSeconds()
	defer func() { b.ReportMetric((cpuSeconds()-cpu)/float64(i), "cpu-s/op") }()
	for b.Loop() {
		// A new query id is a new txn appId: the same quarantine is merged again.
		b.StopTimer()
		i++
		if err := objstore.PutBytes(ctx, lake, cfg.Stream.Checkpoint+"/metadata", fmt.Appendf(nil, `{"id":"q%d"}`, i)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := MergeLate(ctx, Options{Lake: lake, Query: specs.Query(cfg)})
		if err != nil {
			b.Fatal(err)
		}
		g := rep.Gold[0]
		if g.Gold == nil || g.LateRows != late {
			b.Fatalf("merged %d rows: %+v", g.LateRows, g)
		}
		rewritten += g.Gold.BytesRemoved
		merged += g.LateRows
	}
	b.ReportMetric(float64(rewritten)/float64(i)/float64(tableBytes), "rewritten/table")
	b.ReportMetric(float64(merged)/b.Elapsed().Seconds(), "lateRows/s")
}

// BenchmarkCollector aggregates 1M (row, window) pairs into 100k groups (count, sum, avg):
// the cost per pair stays flat however many flushes the input takes.
func BenchmarkCollector(b *testing.B) {
	cfg, err := config.Parse([]byte(benchYAML), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	silver := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "event_id", Type: txlog.PrimitiveType{Name: txlog.TypeString}},
		{Name: "amount", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
		{Name: "event_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: true}}}
	goldSchema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "window", Nullable: true, Type: &txlog.StructType{Fields: []txlog.StructField{
			{Name: "start", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}}, {Name: "end", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}}}}},
		{Name: "n", Type: txlog.PrimitiveType{Name: txlog.TypeLong}}, {Name: "total", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
		{Name: "late_rows", Type: txlog.PrimitiveType{Name: txlog.TypeLong}}}}
	q := specs.Query(cfg)
	a, err := resolve(&q, &q.Gold[0], silver, goldSchema)
	if err != nil {
		b.Fatal(err)
	}
	const pairs, groups = 1_000_000, 100_000
	in, _ := pq.NewBatch(silver)
	for i := range pairs {
		in.Columns[0].AppendString("e")
		in.Columns[1].AppendFloat64(float64(i % 7))
		in.Columns[2].AppendInt64(int64(i%groups) * 1e6)
	}
	s, err := a.source(in)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := newCollector(a)
		if err != nil {
			b.Fatal(err)
		}
		for i := range pairs {
			t := s.ev.Int64[i]
			if err := c.add(s, i, gold.Window{Start: t, End: t + 1e6}); err != nil {
				b.Fatal(err)
			}
		}
		gs, err := c.groups()
		if err != nil || len(gs) != groups {
			b.Fatalf("%d groups, %v", len(gs), err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pairs, "ns/pair")
}

// cpuSeconds is the CPU time (user and system) the process has used so far: what the change
// feed's cost is judged by, beside wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkChangeFeedCost measures merge-late and replay with gold's change data feed off and
// on, in the same run (-count N alternates them): the feed may cost at most 10% more CPU
// (cpu-s/op, the process's user+system time per run). mergeLate is
// BenchmarkMergeLate10kInto1M (10k late rows into 1M windows: ~10k update pairs); replay
// recomputes a third of a 20k-event pipeline's range, right (nothing changes: the common
// scheduled replay) and after that range was deleted from gold (every window an insert).
func BenchmarkChangeFeedCost(b *testing.B) {
	for _, feed := range []string{"off", "on"} {
		props := map[string]string{"delta.enableChangeDataFeed": "false"}
		if feed == "on" {
			props["delta.enableChangeDataFeed"] = "true"
		}
		b.Run("mergeLate/feed="+feed, func(b *testing.B) { benchMergeLate(b, props) })
	}
	for _, damaged := range []bool{false, true} {
		for _, feed := range []string{"off", "on"} {
			b.Run(fmt.Sprintf("replay/damaged=%v/feed=%s", damaged, feed), func(b *testing.B) { benchReplay(b, feed == "on", damaged) })
		}
	}
}

func benchReplay(b *testing.B, feed, damaged bool) {
	ctx := context.Background()
	lake, cfg := mem.New(), testConfig(b, "")
	for i := range cfg.Gold {
		cfg.Gold[i].ChangeDataFeed = &feed // as change_data_feed: false/true in the config
	}
	land(b, lake, 31, 20_000, 8)
	ingest(b, lake, cfg)
	runStream(b, lake, cfg)
	if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
		b.Fatal(err)
	}
	r := replayRange(silverTimes(b, lake), 0.3, 0.6)
	i := 0
	cpu := 0.0
	defer func() { b.ReportMetric(cpu/float64(i), "cpu-s/op") }()
	for b.Loop() {
		b.StopTimer()
		if damaged {
			damage(b, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
			damage(b, lake, "gold/s10", r.From.UnixMicro(), r.To.UnixMicro())
		}
		i++
		c := cpuSeconds()
		b.StartTimer()
		rep, err := Replay(ctx, opts(lake, cfg), r)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuSeconds() - c
		for _, g := range rep.Gold {
			if (g.Gold != nil) != damaged {
				b.Fatalf("%s: damaged %v, commit %+v", g.Name, damaged, g.Gold)
			}
		}
		b.StartTimer()
	}
}
