package silver

import (
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

func TestRules(t *testing.T) {
	ts := txlog.PrimitiveType{Name: txlog.TypeTimestamp}
	schema := &txlog.StructType{Fields: []txlog.StructField{
		{Name: "id", Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true},
		{Name: "event_time", Type: ts, Nullable: true},
		{Name: bronze.ColIngestTime, Type: ts, Nullable: true},
		{Name: bronze.ColRescued, Type: txlog.PrimitiveType{Name: txlog.TypeString}, Nullable: true}}}
	b, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	const hour = int64(time.Hour / time.Microsecond)
	rows := []struct {
		id          string
		ev, ingest  int64
		nullEv      bool
		rescued     string // _rescued_data, "" for null
		want, about string // the reason and a part of its detail
	}{
		{id: "ok", ev: 1 * hour, ingest: 2 * hour},
		{id: "", ev: 1 * hour, ingest: 2 * hour, want: ReasonMissingRequired, about: `"id"`},
		{id: "x", nullEv: true, ingest: 2 * hour, want: ReasonMissingEventTime, about: `"event_time" is missing or null`},
		{id: "other", nullEv: true, ingest: 2 * hour, rescued: `{"other":"x","event_time":null}`, want: ReasonMissingEventTime, about: `"event_time"`},
		{id: "bad", nullEv: true, ingest: 2 * hour, rescued: `{"event_time":"01/05/2024 12:07"}`, want: ReasonBadEventTime,
			about: `event time column "event_time" has value "01/05/2024 12:07", which does not parse: expected format dd/MM/yyyy HH:mm:ss`},
		{id: "num", nullEv: true, ingest: 2 * hour, rescued: `{"a":1,"event_time":17145652201234567890}`, want: ReasonBadEventTime,
			about: `has value "17145652201234567890"`},
		{id: "long", nullEv: true, ingest: 2 * hour, rescued: `{"event_time":"` + strings.Repeat("é", 150) + `"}`, want: ReasonBadEventTime,
			about: `has value "` + strings.Repeat("é", 100) + `...", which`},
		{id: "future", ev: 4 * hour, ingest: 2 * hour, want: ReasonFuture, about: "max_future_skew 1h0m0s"},
		{id: "skew", ev: 3 * hour, ingest: 2 * hour}, // exactly at the limit: kept
	}
	for _, r := range rows {
		if r.id == "" {
			b.Columns[0].AppendNull()
		} else {
			b.Columns[0].AppendString(r.id)
		}
		if r.nullEv {
			b.Columns[1].AppendNull()
		} else {
			b.Columns[1].AppendInt64(r.ev)
		}
		b.Columns[2].AppendInt64(r.ingest)
		if r.rescued == "" {
			b.Columns[3].AppendNull()
		} else {
			b.Columns[3].AppendString(r.rescued)
		}
	}
	rules := Rules{EventTime: "event_time", EventTimeFormat: "format dd/MM/yyyy HH:mm:ss", Required: []string{"id"}, MaxFutureSkew: time.Hour}
	check := rules.Bind(b)
	for i, r := range rows {
		got := check.Reject(i)
		if got != r.want {
			t.Errorf("row %s: reason %q, want %q", r.id, got, r.want)
		}
		if got != "" && !strings.Contains(check.Detail(i, got), r.about) {
			t.Errorf("row %s: detail %q does not mention %s", r.id, check.Detail(i, got), r.about)
		}
	}
	rj, err := NewRejects(1000)
	if err != nil {
		t.Fatal(err)
	}
	rj.Add(b, 1, ReasonMissingRequired, check.Detail(1, ReasonMissingRequired))
	if rj.Batch.Len() != 1 || string(rj.Batch.Columns[0].BytesAt(0)) != StageValidate || string(rj.Batch.Columns[1].BytesAt(0)) != ReasonMissingRequired {
		t.Fatalf("rejects row: %v", rj.Batch.Row(0))
	}
}
