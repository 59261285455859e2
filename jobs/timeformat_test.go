package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
)

// TestTimestampFormatsEndToEnd: an event time in epoch milliseconds (numbers and numeric
// strings) and a second timestamp column in a Spark pattern go through ingest, silver and gold;
// an event time in another form is rejected as bad_event_time, with the value and the format,
// apart from an absent one (missing_event_time). The expected instants are written out by hand
// from time.Date, independent of the parser.
func TestTimestampFormatsEndToEnd(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := testutil.Pipeline(t, fmt.Sprintf(`
lake: %s
landing: {path: landing/events/}
schema:
  - {name: event_id, type: string, required: true}
  - {name: event_type, type: string}
  - {name: event_time, type: timestamp, required: true, unit: ms}
  - {name: seen_at, type: timestamp, format: "dd/MM/yyyy HH:mm:ss"}
stream: {watermark: 10m, dedup: [event_id]}
gold:
  - name: events_5m
    window: {type: tumbling, size: 5m}
    group_by: [event_type]
    aggregates: [{fn: count, as: n}]
`, dir))
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Join([]string{
		`{"event_id":"e1","event_type":"a","event_time":1714565220000,"seen_at":"01/05/2024 12:07:30"}`,
		`{"event_id":"e2","event_type":"a","event_time":"1714565280500","seen_at":"01/05/2024 12:08:00"}`,
		`{"event_id":"e3","event_type":"b","event_time":1714565100000}`,
		`{"event_id":"e4","event_type":"a","event_time":"2024-05-01T12:07:00Z"}`,
		`{"event_id":"e5","event_type":"a"}`,
		`{"event_id":"e6","event_type":"a","event_time":1714565220000,"seen_at":"2024-05-01 12:07"}`,
		`{"event_id":"e7","event_type":"c","event_time":1714568400000}`, // 13:00: closes 12:05-12:10
	}, "\n") + "\n"
	if err := objstore.PutBytes(ctx, env.Lake, "landing/events/a.json", []byte(lines)); err != nil {
		t.Fatal(err)
	}
	if _, err := Ingest(ctx, env); err != nil {
		t.Fatal(err)
	}
	if _, err := Stream(ctx, env, config.Trigger{}, nil); err != nil {
		t.Fatal(err)
	}
	us := func(h, m, s, ms int) int64 { return time.Date(2024, 5, 1, h, m, s, ms*1e6, time.UTC).UnixMicro() }

	type srow struct {
		ev     int64
		seen   *int64
		rescue string
	}
	silverRows := map[string]srow{}
	scan(t, env, cfg.Tables.Silver, []string{"event_id", "event_time", "seen_at", "_rescued_data"}, func(b *pq.Batch, i int) {
		r := srow{ev: b.Columns[1].Int64[i]}
		if !b.Columns[2].IsNull(i) {
			v := b.Columns[2].Int64[i]
			r.seen = &v
		}
		if !b.Columns[3].IsNull(i) {
			r.rescue = string(b.Columns[3].BytesAt(i))
		}
		silverRows[string(b.Columns[0].BytesAt(i))] = r
	})
	want := map[string]srow{
		"e1": {ev: us(12, 7, 0, 0), seen: ptr(us(12, 7, 30, 0))},
		"e2": {ev: us(12, 8, 0, 500), seen: ptr(us(12, 8, 0, 0))},
		"e3": {ev: us(12, 5, 0, 0)},
		"e6": {ev: us(12, 7, 0, 0), rescue: `{"seen_at":"2024-05-01 12:07"}`}, // a bad non-event-time value is rescued
		"e7": {ev: us(13, 0, 0, 0)},
	}
	if len(silverRows) != len(want) {
		t.Errorf("silver has %v, want the rows %v", silverRows, want)
	}
	for id, w := range want {
		got, ok := silverRows[id]
		if !ok || got.ev != w.ev || (got.seen == nil) != (w.seen == nil) || got.seen != nil && *got.seen != *w.seen || got.rescue != w.rescue {
			t.Errorf("silver %s = %+v, want %+v", id, got, w)
		}
	}

	rejects := map[string][2]string{} // event id -> reason, error
	scan(t, env, cfg.Tables.Rejects, []string{"stage", "reason", "error", "raw"}, func(b *pq.Batch, i int) {
		var raw struct {
			ID string `json:"event_id"`
		}
		if err := json.Unmarshal(b.Columns[3].BytesAt(i), &raw); err != nil {
			t.Fatalf("reject raw %q: %v", b.Columns[3].BytesAt(i), err)
		}
		rejects[raw.ID] = [2]string{string(b.Columns[1].BytesAt(i)), string(b.Columns[2].BytesAt(i))}
	})
	if r := rejects["e4"]; r[0] != "bad_event_time" ||
		r[1] != `event time column "event_time" has value "2024-05-01T12:07:00Z", which does not parse: expected epoch milliseconds (a number or a string of one)` {
		t.Errorf("e4 rejected as %q", r)
	}
	if r := rejects["e5"]; r[0] != "missing_event_time" || r[1] != `event time column "event_time" is missing or null` {
		t.Errorf("e5 rejected as %q", r)
	}
	if len(rejects) != 2 {
		t.Errorf("rejects %v, want e4 and e5", rejects)
	}

	counts := map[string]int64{}
	scan(t, env, "gold/events_5m", nil, func(b *pq.Batch, i int) {
		var row struct {
			Window struct{ Start string } `json:"window"`
			Type   string                 `json:"event_type"`
			N      int64                  `json:"n"`
		}
		if err := json.Unmarshal(pq.AppendJSONRow(nil, b, i), &row); err != nil {
			t.Fatal(err)
		}
		counts[row.Window.Start+" "+row.Type] = row.N
	})
	if w := map[string]int64{"2024-05-01T12:05:00Z a": 3, "2024-05-01T12:05:00Z b": 1}; fmt.Sprint(counts) != fmt.Sprint(w) {
		t.Errorf("gold %v, want %v", counts, w)
	}
}

func ptr(v int64) *int64 { return &v }

// scan calls fn for every row of the table at path (columns: nil for all).
func scan(t *testing.T, env Env, path string, columns []string, fn func(b *pq.Batch, i int)) {
	t.Helper()
	tbl := table.Open(objstore.WithPrefix(env.Lake, path), table.Options{})
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{Columns: columns}) {
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i := range b.Len() {
			fn(b, i)
		}
	}
}
