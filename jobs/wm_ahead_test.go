package jobs

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
)

// TestWatermarkAheadGauge: an event 50 minutes ahead of the clock (inside max_future_skew)
// moves the watermark (delay 10m) 40 minutes past now; medallion_watermark_ahead_seconds of
// the source says so, from the injected clock, and says 0 while the watermark is behind.
func TestWatermarkAheadGauge(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		latest time.Duration // the latest event time minus now
		want   float64
	}{
		{"behind", -5 * time.Minute, 0},
		{"ahead", 50 * time.Minute, 40 * 60},
	} {
		cfg := testPipeline(t, t.TempDir(), "")
		env, err := NewEnv(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		env.Clock = func() time.Time { return now }
		var lines strings.Builder
		for i, at := range []time.Duration{-20 * time.Minute, tc.latest} {
			fmt.Fprintf(&lines, `{"event_id":"e%d","event_type":"a","amount":1,"event_time":%q}`+"\n", i, now.Add(at).Format(time.RFC3339))
		}
		if err := objstore.PutBytes(context.Background(), env.Lake, "landing/events/a.json", []byte(lines.String())); err != nil {
			t.Fatal(err)
		}
		if _, err := Ingest(context.Background(), env); err != nil {
			t.Fatal(err)
		}
		if _, err := Stream(context.Background(), env, config.Trigger{}, nil); err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		if _, err := newPipelineMetrics(env, reg, &statusPage{env: env}); err != nil {
			t.Fatal(err)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, mf := range families {
			if mf.GetName() != "medallion_watermark_ahead_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != "events" {
					t.Errorf("%s: labels %v, want source=events", tc.name, m.GetLabel())
				}
				found = true
				if got := m.GetGauge().GetValue(); got != tc.want {
					t.Errorf("%s: medallion_watermark_ahead_seconds = %v, want %v", tc.name, got, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no medallion_watermark_ahead_seconds", tc.name)
		}
	}
}
