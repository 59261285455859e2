package stream

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestStreamAddsExactColumnsToLegacyGold: a gold table created before sums were exact (the
// same columns without _<as>_exact, as an older build or Spark's export leaves it) gains the
// exact-sum column by a metaData action when the stream starts, and the stream's rows fill it.
func TestStreamAddsExactColumnsToLegacyGold(t *testing.T) {
	lake := mem.New()
	ctx := context.Background()
	cfg := parseConfig(t, "1h", "", `
  - name: t
    table: gold/t
    quarantine: silver/late_t
    window: {type: tumbling, size: 10s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}, {fn: sum, column: amount, as: total}]
`)
	long := txlog.PrimitiveType{Name: txlog.TypeLong}
	legacy := &txlog.StructType{Fields: []txlog.StructField{gold.WindowField(),
		{Name: "event_type", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "count", Type: long}, {Name: "total", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
		gold.LateRowsField()}}
	tbl := table.Open(objstore.WithPrefix(lake, "gold/t"), table.Options{})
	if _, err := tbl.Create(ctx, legacy, nil, nil); err != nil {
		t.Fatal(err)
	}
	at := func(s int) time.Time { return day.Add(time.Duration(s) * time.Second) }
	// 0.1 + 0.2 + 0.3 in float order is 0.6000000000000001; exactly, 0.6.
	var rows []ev
	for i, a := range []float64{0.1, 0.2, 0.3} {
		rows = append(rows, ev{ID: fmt.Sprint(i), Type: "A", Amount: a, T: at(i)})
	}
	appendBronze(t, lake, rows)
	mustRun(t, lake, cfg, "available-now")
	appendBronze(t, lake, []ev{{ID: "late-wm", Type: "A", Amount: 1, T: at(2 * 3600)}})
	mustRun(t, lake, cfg, "available-now")
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range schema.Fields {
		names = append(names, f.Name)
	}
	if want := []string{"window", "event_type", "count", "total", "late_rows", "_total_exact"}; !slices.Equal(names, want) {
		t.Fatalf("gold columns %v, want %v", names, want)
	}
	got := tableRows(t, lake, "gold/t", "_total_exact")
	want := []string{`{"window":{"start":"2024-05-01T00:00:00Z","end":"2024-05-01T00:00:10Z"},"event_type":"A","count":3,"total":0.6,"late_rows":0}`}
	if !slices.Equal(got, want) {
		t.Fatalf("gold rows %v, want %v", got, want)
	}
}
