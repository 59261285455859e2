package late

import (
	"context"
	"testing"
	"time"
)

// TestReplayProgress follows a replay of tumbling, sliding and session aggregations through
// Options.Progress: the figures only move forward, every pass reads all the files it
// announced, the aggregations counted done are the report's, and the rows counted are those
// read: for a window aggregation exactly the silver rows of its replaced windows (counted
// here from silver directly), for sessions at least the report's inputRows (widening passes
// read more than they keep).
func TestReplayProgress(t *testing.T) {
	lake, cfg, _ := pipeline(t, 31, 4000, 6, sessionYAML)
	r := replayRange(silverTimes(t, lake), 0.3, 0.6)
	_, silverSnap := openSnapshot(t, lake, "silver/events")
	silverFiles := len(silverSnap.Files())

	var seen []ReplayProgress
	o := opts(lake, cfg)
	o.Progress = func(p ReplayProgress) { seen = append(seen, p) }
	rep, err := Replay(context.Background(), o, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Gold) != 3 {
		t.Fatalf("replayed %d aggregations, want t5, s10 and sess", len(rep.Gold))
	}

	// last is each aggregation's final figures; passes its number of source reads.
	last, passes := map[string]ReplayProgress{}, map[string]int{}
	var prev ReplayProgress
	for i, p := range seen {
		if p.GoldTotal != 3 {
			t.Fatalf("event %d: %+v: GoldTotal is not the 3 aggregations", i, p)
		}
		if p.GoldDone < prev.GoldDone || p.GoldDone > p.GoldTotal {
			t.Fatalf("event %d: %+v after %+v: GoldDone went back or past the total", i, p, prev)
		}
		if p.FilesDone > p.FilesTotal || p.FilesTotal > silverFiles {
			t.Fatalf("event %d: %+v: more files than the pass has, or than silver's %d", i, p, silverFiles)
		}
		if p.Gold == prev.Gold && p.GoldDone == prev.GoldDone {
			switch {
			case p.Rows < prev.Rows:
				t.Fatalf("event %d: %+v after %+v: rows went back", i, p, prev)
			case p.Pass == prev.Pass && p.FilesDone != prev.FilesDone+1:
				t.Fatalf("event %d: %+v after %+v: a file event that does not count one file", i, p, prev)
			case p.Pass == prev.Pass+1 && (p.FilesDone != 0 || prev.FilesDone != prev.FilesTotal):
				t.Fatalf("event %d: %+v after %+v: a pass began before the last read all its files", i, p, prev)
			}
		}
		if p.Pass > passes[p.Gold] {
			passes[p.Gold] = p.Pass
		}
		last[p.Gold], prev = p, p
	}
	if prev.GoldDone != len(rep.Gold) {
		t.Fatalf("the last event says %d aggregations done; the report has %d", prev.GoldDone, len(rep.Gold))
	}

	silverRows := readSilver(t, lake, "silver/events")
	size := map[string]time.Duration{"t5": 5 * time.Second, "s10": 10 * time.Second}
	for _, g := range rep.Gold {
		p, ok := last[g.Name]
		t.Logf("%s: %d passes, last %+v, inputRows %d", g.Name, passes[g.Name], p, g.InputRows)
		if !ok || passes[g.Name] == 0 {
			t.Fatalf("%s: no read of the source was reported", g.Name)
		}
		if p.FilesDone != p.FilesTotal || p.FilesTotal == 0 {
			t.Errorf("%s: ended at file %d of %d", g.Name, p.FilesDone, p.FilesTotal)
		}
		if g.InputRows == 0 {
			t.Fatalf("%s: replay read no row: the test proves nothing", g.Name)
		}
		if g.Name == "sess" {
			if p.Rows < g.InputRows {
				t.Errorf("sess: progress counted %d rows read; the report kept %d", p.Rows, g.InputRows)
			}
			continue
		}
		if passes[g.Name] != 1 {
			t.Errorf("%s: %d reads of the source, want 1", g.Name, passes[g.Name])
		}
		lo, hi := g.StartFrom.UnixMicro(), g.StartTo.Add(size[g.Name]).UnixMicro()
		var want int64
		for _, s := range silverRows {
			if s.t >= lo && s.t < hi {
				want++
			}
		}
		if p.Rows != want || p.Rows != g.InputRows {
			t.Errorf("%s: progress counted %d rows; silver has %d in the windows replaced, the report %d", g.Name, p.Rows, want, g.InputRows)
		}
	}
}
