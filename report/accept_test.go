package report

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestLagSVGGeneratedWorkload is issue 12's acceptance test end to end: package gen writes a
// workload (log-normal lags, a heavy tail, outages, duplicates, malformed lines, future
// events), the real ingester loads it into bronze at a fixed ingest time, and the lag SVG's
// percentiles must be within 1% of those computed here from the landing lines themselves
// (decoded with encoding/json, sorted).
func TestLagSVGGeneratedWorkload(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	lake := mem.New()
	opts := gen.DefaultOptions()
	opts.Seed, opts.Lines, opts.Files, opts.Rate = 11, 40000, 4, 40
	opts.Columns = []gen.Column{{Name: "event_id", Kind: "string", Required: true}, {Name: "event_time", Kind: "timestamp", Required: true}}
	opts.OutageRate = 0.0001
	stats, err := gen.Generate(ctx, lake, opts)
	if err != nil {
		t.Fatal(err)
	}
	ingestAt := opts.Start.Add(time.Duration(float64(opts.Lines)/opts.Rate*float64(time.Second)) + time.Minute).UTC()
	x, err := bronze.NewIngester(lake, bronze.IngestOptions{
		LandingPrefix: opts.Prefix, Format: bronze.FormatJSON, Declared: declaredSchema(),
		BronzePath: cfg.Tables.Bronze, RejectsPath: cfg.Tables.Rejects, CheckpointPath: cfg.Stream.Checkpoint + "/ingest",
		Clock: func() time.Time { return ingestAt },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Run(ctx); err != nil {
		t.Fatal(err)
	}

	// The oracle: every landing line that is a JSON object with an RFC 3339 event time.
	var lags []time.Duration
	future := int64(0)
	for _, key := range stats.Keys {
		data, err := objstore.ReadAll(ctx, lake, key)
		if err != nil {
			t.Fatal(err)
		}
		for line := range bytes.Lines(data) {
			var rec map[string]any
			if json.Unmarshal(line, &rec) != nil {
				continue
			}
			s, ok := rec["event_time"].(string)
			if !ok {
				continue
			}
			ev, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				continue
			}
			lag := ingestAt.Sub(ev.Truncate(time.Microsecond))
			if lag < -cfg.Stream.MaxFutureSkew.Duration {
				future++
				continue
			}
			lags = append(lags, lag)
		}
	}
	slices.Sort(lags)
	at := func(q float64) time.Duration { return lags[int(q*float64(len(lags)-1))] }

	rep, err := Lag(ctx, lake, cfg, LagOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rows != int64(len(lags)) || rep.Future != future || future == 0 {
		t.Fatalf("lag over %d rows (%d future), the landing lines give %d (%d future)", rep.Rows, rep.Future, len(lags), future)
	}
	if rep.Max != lags[len(lags)-1] {
		t.Errorf("max %v, want %v", rep.Max, lags[len(lags)-1])
	}
	checkLagSVG(t, LagChart(rep).SVG(), map[string]time.Duration{
		"p50": at(0.5), "p95": at(0.95), "p99": at(0.99),
		"current watermark": cfg.Stream.Watermark.Duration, "recommended watermark": Recommend(rep.P95),
	})
}
