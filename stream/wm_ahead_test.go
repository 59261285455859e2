package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestWatermarkAheadWarns: one event inside max_future_skew (50 minutes ahead of the clock)
// moves the watermark (delay 10m) 40 minutes past wall clock, and from then on every row
// stamped with the current time is quarantined. The batch that moves it there logs one
// warning naming the query and how far ahead; a watermark less than the delay ahead, and the
// batches after, log none.
func TestWatermarkAheadWarns(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	now := day.Add(25 * time.Hour) // 2024-05-02 01:00
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	warnings := func() []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && strings.Contains(rec["msg"].(string), "watermark is ahead") {
				out = append(out, rec)
			}
		}
		return out
	}
	steps := []struct {
		id     string
		at     time.Duration // event time minus the clock
		warned int           // warnings logged so far
	}{
		{"a", -5 * time.Minute, 0},
		{"b", 15 * time.Minute, 0}, // watermark 5m ahead: less than the delay
		{"c", 50 * time.Minute, 1}, // watermark 40m ahead
		{"d", -1 * time.Minute, 1}, // late now; the watermark did not move
	}
	for _, s := range steps {
		appendBronze(t, lake, []ev{{ID: s.id, Type: "x", T: now.Add(s.at), Ingest: now}})
		r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: func() time.Time { return now }, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := len(warnings()); got != s.warned {
			t.Fatalf("after row %s at clock%+v: %d watermark-ahead warnings, want %d\n%s", s.id, s.at, got, s.warned, logs.String())
		}
	}
	w := warnings()[0]
	if w["query"] != "events" || w["aheadSeconds"] != 2400.0 {
		t.Errorf("warning %v: want query events, aheadSeconds 2400", w)
	}
	if n := len(tableRows(t, lake, "silver/late_w5")); n != 1 {
		t.Errorf("%d quarantined rows, want 1 (row d, on time by the clock)", n)
	}
}
