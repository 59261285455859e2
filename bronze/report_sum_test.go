package bronze

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// cancelAfter cancels a run's context right after its k-th write lands, as a Ctrl-C at that
// instant would.
type cancelAfter struct {
	objstore.Bucket
	mu     sync.Mutex
	n, k   int
	cancel context.CancelFunc
}

func (c *cancelAfter) wrote() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n++; c.n == c.k {
		c.cancel()
	}
}

func (c *cancelAfter) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	err := c.Bucket.Put(ctx, key, r, size)
	c.wrote()
	return err
}

func (c *cancelAfter) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	err := c.Bucket.PutIfAbsent(ctx, key, r, size)
	c.wrote()
	return err
}

// TestIngestInterruptedReportsAddUp interrupts an ingest after its k-th write, for every k, and
// reruns it: the two summaries together count every landing line once (the interrupted run's
// finished batches, the rerun the rest), as the tables hold them.
func TestIngestInterruptedReportsAddUp(t *testing.T) {
	for k := 1; ; k++ {
		lake := mem.New()
		rng := rand.New(rand.NewPCG(uint64(k), 9))
		want := map[string]bool{}
		for i := 0; i < 5; i++ {
			for key := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 30) {
				want[key] = true
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cb := &cancelAfter{Bucket: lake, k: k, cancel: cancel}
		x, _ := NewIngester(cb, ingestOptions())
		first, firstErr := x.Run(ctx)
		cancel()
		y, _ := NewIngester(lake, ingestOptions())
		second, err := y.Run(context.Background())
		if err != nil {
			t.Fatalf("k=%d: rerun: %v", k, err)
		}
		sameSet(t, tableLines(t, lake), want)
		if got := first.Lines + second.Lines; got != int64(len(want)) {
			t.Fatalf("k=%d: the summaries count %d + %d lines, landing has %d (first run: %v)", k, first.Lines, second.Lines, len(want), firstErr)
		}
		if got := first.Rows + first.Rejected + second.Rows + second.Rejected; got != int64(len(want)) {
			t.Fatalf("k=%d: rows and rejects in the summaries: %d, landing lines %d", k, got, len(want))
		}
		if firstErr == nil {
			if k < 3 {
				t.Fatal("the first run was never interrupted: the test proves nothing")
			}
			break
		}
	}
}

// TestIngestRacingReportsAddUp runs two ingesters at once, each re-running the other's claimed
// batches as soon as they look pending: together their summaries count each landing line once.
func TestIngestRacingReportsAddUp(t *testing.T) {
	for seed := range uint64(4) {
		lake, err := file.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 7))
		want := map[string]bool{}
		for i := 0; i < 12; i++ {
			for key := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 25) {
				want[key] = true
			}
		}
		var wg sync.WaitGroup
		reps := make([]Report, 2)
		errs := make([]error, 2)
		for i := range reps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				opts := ingestOptions()
				opts.MaxFilesPerTrigger = 2
				opts.OrderWait = time.Millisecond // take over the other's batches at once: the race
				x, err := NewIngester(lake, opts)
				if err == nil {
					reps[i], err = x.Run(context.Background())
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		sameSet(t, tableLines(t, lake), want)
		if got := reps[0].Lines + reps[1].Lines; got != int64(len(want)) {
			t.Fatalf("seed %d: two racing ingests report %d + %d lines; landing has %d", seed, reps[0].Lines, reps[1].Lines, len(want))
		}
	}
}

// takeoverAt runs another ingester to its end, synchronously, right after the first write of
// this one that matches lands: a second ingester taking over a batch the first is still
// committing, at a chosen instant of that commit.
type takeoverAt struct {
	objstore.Bucket
	match func(key string, body []byte) bool
	other func()
	once  sync.Once
	fired bool
}

func (b *takeoverAt) landed(key string, body []byte) {
	if b.match(key, body) {
		b.once.Do(func() { b.fired = true; b.other() })
	}
}

func (b *takeoverAt) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := objstore.PutBytes(ctx, b.Bucket, key, body); err != nil {
		return err
	}
	b.landed(key, body)
	return nil
}

func (b *takeoverAt) PutIfAbsent(ctx context.Context, key string, r io.Reader, size int64) error {
	body, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := objstore.PutBytesIfAbsent(ctx, b.Bucket, key, body); err != nil {
		return err
	}
	b.landed(key, body)
	return nil
}

// TestIngestTakeoverReportsAddUp is TestIngestRacingReportsAddUp made deterministic: a second
// ingester re-runs the first one's batch 0 at each instant of its commit (after its reads are
// recorded, after its bronze commit, after its rejects commit) while the first is alive and
// finishes it too. Exactly one of them reports the batch, whichever table commits each landed:
// their summaries add up to the landing lines, and to the tables' rows and rejects.
func TestIngestTakeoverReportsAddUp(t *testing.T) {
	batchCommit := func(logPrefix string) func(string, []byte) bool {
		return func(key string, body []byte) bool {
			return strings.HasPrefix(key, logPrefix) && bytes.Contains(body, []byte(`"txn"`))
		}
	}
	for _, tc := range []struct {
		name  string
		match func(key string, body []byte) bool
	}{
		{"after its reads are recorded", func(key string, _ []byte) bool {
			return strings.HasPrefix(key, "_checkpoints/ingest/reads/") || strings.HasPrefix(key, "_checkpoints/ingest/ends/")
		}},
		{"after its bronze commit", batchCommit("bronze/events/_delta_log/")},
		{"after its rejects commit", batchCommit("bronze/rejects/_delta_log/")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			lake := mem.New()
			rng := rand.New(rand.NewPCG(3, 30))
			want := map[string]bool{}
			for i := 0; i < 4; i++ {
				for key := range landingObject(t, lake, rng, fmt.Sprintf("landing/events/%03d.json", i), 25) {
					want[key] = true
				}
			}
			var second Report
			var secondErr error
			hook := &takeoverAt{Bucket: lake, match: tc.match}
			hook.other = func() {
				y, _ := NewIngester(lake, ingestOptions())
				second, secondErr = y.Run(ctx)
			}
			x, _ := NewIngester(hook, ingestOptions())
			first, err := x.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !hook.fired {
				t.Fatal("the second ingester never ran: the test proves nothing")
			}
			if secondErr != nil {
				t.Fatal(secondErr)
			}
			sameSet(t, tableLines(t, lake), want)
			if got := first.Lines + second.Lines; got != int64(len(want)) {
				t.Fatalf("the two ingests report %d + %d lines; landing has %d", first.Lines, second.Lines, len(want))
			}
			if got := first.Rows + first.Rejected + second.Rows + second.Rejected; got != int64(len(want)) {
				t.Fatalf("rows and rejects in the summaries: %d + %d, %d + %d; landing lines %d",
					first.Rows, first.Rejected, second.Rows, second.Rejected, len(want))
			}
			if got := first.Batches + second.Batches; got != 2 {
				t.Fatalf("the two ingests report %d + %d batches of the 2 they wrote", first.Batches, second.Batches)
			}
		})
	}
}
