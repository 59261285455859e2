package late

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
)

// TestReplayByTagsAfterOptimize: optimize compacts gold's files into one and carries their
// row tags over (their sums add up), so a replay after it still decides "unchanged" by the
// tags, reading no gold and committing nothing.
func TestReplayByTagsAfterOptimize(t *testing.T) {
	ctx := context.Background()
	lake, cfg := mem.New(), testConfig(t, slidingNumericYAML)
	start := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 { // three runs: three appends to each gold table
		landAt(t, lake, int64(37+100*i), 800, 1, start.Add(time.Duration(i)*20*time.Second))
		ingest(t, lake, cfg)
		runStream(t, lake, cfg)
	}
	if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"gold/t5", "gold/s15"} {
		if n := len(goldFiles(t, lake, path)); n < 2 {
			t.Fatalf("%s has %d files: nothing for optimize to compact", path, n)
		}
		tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{})
		if _, err := tbl.Optimize(ctx, table.OptimizeOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, f := range goldFiles(t, lake, path) {
			if f.Tags[table.OptimizeTargetSizeTag] == "" || f.Tags[table.RowTagKey] == "" {
				t.Errorf("%s: %s tags %v: not an optimize output with a row tag", path, f.Path, f.Tags)
			}
		}
	}
	before := versions(t, lake)
	rep, err := Replay(ctx, opts(lake, cfg), replayRange(silverTimes(t, lake), 0.1, 0.9))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Gold {
		if g.Name != "s10" && (!g.Unchanged || g.Gold != nil || !strings.Contains(g.Note, "tags")) {
			t.Errorf("%s: %+v, want unchanged by the tags", g.Name, g)
		}
	}
	if after := versions(t, lake); after != before {
		t.Errorf("versions went from %v to %v", before, after)
	}
}
