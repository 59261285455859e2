package late

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
	"github.com/medallion-lake/medallion/txlog"
)

// TestReplayDecidesByTags: gold's files carry tags (the stream's appends, merge-late's and
// replay's rewrites), so a replay of a range gold holds as recomputed decides "unchanged"
// from them, reading no gold. Each case then makes gold wrong as another tool could: a file
// without tags with one row off ("bump", "drop", "ghost"), and a file whose tag another tool
// carried over from the file it replaced although it dropped a row ("stale": its row count
// no longer matches). Replay must read what the tags cannot vouch for: gold ends equal to the
// batch aggregation of silver (oracle: a plain aggregation over silver), the change feed
// holds exactly the one change (invariant C), the other tables commit nothing, and a rerun
// decides "unchanged" by the tags again (the files replay wrote are tagged).
func TestReplayDecidesByTags(t *testing.T) {
	base, cfg, srep := pipeline(t, 31, 3000, 5, slidingNumericYAML)
	if _, err := MergeLate(context.Background(), opts(base, cfg)); err != nil {
		t.Fatal(err)
	}
	r := replayRange(silverTimes(t, base), 0.1, 0.9)
	byTags := func(t *testing.T, lake objstore.Bucket) {
		t.Helper()
		before := versions(t, lake)
		rep, err := Replay(context.Background(), opts(lake, cfg), r)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range rep.Gold {
			// s10's sketches are aggregated row by row (collectWindows), without the tags.
			if !g.Unchanged || g.Gold != nil || (g.Name != "s10") != strings.Contains(g.Note, "tags") || g.InputRows == 0 {
				t.Errorf("%s: %+v, want unchanged by the tags", g.Name, g)
			}
		}
		if after := versions(t, lake); after != before {
			t.Errorf("versions went from %v to %v", before, after)
		}
	}
	t.Run("unchanged", func(t *testing.T) { byTags(t, cloneLake(t, base)) })
	for _, tc := range []struct {
		tamper string
		want   map[string]int
	}{
		{"bump", map[string]int{"update_preimage": 1, "update_postimage": 1}},
		{"drop", map[string]int{"insert": 1}},
		{"ghost", map[string]int{"delete": 1}},
		{"stale", map[string]int{"insert": 1}},
		{"untagged", map[string]int{"update_preimage": 1, "update_postimage": 1}},
	} {
		t.Run(tc.tamper, func(t *testing.T) {
			lake := cloneLake(t, base)
			switch tc.tamper {
			case "stale":
				tamperStale(t, lake, "gold/s15", r)
			case "untagged":
				untag(t, lake, "gold/s15")
				tamperLatest(t, lake, "gold/s15", r, "bump")
			default:
				tamperLatest(t, lake, "gold/s15", r, tc.tamper)
			}
			before := versions(t, lake)
			rep, err := Replay(context.Background(), opts(lake, cfg), r)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range rep.Gold {
				if (g.Gold != nil) != (g.Name == "s15") {
					t.Errorf("%s: commit %+v, want one for s15 only", g.Name, g.Gold)
				}
				if g.Name == "s15" && g.Gold != nil && tc.tamper != "untagged" && g.Gold.FilesRead >= len(goldFiles(t, lake, "gold/s15")) {
					t.Errorf("s15 read %d files: the tags spared none", g.Gold.FilesRead)
				}
			}
			if after := versions(t, lake); after != before {
				t.Errorf("t5 and s10 went from versions %v to %v: nothing was wrong there", before, after)
			}
			checkS15(t, lake, srep.WatermarkMs)
			vs := checkFeed(t, lake, "gold/s15")
			if got := cdftest.Counts(vs[len(vs)-1:]); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("the replay's change rows = %v, want %v", got, tc.want)
			}
			byTags(t, lake)
		})
	}
}

// untag makes gold at path look written by a build from before the tags: every live file's
// add committed again without them (dataChange false: no row changes).
func untag(t *testing.T, lake objstore.Bucket, path string) {
	t.Helper()
	ctx := context.Background()
	tbl, snap := openSnapshot(t, lake, path)
	tx := tbl.Log().Begin(snap)
	tagged := 0
	for _, f := range snap.Files() {
		if f.Tags[table.RowTagKey] != "" {
			tagged++
		}
		c := *f
		c.Tags, c.DataChange = nil, false
		tx.Add(&c)
	}
	if tagged == 0 {
		t.Fatal("no gold file had a tag: untagging proves nothing")
	}
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "UNTAG"}); err != nil {
		t.Fatal(err)
	}
}

// goldFiles are the live files of a gold table.
func goldFiles(t *testing.T, lake objstore.Bucket, path string) []*txlog.Add {
	t.Helper()
	_, snap := openSnapshot(t, lake, path)
	return snap.Files()
}

// tamperStale drops a row of the latest window of r (tamperLatest "drop": a file without a
// tag in place of a tagged one), then, as a tool that carries tags along could, commits the
// new file's add again with the tag of the file it replaced: a stale tag, whose row count is
// one more than the file holds.
func tamperStale(t *testing.T, lake objstore.Bucket, path string, r Range) {
	t.Helper()
	ctx := context.Background()
	before := map[string]*txlog.Add{}
	for _, f := range goldFiles(t, lake, path) {
		before[f.Path] = f
	}
	tamperLatest(t, lake, path, r, "drop")
	tbl, snap := openSnapshot(t, lake, path)
	var old, fresh *txlog.Add
	for _, f := range snap.Files() {
		if before[f.Path] == nil {
			fresh = f
		}
		delete(before, f.Path)
	}
	for _, f := range before {
		old = f
	}
	if old == nil || fresh == nil || old.Tags[table.RowTagKey] == "" {
		t.Fatalf("the drop replaced %v by %v: want a tagged file replaced", old, fresh)
	}
	stale := *fresh
	stale.Tags, stale.DataChange = maps.Clone(old.Tags), false
	tx := tbl.Log().Begin(snap)
	tx.Add(&stale)
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "TAG"}); err != nil {
		t.Fatal(err)
	}
}

// checkS15 checks gold s15 (15 s windows sliding by 5 s over device_id) against the batch
// aggregation of silver, and invariant E over every gold.
func checkS15(t *testing.T, lake objstore.Bucket, watermarkMs int64) {
	t.Helper()
	silver := readSilver(t, lake, "silver/events")
	closed := func(_, end int64) bool { return end <= watermarkMs*1000 }
	if n := diffGold("s15", readGold(t, lake, "gold/s15", []string{"device_id"}),
		batchWindows(silver, 15*time.Second, 5*time.Second, []string{"device_id"}, closed), t5Checks, t.Errorf); n > 0 {
		t.Fatalf("s15: %d differences from the batch aggregation", n)
	}
	checkInvariantE(t, lake, watermarkMs)
}
