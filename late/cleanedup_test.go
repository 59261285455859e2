package late

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestQuarantineCleanedUpNamesRefresh: when log cleanup removed quarantine commits merge-late
// has not merged yet (merge-late stopped for longer than delta.logRetentionDuration, or
// another tool shortened it), merge-late and replay both refuse; the way out they name must
// be one that works. Replay runs merge-late first and stops at the same commit, so it cannot
// be the way out; refresh rebuilds gold from silver and records the quarantine as merged.
func TestQuarantineCleanedUpNamesRefresh(t *testing.T) {
	ctx := context.Background()
	lake, cfg, _ := pipeline(t, 7, 3000, 6, "")
	q := cfg.Gold[0].Quarantine
	qt, snap := openSnapshot(t, lake, q)
	if snap.Version() < 1 {
		t.Fatalf("quarantine %s at version %d: the workload quarantined nothing", q, snap.Version())
	}
	if err := qt.Log().Checkpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	for v := int64(0); v < snap.Version(); v++ {
		if err := qt.Bucket().Delete(ctx, txlog.CommitKey(v)); err != nil {
			t.Fatal(err)
		}
	}
	o := opts(lake, cfg)
	o.Gold = cfg.Gold[0].Name
	_, err := MergeLate(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "no longer in the log") {
		t.Fatalf("merge-late: %v, want the cleaned-up commit refused", err)
	}
	want := "medallion run refresh --table " + cfg.Gold[0].Name
	if !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "run replay over its range") {
		t.Errorf("merge-late's error %q does not name %q (replay stops at the same commit)", err, want)
	}
	_, err = Replay(ctx, o, Range{From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("replay: %v, want the refusal naming %q", err, want)
	}
}

// TestReplayAfterMergedQuarantineCleanedUp: merge-late has merged every quarantine row, then
// the quarantine got a commit without rows (here the table property that shortens its log
// retention) and log cleanup removed the commits up to it, the version gold's txn records
// among them. Merge-late commits nothing without rows, so gold's txn keeps naming the removed
// version; replay must go on from the quarantine merge-late has just read, not refuse.
func TestReplayAfterMergedQuarantineCleanedUp(t *testing.T) {
	ctx := context.Background()
	lake, cfg, srep := pipeline(t, 11, 5000, 6, "")
	o := opts(lake, cfg)
	if _, err := MergeLate(ctx, o); err != nil {
		t.Fatal(err)
	}
	for _, g := range cfg.Gold {
		if g.Quarantine == "" {
			continue
		}
		qt := table.Open(objstore.WithPrefix(lake, g.Quarantine), table.Options{})
		if _, err := qt.Evolve(ctx, nil, map[string]string{txlog.PropLogRetentionDuration: "interval 1 hour"}); err != nil {
			t.Fatal(err)
		}
		_, snap := openSnapshot(t, lake, g.Quarantine)
		if err := qt.Log().Checkpoint(ctx, snap); err != nil {
			t.Fatal(err)
		}
		for v := int64(0); v < snap.Version(); v++ {
			if err := qt.Bucket().Delete(ctx, txlog.CommitKey(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := replayRange(silverTimes(t, lake), 0.3, 0.6)
	damage(t, lake, "gold/t5", r.From.UnixMicro(), r.To.UnixMicro())
	if _, err := Replay(ctx, o, r); err != nil {
		t.Fatalf("replay after the merged quarantine's log cleanup: %v", err)
	}
	checkInvariantE(t, lake, srep.WatermarkMs)
}

// TestQuarantineFileVacuumedNamesRefresh: Spark's OPTIMIZE of the quarantine and a VACUUM RETAIN
// 0 HOURS removed the files of rows merge-late had not merged yet. merge-late and replay
// failed with "objstore: object not found" and no way out; the rows are in silver, so refresh
// is the one.
func TestQuarantineFileVacuumedNamesRefresh(t *testing.T) {
	ctx := context.Background()
	lake, cfg, _ := pipeline(t, 7, 3000, 6, "")
	qt, snap := openSnapshot(t, lake, cfg.Gold[0].Quarantine)
	for _, a := range snap.Files() {
		if err := qt.Bucket().Delete(ctx, a.Path); err != nil {
			t.Fatal(err)
		}
	}
	o := opts(lake, cfg)
	o.Gold = cfg.Gold[0].Name
	want := "medallion run refresh --table " + cfg.Gold[0].Name
	if _, err := MergeLate(ctx, o); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("merge-late: %v, want the refusal naming %q", err, want)
	}
	_, err := Replay(ctx, o, Range{From: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2024, 5, 2, 0, 0, 0, 0, time.UTC)})
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("replay: %v, want the refusal naming %q", err, want)
	}
}
