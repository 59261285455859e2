package stream

import (
	"bufio"
	"context"
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
)

// procStatusKB reads a field of /proc/self/status (VmRSS, VmHWM) in kB; 0 where there is none.
func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return 0
}

var memEvents = flag.Int64("stream.mem-events", 5_000_000, "events BenchmarkStreamMemory streams")

// BenchmarkStreamMemory streams -stream.mem-events generated events (2000 a second of event
// time, a 10-minute watermark, dedup on) through one runner, ingesting and streaming one
// landing object (250k events) at a time, and reports the resident set after a tenth, two
// fifths and all of them (5M, 20M and 50M events with -stream.mem-events 50000000): the state
// is bounded by the watermark, so RSS must stay flat once 10 minutes of events are in state.
// Run with -benchtime 1x.
func BenchmarkStreamMemory(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		lake, err := file.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		const perFile = 250_000
		files := int((*memEvents + perFile - 1) / perFile)
		opts := gen.DefaultOptions()
		opts.Seed, opts.Lines, opts.Files, opts.Rate = 3, *memEvents, files, 2000
		opts.OutageRate = 0 // an outage burst is an hour late: all quarantine, no state
		g, err := gen.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		x, err := bronze.NewIngester(lake, bronze.IngestOptions{LandingPrefix: "landing/events/", Declared: declared(),
			BronzePath: "bronze/events", RejectsPath: "bronze/rejects", CheckpointPath: "_checkpoints/ingest",
			Clock: func() time.Time { return time.Date(2024, 5, 3, 0, 0, 0, 0, time.UTC) }})
		if err != nil {
			b.Fatal(err)
		}
		cfg := parseConfig(b, "10m", "  dedup: [event_id]", e2eGold)
		r, err := New(Options{Lake: lake, Query: specs.Query(cfg), Clock: runStreamClock})
		if err != nil {
			b.Fatal(err)
		}
		var buf []byte
		var streamed int64
		marks := map[int]string{}
		for _, m := range []struct {
			part, of int
		}{{1, 10}, {2, 5}, {1, 1}} {
			at := max(1, files*m.part/m.of)
			marks[at] = "rss-MB@" + strconv.FormatFloat(float64(at)*perFile/1e6, 'g', 3, 64) + "M"
		}
		for i := 1; g.More(); i++ {
			key, data := g.NextFile(buf[:0])
			buf = data
			if err := objstore.PutBytes(ctx, lake, key, data); err != nil {
				b.Fatal(err)
			}
			if _, err := x.IngestKeys(ctx, []string{key}); err != nil {
				b.Fatal(err)
			}
			if err := lake.Delete(ctx, key); err != nil {
				b.Fatal(err)
			}
			rep, err := r.Run(ctx)
			if err != nil {
				b.Fatal(err)
			}
			streamed = rep.InputRows
			if name, ok := marks[i]; ok {
				b.ReportMetric(float64(procStatusKB("VmRSS"))/1024, name)
			}
		}
		b.ReportMetric(float64(procStatusKB("VmHWM"))/1024, "peak-rss-MB")
		b.ReportMetric(float64(streamed), "events")
	}
}
