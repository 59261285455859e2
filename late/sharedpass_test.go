package late

import (
	"context"
	"slices"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/txlog"
	"testing"
)

// TestReplayReadsSourceOnceForEveryGold: in a replay of several golds, the first pass of t5
// (tumbling) also computes s15's (sliding, the same slide), so s15 reads silver only when
// its changed windows must be written (s10's sketches read for themselves). The shared pass
// changes nothing else: each gold ends as a replay of it alone leaves it, with the same
// input rows and the same decision (unchanged, or the same windows rewritten), whether gold
// was as recomputed or damaged first, in one slice on one worker or in many on two.
func TestReplayReadsSourceOnceForEveryGold(t *testing.T) {
	base, cfg, _ := pipeline(t, 41, 3000, 5, slidingNumericYAML)
	if _, err := MergeLate(context.Background(), opts(base, cfg)); err != nil {
		t.Fatal(err)
	}
	r := replayRange(silverTimes(t, base), 0.1, 0.9)
	golds := []string{"t5", "s15"}
	type run struct {
		damaged bool
		pairs   int64
		workers int
	}
	for _, c := range []run{{false, -1, 1}, {true, -1, 1}, {false, 400, 2}, {true, 400, 2}} {
		damaged := c.damaged
		prepare := func() objstore.Bucket {
			lake := cloneLake(t, base)
			if damaged {
				for _, g := range golds {
					damage(t, lake, "gold/"+g, r.From.UnixMicro(), r.To.UnixMicro())
				}
			}
			return lake
		}
		// Each gold alone: nothing to share with.
		alone := map[string]ReplayGoldReport{}
		aloneState := map[string][]string{}
		for _, g := range golds {
			lake := prepare()
			o := opts(lake, cfg)
			o.Gold, o.Workers, o.SlicePairs = g, c.workers, c.pairs
			rep, err := Replay(context.Background(), o, r)
			if err != nil {
				t.Fatal(err)
			}
			alone[g], aloneState[g] = rep.Gold[0], goldState(t, lake, "gold/"+g)
		}
		lake := prepare()
		o := opts(lake, cfg)
		o.Workers, o.SlicePairs = c.workers, c.pairs
		passes := map[string]int{}
		o.Progress = func(p ReplayProgress) { passes[p.Gold] = max(passes[p.Gold], p.Pass) }
		rep, err := Replay(context.Background(), o, r)
		if err != nil {
			t.Fatal(err)
		}
		// Undamaged, gold is as recomputed: t5 reads once for both, s15 not at all. Damaged,
		// each also reads once more to write its changed windows.
		want := map[string]int{"t5": 1, "s15": 0}
		switch {
		case damaged && c.pairs < 0:
			want = map[string]int{"t5": 2, "s15": 1}
		case c.pairs > 0: // passes a slice: only s15's absence when gold is whole is known
			want = map[string]int{}
			if !damaged {
				want["s15"] = 0
			}
		}
		if c.pairs > 0 && passes["t5"] < 3 {
			t.Errorf("%+v: t5 read the source %d times: the range was not sliced", c, passes["t5"])
		}
		for _, g := range rep.Gold {
			if w, ok := want[g.Name]; ok && passes[g.Name] != w {
				t.Errorf("%+v: %s read the source %d times, want %d", c, g.Name, passes[g.Name], w)
			}
			a, ok := alone[g.Name]
			if !ok {
				continue
			}
			if g.InputRows == 0 || g.InputRows != a.InputRows || g.Unchanged != a.Unchanged || g.Unchanged == damaged ||
				(g.Gold == nil) != (a.Gold == nil) || (g.Gold != nil && (g.Gold.Inserted != a.Gold.Inserted || g.Gold.Deleted != a.Gold.Deleted)) {
				t.Errorf("%+v: %s: %+v (commit %+v); alone %+v (commit %+v)", c, g.Name, g, g.Gold, a, a.Gold)
			}
			if got := goldState(t, lake, "gold/"+g.Name); !slices.Equal(got, aloneState[g.Name]) {
				t.Errorf("%+v: %s differs from its replay alone", c, g.Name)
			}
		}
	}
}

// TestCanPlanByTags: a gold's first pass is computed for it only when its replay can use it:
// every file trusted, or untrusted with window statistics (planByTags then still hashes the
// windows they cannot hold); one file with neither makes every window one to replace.
func TestCanPlanByTags(t *testing.T) {
	lake, _, _ := pipeline(t, 7, 500, 2, "")
	_, snap := openSnapshot(t, lake, "gold/t5")
	_, h := snapHasher(t, snap)
	files := snap.Files()
	if len(files) == 0 || !canPlanByTags(h, files) {
		t.Fatalf("the stream's %d tagged files: want a plan by tags", len(files))
	}
	stats := &txlog.Add{Path: "x.parquet", Stats: `{"numRecords":1,"minValues":{"window":{"start":"2024-05-01T08:00:00Z"}},"maxValues":{"window":{"start":"2024-05-01T08:05:00Z"}}}`}
	if !canPlanByTags(h, append(slices.Clone(files), stats)) {
		t.Error("an untagged file with window statistics: want a plan by tags")
	}
	if canPlanByTags(h, append(slices.Clone(files), &txlog.Add{Path: "y.parquet"})) {
		t.Error("an untagged file without statistics: want no plan by tags")
	}
}

// BenchmarkReplaySharedRead: a replay of t5 and s15 (s10 left out: its sketches read for
// themselves) with gold as recomputed, so that the first pass is all of it: "together" reads
// silver once for both (replayShare), "alone" replays each gold in a run of its own, as every
// gold read silver before.
func BenchmarkReplaySharedRead(b *testing.B) {
	base, cfg, _ := pipeline(b, 31, 20_000, 8, slidingNumericYAML)
	if _, err := MergeLate(context.Background(), opts(base, cfg)); err != nil {
		b.Fatal(err)
	}
	r := replayRange(silverTimes(b, base), 0.1, 0.9)
	for _, mode := range []string{"together", "alone"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			runs := [][]string{{""}, {"t5", "s15"}}[map[string]int{"together": 0, "alone": 1}[mode]]
			for b.Loop() {
				for _, g := range runs {
					o := opts(base, cfg)
					o.Query.Gold = slices.DeleteFunc(o.Query.Gold, func(g spec.Aggregation) bool { return g.Name == "s10" })
					o.Gold = g
					rep, err := Replay(context.Background(), o, r)
					if err != nil {
						b.Fatal(err)
					}
					for _, gr := range rep.Gold {
						if !gr.Unchanged {
							b.Fatalf("%s: %+v, want unchanged", gr.Name, gr)
						}
					}
				}
			}
		})
	}
}
