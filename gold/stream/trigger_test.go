package stream

import (
	"context"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/objstore/mem"
)

type chanListener chan *gold.Progress

func (c chanListener) OnProgress(p *gold.Progress) { c <- p }

// TestProcessingTimeTrigger runs the query until its context is cancelled: new bronze commits
// are picked up by later triggers, the no-data batch the watermark asks for runs, and
// cancelling ends the run without an error.
func TestProcessingTimeTrigger(t *testing.T) {
	lake := mem.New()
	cfg := parseConfig(t, "10m", "", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:07")}, {ID: "b", T: hm("12:08")}})
	progress := make(chanListener, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := New(Options{Lake: lake, Config: cfg, Trigger: parseTrigger(t, "processing-time=10ms"), Listener: progress})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var rep Report
	go func() {
		var err error
		rep, err = r.Run(ctx)
		done <- err
	}()
	await := func(batch int64, rows int64) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case p := <-progress:
				if p.BatchID == batch {
					if p.NumInputRows != rows {
						t.Fatalf("batch %d read %d rows, want %d", batch, p.NumInputRows, rows)
					}
					return
				}
			case <-timeout:
				t.Fatalf("batch %d never ran", batch)
			}
		}
	}
	await(0, 2)
	await(1, 0) // no-data batch: the watermark moved to 11:58
	appendBronze(t, lake, []ev{{ID: "c", T: hm("12:30")}})
	await(2, 1)
	await(3, 0) // closes [12:05, 12:10)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rep.LastBatch != 3 {
		t.Fatalf("last batch %d, want 3 (nothing runs without data or a watermark move)", rep.LastBatch)
	}
	if got := goldCounts(t, lake, "gold/w5"); len(got) != 1 || got[0] != "12:05=2" {
		t.Fatalf("gold %v", got)
	}
}
