package eventlog

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestAppendReadRoundTrip: events come back as written, empty strings, zero times and nil
// counts as NULL (and so as empty again), oldest first; an append whose txn the table has is
// skipped; Batches reads one query's batch rows.
func TestAppendReadRoundTrip(t *testing.T) {
	ctx := context.Background()
	l := Open(mem.New(), "_medallion/event_log", nil)
	if _, err := l.Read(ctx, ""); !errors.Is(err, ErrNoEventLog) {
		t.Fatalf("Read before the first append: %v, want ErrNoEventLog", err)
	}
	t0 := time.Date(2026, 12, 4, 10, 0, 0, 123000, time.UTC)
	run := Event{EventID: "run/r1", EventType: TypeJobRun, EventTime: t0.Add(time.Minute), Job: "ingest", RunID: "r1",
		StartTime: t0, EndTime: t0.Add(time.Minute), DurationMs: Int(60000), Outcome: OutcomeError, Error: "boom",
		RowsIn: Int(0), Details: `{"files":0}`}
	batch := func(q string, n int64) Event {
		return Event{EventID: "batch/" + q, EventType: TypeBatch, EventTime: t0.Add(time.Duration(n) * time.Second), Job: "stream",
			Source: "events", QueryID: q, BatchID: Int(n), RowsIn: Int(10), RowsLate: Int(2), Watermark: t0}
	}
	if ok, err := l.Append(ctx, []Event{run}, nil); err != nil || !ok {
		t.Fatalf("append: %v %v", ok, err)
	}
	txn := &Txn{AppID: BatchTxnAppID("q1"), Version: 0}
	if ok, err := l.Append(ctx, []Event{batch("q1", 0), batch("q2", 0)}, txn); err != nil || !ok {
		t.Fatalf("append batch: %v %v", ok, err)
	}
	if ok, err := l.Append(ctx, []Event{batch("q1", 0)}, txn); err != nil || ok {
		t.Fatalf("append of a recorded txn: written %v, err %v; want skipped", ok, err)
	}
	if v, ok, err := l.TxnVersion(ctx, BatchTxnAppID("q1")); err != nil || !ok || v != 0 {
		t.Fatalf("TxnVersion = %d %v %v", v, ok, err)
	}
	got, err := l.Read(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{batch("q1", 0), batch("q2", 0), run}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read\n%+v\nwant\n%+v", got, want)
	}
	if got, err := l.Batches(ctx, "q2"); err != nil || len(got) != 1 || got[0].QueryID != "q2" {
		t.Fatalf("Batches(q2) = %+v, %v", got, err)
	}
	if _, err := l.Append(ctx, []Event{{EventID: "x"}}, nil); err == nil {
		t.Fatal("an event without type and time was appended")
	}
}
