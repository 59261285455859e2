package late

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// appendBronzeAt commits events of device "d" (event_type "x") at the given offsets from
// base as one bronze version.
func appendBronzeAt(t testing.TB, lake objstore.Bucket, cfg *config.Pipeline, base time.Time, offsets ...time.Duration) {
	t.Helper()
	ctx := context.Background()
	schema := bronze.BronzeSchema(declared(cfg))
	tbl := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{})
	if _, err := tbl.Log().Snapshot(ctx); err != nil {
		if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := pq.NewBatch(schema)
	for _, off := range offsets {
		et := base.Add(off)
		vals := map[string]any{"event_id": fmt.Sprint("e", et.UnixMicro()), "event_type": "x", "device_id": "d", "amount": 1.0,
			"qty": int64(1), "event_time": et, bronze.ColIngestTime: et, bronze.ColSourceFile: "test", bronze.ColSourceOffset: int64(0)}
		for ci, f := range schema.Fields {
			if err := b.Columns[ci].AppendValue(vals[f.Name]); err != nil {
				t.Fatalf("%s: %v", f.Name, err)
			}
		}
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

const deferYAML = `  - name: sess
    window: {type: session, gap: 10s}
    group_by: [event_type, device_id]
    aggregates:
      - {fn: count, as: n}
      - {fn: sum, column: amount, as: total}
`

// TestMergeLateDefersRowsOfOpenSessions: a late row whose batch session reaches into a session
// the stream still holds cannot be placed yet; merge-late leaves its txn behind and places the
// row once the stream has emitted that session.
func TestMergeLateDefersRowsOfOpenSessions(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := testConfig(t, deferYAML)
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	s := time.Second
	// Batch 0: sessions [0,10) and [94,110); the watermark becomes 95 s. A no-data batch emits
	// [0,10).
	appendBronzeAt(t, lake, cfg, base, 0, 94*s, 100*s)
	runStream(t, lake, cfg)
	// 85 s is late (its session [85,95) ends at the late watermark) but bridges into
	// [94,110), which the stream still holds.
	appendBronzeAt(t, lake, cfg, base, 85*s)
	runStream(t, lake, cfg)
	rep, err := MergeLate(ctx, opts(lake, cfg))
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Gold[2]
	if g.LateRows != 1 || g.Note == "" {
		t.Fatalf("first merge: %+v, want one late row deferred", g)
	}
	// The stream moves on and emits [94,110) without the late row; merge-late then places it.
	appendBronzeAt(t, lake, cfg, base, 300*s)
	srep := runStream(t, lake, cfg)
	rep, err = MergeLate(ctx, opts(lake, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if g := rep.Gold[2]; g.LateRows != 1 || g.Note != "" {
		t.Fatalf("second merge: %+v, want the late row placed", g)
	}
	_, closed := sessionScope(t, lake, srep.WatermarkMs, 0, 0)
	sessions := map[[2]int64]int64{}
	for _, r := range closed() {
		sessions[[2]int64{r.key.start, r.key.end}] = r.vals["n"].(int64)
	}
	us := func(d time.Duration) int64 { return base.Add(d).UnixMicro() }
	wantSessions := map[[2]int64]int64{{us(0), us(10 * s)}: 1, {us(85 * s), us(110 * s)}: 3}
	if fmt.Sprint(sessions) != fmt.Sprint(wantSessions) {
		t.Fatalf("gold sessions %v, want %v", sessions, wantSessions)
	}
	// A third run finds nothing new.
	if rep, err := MergeLate(ctx, opts(lake, cfg)); err != nil || !rep.Gold[2].UpToDate {
		t.Fatalf("third merge: %+v, %v", rep.Gold[2], err)
	}
}
