package late

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/stream/spec"
)

// TestMergeLateAndReplayWhileStreaming runs merge-late and replay in a loop while the stream
// appends to gold batch after batch, on a file-backed lake and on a real MinIO server:
// invariant E holds at the end, no window missing, duplicated or different.
func TestMergeLateAndReplayWhileStreaming(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		lake, err := file.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		whileStreaming(t, lake, 6000, 12)
	})
	t.Run("minio", func(t *testing.T) {
		if testing.Short() {
			t.Skip("MinIO round trips are slow; -short runs the file lake only")
		}
		whileStreaming(t, s3test.NewTestBucket(t), 2500, 6)
	})
}

func whileStreaming(t *testing.T, lake objstore.Bucket, lines int64, files int) {
	cfg := testConfig(t, "")
	land(t, lake, 31, lines, files)
	ingest(t, lake, cfg)
	ctx := context.Background()
	var wg sync.WaitGroup
	var done atomic.Bool
	var srep stream.Report
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		r, err := stream.New(stream.Options{Lake: lake, Query: specs.Query(cfg), Trigger: spec.Trigger{Kind: spec.AvailableNow}, Clock: streamClock})
		if err == nil {
			srep, err = r.Run(ctx)
		}
		serr = err
	}()
	var merged, replays int
	whole := Range{From: time.Date(2024, 4, 30, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)}
	for i := 0; !done.Load(); i++ {
		if i%3 == 2 {
			if _, err := Replay(ctx, opts(lake, cfg), whole); err != nil {
				t.Fatalf("replay while streaming: %v", err)
			}
			replays++
			continue
		}
		rep, err := MergeLate(ctx, opts(lake, cfg))
		if err != nil {
			t.Fatalf("merge-late while streaming: %v", err)
		}
		if rep.LateRows > 0 {
			merged++
		}
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	if serr != nil {
		t.Fatalf("stream: %v", serr)
	}
	t.Logf("while the stream ran: %d merge-late runs folded rows in, %d replays", merged, replays)
	if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	checkInvariantE(t, lake, srep.WatermarkMs)
	// Invariant C with the stream's appends committed between merge-late's and replay's
	// change commits (and retried conflicts): the feed from version 0 is gold.
	checkFeed(t, lake, "gold/t5")
	checkFeed(t, lake, "gold/s10")
}
