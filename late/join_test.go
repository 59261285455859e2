package late

import (
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// at is a time of 2024-05-01 (hh:mm or hh:mm:ss) in µs.
func at(t testing.TB, hhmm string) int64 {
	t.Helper()
	if len(hhmm) == 5 {
		hhmm += ":00"
	}
	v, err := time.Parse(time.RFC3339, "2024-05-01T"+hhmm+"Z")
	if err != nil {
		t.Fatal(err)
	}
	return v.UnixMicro()
}

// TestMergeLateJoinJV12 is the contract-shaped vector of spec/stream-joins.md §10: a left
// outer join of impressions and clicks, where I5 and C2 arrive late. Merge-late adds (I2,C2),
// replaces (I2,null) and writes (I5,null), whose window W_last has closed.
func TestMergeLateJoinJV12(t *testing.T) {
	s := newJoinSim(t, mem.New(), simJoin("left_outer", 0, time.Hour, 10*time.Minute, 20*time.Minute))
	I := func(id, k, hhmm string) jrow { return jrow{id: id, ad: ad(k), t: at(t, hhmm)} }
	s.step([]jrow{I("I1", "ad1", "12:00"), I("I2", "ad2", "12:05")}, []jrow{I("C1", "ad1", "12:10")})
	s.step([]jrow{I("I3", "ad3", "12:40")}, []jrow{I("C9", "ad9", "12:45")})
	s.step([]jrow{I("I4", "ad4", "14:00")}, []jrow{I("C9b", "ad9", "14:30")})
	s.step([]jrow{I("I5", "ad5", "12:30")}, []jrow{I("C4", "ad4", "14:59:59"), I("C2", "ad2", "12:30")})

	row := func(l, r string) string { return l + "|" + r }
	f := func(id, k, hhmm string) string { r := I(id, k, hhmm); return fmtRow(&r) }
	before := []string{
		row(f("I1", "ad1", "12:00"), f("C1", "ad1", "12:10")),
		row(f("I2", "ad2", "12:05"), "-"),
		row(f("I3", "ad3", "12:40"), "-"),
		row(f("I4", "ad4", "14:00"), f("C4", "ad4", "14:59:59")),
	}
	slices.Sort(before)
	if got := s.joinedRows(); !slices.Equal(got, before) {
		t.Fatalf("the simulated stream wrote\n%s", diffLines(got, before))
	}
	if want := at(t, "13:50") / 1000; s.lastEvict != want {
		t.Fatalf("W_last = %d, want %d (13:50)", s.lastEvict, want)
	}

	rep := s.merge()
	want := []string{
		row(f("I1", "ad1", "12:00"), f("C1", "ad1", "12:10")),
		row(f("I2", "ad2", "12:05"), f("C2", "ad2", "12:30")),
		row(f("I3", "ad3", "12:40"), "-"),
		row(f("I4", "ad4", "14:00"), f("C4", "ad4", "14:59:59")),
		row(f("I5", "ad5", "12:30"), "-"),
	}
	slices.Sort(want)
	if got := s.joinedRows(); !slices.Equal(got, want) {
		t.Fatalf("after merge-late:\n%s", diffLines(got, want))
	}
	s.checkJ("JV12")
	if rep.LateRows != 2 || rep.PairsAdded != 1 || rep.NullRowsAdded != 1 || rep.NullRowsReplaced != 1 || rep.Commit == nil {
		t.Fatalf("report %+v, want 2 late rows, 1 pair and 1 null row added, 1 null row replaced, a commit", rep)
	}

	// A rerun is a no-op: no commit, the same rows.
	again := s.merge()
	if again.Commit != nil || again.PairsAdded+again.NullRowsAdded+again.NullRowsReplaced != 0 {
		t.Fatalf("rerun changed the table: %+v", again)
	}
	if got := s.joinedRows(); !slices.Equal(got, want) {
		t.Fatalf("after the rerun:\n%s", diffLines(got, want))
	}
}
