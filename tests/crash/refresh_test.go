package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// TestCrashKillRefresh: run refresh --table g5 after g5's definition changed (5m -> 10m
// windows), SIGKILLed at random instants until it completes (after each kill, a gold table the
// refresh committed names a state the stream can restore), then the stream and merge-late
// over the rest of the data: the crashed lake's gold tables equal those of a lake where the
// refresh ran once uninterrupted (a kill before the commit leaves the old table and state, one
// after it a rebuilt table a rerun rebuilds alike).
func TestCrashKillRefresh(t *testing.T) {
	kills, events, files := 12, 3000, 6
	if os.Getenv("MEDALLION_LONG") == "1" {
		kills, events, files = 100, 40000, 30
	}
	seed := crashSeed(t)
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	cleanLake, crashLake := filepath.Join(dir, "clean"), filepath.Join(dir, "crash")
	cfgs := map[string][2]string{}
	for _, lake := range []string{cleanLake, crashLake} {
		old := lakecheck.WriteConfig(t, mkdir(t, dir, "cfg-old-"+filepath.Base(lake)), lake, "")
		// The new definition: g5 on 10-minute windows.
		text := strings.Replace(lakecheck.Config(lake, ""), "window: {type: tumbling, size: 5m}", "window: {type: tumbling, size: 10m}", 1)
		changed := filepath.Join(mkdir(t, dir, "cfg-new-"+filepath.Base(lake)), "pipeline.yaml")
		if err := os.WriteFile(changed, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cfgs[lake] = [2]string{old, changed}
		// Half the workload streamed under the old definition (with a merge-late run, so
		// that the refresh finds late rows merged and pending), the rest after the refresh.
		startStream(t, bin, lake, old, events, files)
		staged := filepath.Join(lake, "landing/events")
		entries, err := os.ReadDir(staged)
		if err != nil {
			t.Fatal(err)
		}
		later := lake + "-later"
		if err := os.MkdirAll(later, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			if i >= len(entries)/2 && !strings.Contains(e.Name(), "seed") {
				if err := os.Rename(filepath.Join(staged, e.Name()), filepath.Join(later, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
		lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", old)
		lakecheck.MustRun(t, bin, nil, "run", "stream", "--config", old)
		lakecheck.MustRun(t, bin, nil, "run", "merge-late", "--config", old)
		// Late rows left pending: events of the workload's first minutes, after its first half.
		var late strings.Builder
		for i := range 30 {
			fmt.Fprintf(&late, `{"event_id":"late-%d","event_type":"click","amount":%d,"event_time":"2026-01-10T12:%02d:00Z","device_id":"dev-late"}`+"\n", i, i, i%20)
		}
		if err := os.WriteFile(filepath.Join(staged, "zzzz-late.json"), []byte(late.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", old)
		lakecheck.MustRun(t, bin, nil, "run", "stream", "--config", old)
	}
	clean := timed(t, bin, "run", "refresh", "--table", "g5", "--config", cfgs[cleanLake][1])
	k := &killer{t: t, bin: bin, cfg: cfgs[crashLake][1], rng: rand.New(rand.NewPCG(seed, seed^0x51ed)),
		clean: map[string]time.Duration{"refresh": clean}, perJob: map[string]int{}}
	for tries := 0; k.kills < kills; tries++ {
		if tries > 20*kills {
			t.Fatalf("%d kills in %d tries: refresh ends before the kill (%v uninterrupted)", k.kills, tries, clean)
		}
		k.run("refresh", "--table", "g5")
		checkRefreshState(t, crashLake)
	}
	lakecheck.MustRun(t, bin, nil, "run", "refresh", "--table", "g5", "--config", cfgs[crashLake][1])
	for _, lake := range []string{cleanLake, crashLake} {
		later, landing := lake+"-later", filepath.Join(lake, "landing/events")
		entries, err := os.ReadDir(later)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if err := os.Rename(filepath.Join(later, e.Name()), filepath.Join(landing, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		for _, job := range []string{"ingest", "stream", "merge-late"} {
			lakecheck.MustRun(t, bin, nil, "run", job, "--config", cfgs[lake][1])
		}
	}
	for _, tbl := range []string{"gold/g5", "gold/s10", "silver/late_g5"} {
		drop := []string{"_ingest_time", "query_id"}
		var rows [2][]string
		for i, lake := range []string{cleanLake, crashLake} {
			var err error
			if rows[i], err = lakecheck.Rows(context.Background(), open(t, lake, tbl), drop...); err != nil {
				t.Fatal(err)
			}
		}
		if len(rows[0]) == 0 {
			t.Fatalf("%s is empty", tbl)
		}
		if d := lakecheck.Diff(rows[0], rows[1]); d != "" {
			t.Errorf("%s after %d killed refreshes differs from the clean lake's: %.600s", tbl, k.kills, d)
		}
	}
	t.Logf("SUMMARY refresh crash: seed %d, %d kills, %d runs completed, %d failed; refresh %v uninterrupted", seed, k.kills, k.completed, k.failed, clean)
}

// checkRefreshState: when gold/g5 records a refresh (stream.PropRefresh), the state object it
// names is under the checkpoint: a commit never lands before the state it points to.
func checkRefreshState(t *testing.T, lake string) {
	t.Helper()
	snap, err := table.Open(open(t, lake, "gold/g5"), table.Options{}).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, ok := snap.Metadata().Configuration[stream.PropRefresh]
	if !ok {
		return
	}
	var mark struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal([]byte(raw), &mark); err != nil || mark.State == "" {
		t.Fatalf("%s = %q: %v", stream.PropRefresh, raw, err)
	}
	found := false
	_ = filepath.WalkDir(lake, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, string(filepath.Separator)+filepath.FromSlash(mark.State)) {
			found = true
		}
		return nil
	})
	if !found {
		t.Fatalf("gold/g5 (version %d) names refresh state %s, which is not in the lake", snap.Version(), mark.State)
	}
}
