package stream

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/txlog"
)

// TestTwoRunsOfOneQuerySayWhy: two processes run the same query on one checkpoint at once;
// the one whose commit loses to the other's commit of the same batch (the query's own txn)
// says that another process runs the query, names the checkpoint and the way out, rather than
// a bare conflicting concurrent commit.
func TestTwoRunsOfOneQuerySayWhy(t *testing.T) {
	cfg := parseConfig(t, "10m", "  dedup: [event_id]", countGold)
	lost := 0
	for i := 0; i < 200 && lost < 3; i++ {
		lake := mem.New()
		var rows []ev
		for k := range 200 {
			rows = append(rows, ev{ID: fmt.Sprint(k), T: hm("12:00").Add(time.Duration(k) * time.Second)})
		}
		appendBronze(t, lake, rows)
		appendBronze(t, lake, []ev{{ID: "x", T: hm("13:00")}})
		if _, err := runStream(t, lake, cfg, "once"); err != nil {
			t.Fatal(err) // the checkpoint exists: both runs read its query id
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j := range 2 {
			wg.Go(func() { _, errs[j] = runStream(t, lake, cfg, "available-now") })
		}
		wg.Wait()
		for _, err := range errs {
			if !errors.Is(err, txlog.ErrConflict) {
				if err != nil {
					t.Logf("another failure: %v", err)
				}
				continue
			}
			lost++
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, "another process is running query events") || !strings.Contains(msg, "(checkpoint _checkpoints/events)") ||
				!strings.Contains(msg, "stop one of them") || !errors.Is(err, ErrConcurrentRun) {
				t.Fatalf("the losing run's error %q does not say another process runs the query, its checkpoint and the way out", msg)
			}
			if i := strings.Index(msg, "docs/operating.md)"); i < 0 || i > 280 {
				t.Errorf("the way out ends at %d, where the one-line error (300 characters) cuts it: %q", i, msg)
			}
		}
	}
	if lost == 0 {
		t.Skip("the two runs never raced to one commit")
	}
}

// TestConcurrentRunOnlyForOwnTxn: only a winner's commit of this query's own txn is taken for
// another run of the query; other conflicts keep their error.
func TestConcurrentRunOnlyForOwnTxn(t *testing.T) {
	e := &engine{queryID: "q1", cfg: engineConfig{prefix: "stream events", name: "events", checkpoint: "_checkpoints/events"}}
	for _, err := range []error{
		nil,
		fmt.Errorf("silver: %w", &txlog.TxnConflictError{Version: 3, AppID: "medallion-merge-late-q1", TxnVersion: 2}),
		fmt.Errorf("silver: %w: version 3 added files", txlog.ErrConcurrentAppend),
		fmt.Errorf("silver: %w", &txlog.TxnConflictError{Version: 3, AppID: "q2", TxnVersion: 2}),
	} {
		if got := e.concurrentRun(err); got != err {
			t.Errorf("concurrentRun(%v) = %v, want it unchanged", err, got)
		}
	}
	own := fmt.Errorf("silver: %w", &txlog.TxnConflictError{Version: 3, AppID: "q1", TxnVersion: 2})
	if got := e.concurrentRun(own); !errors.Is(got, ErrConcurrentRun) || !errors.Is(got, txlog.ErrConcurrentTransaction) {
		t.Errorf("concurrentRun(%v) = %v, want ErrConcurrentRun wrapping the conflict", own, got)
	}
	if e := (&txlog.TxnConflictError{Version: 3, AppID: "q1"}).Error(); e != `txlog: conflicting concurrent commit: concurrent transaction: version 3 committed txn appId "q1"` {
		t.Errorf("the conflict's text changed: %q", e)
	}
}
