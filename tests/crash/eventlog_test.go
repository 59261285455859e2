package crash

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/report/eventlog"
)

// checkEventLog checks the event log of a lake whose jobs were killed at random instants and
// then run to completion: every event id once; one batch row for every batch the stream's
// checkpoint committed (a rerun of a batch after a kill, or a kill between a batch's commit and
// its event-log row, neither duplicates nor loses it); and a successful run row at least for
// every run that exited 0 (a killed run may have written its row or not). It returns the
// number of checks.
func checkEventLog(t *testing.T, cfgPath string, completed int) int {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	lake := open(t, cfg.Lake, "")
	evs, err := eventlog.Open(lake, config.DefaultEventLog, nil).Read(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	batches := map[int64]int{}
	okRuns := 0
	for _, e := range evs {
		ids[e.EventID]++
		switch {
		case e.EventType == eventlog.TypeBatch:
			batches[*e.BatchID]++
		case e.EventType == eventlog.TypeJobRun && e.Outcome == eventlog.OutcomeOK:
			okRuns++
		}
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("event log: %s appears %d times", id, n)
		}
	}
	// The oracle: the commit files of the stream's checkpoint (never cleaned in a run this short).
	var committed []int64
	for o, err := range objstore.WithPrefix(lake, cfg.Stream.Checkpoint).List(ctx, "commits/", objstore.ListOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if n, err := strconv.ParseInt(strings.TrimPrefix(o.Key, "commits/"), 10, 64); err == nil {
			committed = append(committed, n)
		}
	}
	slices.Sort(committed)
	if len(committed) == 0 || committed[0] != 0 {
		t.Fatalf("the checkpoint's commits %v do not start at batch 0: the check needs them all", committed)
	}
	for _, n := range committed {
		if batches[n] != 1 {
			t.Errorf("event log: batch %d has %d rows, want 1", n, batches[n])
		}
	}
	if len(batches) != len(committed) {
		t.Errorf("event log: rows for %d batches, the checkpoint committed %d", len(batches), len(committed))
	}
	if okRuns < completed {
		t.Errorf("event log: %d successful run rows, but %d runs exited 0", okRuns, completed)
	}
	t.Logf("event log of %s: %d rows, %d batches, %d successful runs", filepath.Base(cfg.Lake), len(evs), len(batches), okRuns)
	return len(committed) + 2
}
