package stream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

const baseYAML = `
lake: mem
` + testutil.EventsSchema + `stream:
  watermark: %s
%s
gold:
%s
`

func parseConfig(t testing.TB, watermark, streamExtra, goldYAML string) *config.Pipeline {
	t.Helper()
	return testutil.Pipeline(t, fmt.Sprintf(baseYAML, watermark, streamExtra, goldYAML))
}

func declared() *txlog.StructType {
	s := func(n string) txlog.StructField {
		return txlog.StructField{Name: n, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}
	}
	return &txlog.StructType{Fields: []txlog.StructField{s("event_id"), s("event_type"),
		{Name: "amount", Type: txlog.PrimitiveType{Name: txlog.TypeDouble}, Nullable: true},
		{Name: "event_time", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: true}}}
}

// ev is one bronze row written by a test; an empty ID and a zero T are nulls.
type ev struct {
	ID, Type string
	Amount   float64
	T        time.Time
	Ingest   time.Time
}

var day = time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)

func hm(s string) time.Time {
	t, err := time.Parse("15:04:05", s)
	if err != nil {
		t, err = time.Parse("15:04", s)
	}
	if err != nil {
		panic(err)
	}
	return day.Add(time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute + time.Duration(t.Second())*time.Second)
}

// appendBronze commits rows to the bronze table as one new version (one file).
func appendBronze(t testing.TB, lake objstore.Bucket, rows []ev) {
	t.Helper()
	ctx := context.Background()
	schema := bronze.BronzeSchema(declared())
	// Files get modification times in commit order, so that a stream starting from a snapshot
	// reads them in that order too (Delta orders snapshot files by modification time).
	// One table for the version and the append: the append then only lists the commits since
	// (none), instead of loading the log from its last checkpoint a second time.
	version := int64(0)
	tbl := table.Open(objstore.WithPrefix(lake, "bronze/events"), table.Options{Clock: func() time.Time { return day.Add(time.Duration(version+1) * time.Second) }})
	if snap, err := tbl.Latest(ctx); err == nil {
		version = snap.Version()
	} else if _, err := tbl.Create(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	b, _ := pq.NewBatch(schema)
	for i, r := range rows {
		if r.ID == "" {
			b.Columns[0].AppendNull()
		} else {
			b.Columns[0].AppendString(r.ID)
		}
		b.Columns[1].AppendString(r.Type)
		b.Columns[2].AppendFloat64(r.Amount)
		if r.T.IsZero() {
			b.Columns[3].AppendNull()
		} else {
			b.Columns[3].AppendTime(r.T)
		}
		b.Columns[4].AppendNull()
		ing := r.Ingest
		if ing.IsZero() {
			ing = day.Add(24 * time.Hour)
		}
		b.Columns[5].AppendTime(ing)
		b.Columns[6].AppendString("landing/test.json")
		b.Columns[7].AppendInt64(int64(i))
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// tableRows returns a table's rows as sorted JSON lines, minus the given columns.
func tableRows(t testing.TB, lake objstore.Bucket, path string, drop ...string) []string {
	t.Helper()
	ctx := context.Background()
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		return nil
	}
	schema, _ := snap.Schema()
	var cols []string
	for _, f := range schema.Fields {
		if !slices.Contains(drop, f.Name) {
			cols = append(cols, f.Name)
		}
	}
	var out []string
	for b, err := range tbl.Scan(ctx, table.ScanOptions{Columns: cols}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			out = append(out, string(pq.AppendJSONRow(nil, b, i)))
		}
	}
	slices.Sort(out)
	return out
}

// runStreamClock fixes batch timestamps, so that reruns write identical rejects.
func runStreamClock() time.Time { return day.Add(48 * time.Hour) }

func runStream(t testing.TB, lake objstore.Bucket, cfg *config.Pipeline, trigger string) (Report, error) {
	t.Helper()
	opts := Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock}
	if trigger != "" {
		tr, err := config.ParseTrigger(trigger)
		if err != nil {
			t.Fatal(err)
		}
		opts.Trigger = specs.Trigger(tr)
	}
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r.Run(context.Background())
}

func mustRun(t testing.TB, lake objstore.Bucket, cfg *config.Pipeline, trigger string) Report {
	t.Helper()
	rep, err := runStream(t, lake, cfg, trigger)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// windowRow renders a gold row's window and count as "hh:mm=count".
func goldCounts(t testing.TB, lake objstore.Bucket, path string) []string {
	t.Helper()
	var out []string
	for _, row := range tableRows(t, lake, path) {
		// {"window":{"start":"2024-05-01T12:00:00Z","end":...},"count":1,"late_rows":0}
		i := strings.Index(row, `"start":"`) + len(`"start":"2024-05-01T`)
		j := strings.Index(row, `"count":`) + len(`"count":`)
		k := strings.IndexAny(row[j:], ",}")
		out = append(out, row[i:i+5]+"="+row[j:j+k])
	}
	slices.Sort(out)
	return out
}

func parseTrigger(t testing.TB, s string) spec.Trigger {
	t.Helper()
	tr, err := config.ParseTrigger(s)
	if err != nil {
		t.Fatal(err)
	}
	return specs.Trigger(tr)
}
