package stream

import (
	"context"
	"errors"
	"testing"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestInputGainsColumnsWhileRunning: a query planned before bronze gained a column (inserted
// before bronze's own columns, so every later column moved) stops before its next batch with
// ErrInputSchemaChanged instead of reading columns at their old positions; a new run plans
// with the column and carries it to silver.
func TestInputGainsColumnsWhileRunning(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", "  - {name: g, window: {type: tumbling, size: 5m}, aggregates: [{fn: count}]}")
	appendBronze(t, lake, []ev{{ID: "a", Type: "x", Amount: 1, T: hm("10:00")}})
	r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}

	grown := declared()
	grown.Fields = append(grown.Fields, txlog.StructField{Name: "country", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true})
	bt := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{})
	if err := bronze.EnsureBronzeTable(ctx, bt, "bronze/events", bronze.BronzeSchema(grown), grown, bronze.SchemaPolicy{}, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := pq.NewBatch(bronze.BronzeSchema(grown))
	b.Columns[0].AppendString("b")
	b.Columns[1].AppendString("x")
	b.Columns[2].AppendFloat64(2)
	b.Columns[3].AppendTime(hm("10:01"))
	b.Columns[4].AppendString("DE")
	b.Columns[5].AppendNull()
	b.Columns[6].AppendTime(day.Add(24 * 3600e9))
	b.Columns[7].AppendString("landing/test.json")
	b.Columns[8].AppendInt64(0)
	if _, err := bt.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}

	if _, err := r.Run(ctx); !errors.Is(err, ErrInputSchemaChanged) {
		t.Fatalf("the run planned before the column: %v, want ErrInputSchemaChanged", err)
	}
	mustRun(t, lake, cfg, "")
	rows := tableRows(t, lake, "silver/events", "_ingest_time", "_source_file", "_source_offset", "_rescued_data")
	want := []string{
		`{"event_id":"a","event_type":"x","amount":1,"event_time":"2024-05-01T10:00:00Z","country":null}`,
		`{"event_id":"b","event_type":"x","amount":2,"event_time":"2024-05-01T10:01:00Z","country":"DE"}`,
	}
	if len(rows) != 2 || rows[0] != want[0] || rows[1] != want[1] {
		t.Fatalf("silver\n got %v\nwant %v", rows, want)
	}
}
