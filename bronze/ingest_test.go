package bronze

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/table"
)

// landingObject writes n random lines (some bad, some blank) and returns the test's own list of
// the (key, offset) of every non-blank line: the oracle of what bronze + rejects must hold.
func landingObject(t *testing.T, b objstore.Bucket, rng *rand.Rand, key string, n int) map[string]bool {
	t.Helper()
	var buf bytes.Buffer
	want := map[string]bool{}
	for i := 0; i < n; i++ {
		var line string
		switch r := rng.IntN(20); {
		case r == 0:
			line = `{"event_id":"broken`
		case r == 1:
			line = ""
		case r == 2:
			line = "\xff\xfe garbage"
		default:
			line = fmt.Sprintf(`{"event_id":"%s-%d","event_type":"t%d","amount":%d.5,"event_time":"2024-05-01T12:%02d:00Z"}`, key, i, r%3, r, r)
		}
		if line != "" {
			want[fmt.Sprintf("%s@%d", key, buf.Len())] = true
		}
		buf.WriteString(line + "\n")
	}
	if err := objstore.PutBytes(context.Background(), b, key, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return want
}

func ingestOptions() IngestOptions {
	return IngestOptions{
		LandingPrefix:      "landing/events/",
		Declared:           declaredEvents(),
		BronzePath:         "bronze/events",
		RejectsPath:        "bronze/rejects",
		CheckpointPath:     "_checkpoints/ingest",
		MaxFilesPerTrigger: 3,
		FlushRows:          50,
	}
}

// tableLines reads (source_file@source_offset) of every row of bronze and rejects, failing on
// any line present twice.
func tableLines(t *testing.T, lake objstore.Bucket) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, tc := range []struct{ path, fileCol, offCol string }{
		{"bronze/events", ColSourceFile, ColSourceOffset},
		{"bronze/rejects", "source_file", "source_offset"},
	} {
		tbl := table.Open(objstore.WithPrefix(lake, tc.path), table.Options{})
		for b, err := range tbl.Scan(context.Background(), table.ScanOptions{Columns: []string{tc.fileCol, tc.offCol}}) {
			if err != nil {
				t.Fatalf("scan %s: %v", tc.path, err)
			}
			for i := 0; i < b.Len(); i++ {
				k := fmt.Sprintf("%s@%d", b.Columns[0].StringAt(i), b.Columns[1].Int64[i])
				if got[k] {
					t.Fatalf("line %s ingested twice", k)
				}
				got[k] = true
			}
		}
	}
	return got
}

func sameSet(t *testing.T, got, want map[string]bool) {
	t.Helper()
	for k := range want {
		if !got[k] {
			t.Fatalf("line %s lost (%d of %d lines in the tables)", k, len(got), len(want))
		}
	}
	for k := range got {
		if !want[k] {
			t.Fatalf("line %s in the tables but not in landing", k)
		}
	}
}

func TestIngestExactlyOnce(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]bool{}
	for i := 0; i < 7; i++ {
		for k := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 40+rng.IntN(80)) {
			want[k] = true
		}
	}
	x, err := smallBlocks(NewIngester(lake, ingestOptions()))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := x.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Files != 7 || rep.Batches != 3 || rep.Lines != int64(len(want)) || rep.Rows+rep.Rejected != rep.Lines {
		t.Fatalf("report %+v, want 7 files in 3 batches and %d lines", rep, len(want))
	}
	sameSet(t, tableLines(t, lake), want)

	// A second run finds nothing new and commits nothing.
	v := testutil.TableVersion(t, lake, "bronze/events")
	if rep, err = x.Run(ctx); err != nil || rep.Files != 0 {
		t.Fatalf("rerun: %+v %v", rep, err)
	}
	if testutil.TableVersion(t, lake, "bronze/events") != v {
		t.Fatal("a run without new objects committed")
	}

	// New objects, including one whose key sorts before everything ingested so far.
	for k := range landingObject(t, lake, rng, "landing/events/000-late-arrival.json", 30) {
		want[k] = true
	}
	if rep, err = x.Run(ctx); err != nil || rep.Files != 1 {
		t.Fatalf("incremental run: %+v %v", rep, err)
	}
	sameSet(t, tableLines(t, lake), want)

	// An ingested object that is rewritten is reported and read again in full
	// (TestIngestRewrittenObject has the details).
	if err := objstore.PutBytes(ctx, lake, "landing/events/001.json", []byte(`{"event_id":"changed"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	rep, err = x.Run(ctx)
	if err != nil || len(rep.RewrittenObjects) != 1 || rep.RewrittenObjects[0] != "landing/events/001.json" || rep.Lines != 1 {
		t.Fatalf("changed object: %+v %v", rep, err)
	}
}

// TestIngestConvergesAfterFailures fails the k-th write of a run, for every k until a run gets
// through, before or after the write lands (like a crash, or a lost answer), then runs again
// cleanly: the tables always converge to every line exactly once.
func TestIngestConvergesAfterFailures(t *testing.T) {
	ctx := context.Background()
	for _, op := range []string{objstore.OpPut, objstore.OpPutIfAbsent} {
		for _, after := range []bool{false, true} {
			failed := 0
			for k := 1; ; k++ {
				lake := mem.New()
				rng := rand.New(rand.NewPCG(uint64(k), 3))
				want := map[string]bool{}
				for i := 0; i < 5; i++ {
					for key := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 30) {
						want[key] = true
					}
				}
				faulty := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: op, Nth: k, After: after}}})
				x, _ := smallBlocks(NewIngester(faulty, ingestOptions()))
				_, firstErr := x.Run(ctx)
				y, _ := smallBlocks(NewIngester(lake, ingestOptions()))
				if _, err := y.Run(ctx); err != nil {
					t.Fatalf("%s k=%d after=%v: clean rerun failed: %v (first run: %v)", op, k, after, err, firstErr)
				}
				sameSet(t, tableLines(t, lake), want)
				if faulty.Fired() == 0 {
					break // k is past the run's last write of this kind
				}
				failed++
			}
			if failed < 3 {
				t.Fatalf("%s after=%v: only %d runs had a fault injected; the test no longer exercises failures", op, after, failed)
			}
		}
	}
}

// TestIngestConcurrentIngesters runs two ingesters at once on one lake, on the file backend and
// on MinIO: each line lands exactly once.
func TestIngestConcurrentIngesters(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		lake, err := file.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		concurrentIngesters(t, lake)
	})
	t.Run("s3", func(t *testing.T) { concurrentIngesters(t, s3test.NewTestBucket(t)) })
}

func concurrentIngesters(t *testing.T, lake objstore.Bucket) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 5))
	want := map[string]bool{}
	for i := 0; i < 12; i++ {
		for k := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 25) {
			want[k] = true
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := ingestOptions()
			opts.MaxFilesPerTrigger = 2
			opts.Clock = func() time.Time { return time.Unix(1714565000, 0) }
			x, err := smallBlocks(NewIngester(lake, opts))
			if err == nil {
				_, err = x.Run(ctx)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	sameSet(t, tableLines(t, lake), want)
}
