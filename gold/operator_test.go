package gold

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func hhmm(usv int64) string { return time.UnixMicro(usv).UTC().Format("15:04") }

// rowsString renders rows as "[12:05]=3" (window start = count of aggregate 0).
func rowsString(rows []OutRow) string {
	var parts []string
	for _, r := range rows {
		p := fmt.Sprintf("[%s]=%d", hhmm(r.Window.Start), r.Aggs[0].N)
		if len(r.Key) > 0 {
			p = r.Key + p
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

// stateString renders the operator's live groups the same way, sorted.
func stateString(a *Aggregation) string {
	var rows []OutRow
	for s, g := range a.groups {
		if g.live() {
			rows = append(rows, OutRow{Window: a.window(int32(s)), Key: a.key(g.key), Aggs: []AggValue{a.accs[0].value(int32(s), false)}})
		}
	}
	slices.SortFunc(rows, func(x, y OutRow) int {
		if c := cmp.Compare(x.Window.Start, y.Window.Start); c != 0 {
			return c
		}
		return strings.Compare(x.Key, y.Key)
	})
	return rowsString(rows)
}

type batchRecord struct {
	id                int
	lateWM, evictWM   string
	dropped, lateRows int64
	out, state, next  string
}

// runStream drives tracker + operator the way the runner does (spec §3.1, §4.3): each data
// batch, then a no-data batch whenever the operator asks for one.
func runStream(t *testing.T, op *Aggregation, delayMs int64, batches [][]int64) []batchRecord {
	t.Helper()
	tr, err := NewWatermarkTracker(PolicyMin, []int64{delayMs}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := op.Config()
	var recs []batchRecord
	run := func(times []int64) {
		late, evict := tr.BatchWatermarks()
		tr.Observe(0, times, nil)
		res, err := op.ProcessBatch(&Input{EventTime: times}, late, evict)
		if err != nil {
			t.Fatal(err)
		}
		next := tr.EndBatch(0)
		recs = append(recs, batchRecord{
			id: len(recs), lateWM: hhmmMs(late), evictWM: hhmmMs(evict),
			dropped: res.NumRowsDroppedByWatermark, lateRows: int64(len(res.LateRows)),
			out: rowsString(res.Rows), state: stateString(op), next: hhmmMs(next),
		})
	}
	for _, b := range batches {
		run(b)
		if _, evict := tr.BatchWatermarks(); cfg.ShouldRunNoDataBatch(evict, tr.prev) {
			run(nil)
		}
	}
	return recs
}

func hhmmMs(m int64) string {
	if m == 0 {
		return "0"
	}
	return hhmm(m * 1000)
}

var wmBatches = [][]int64{
	{at(12, 7), at(12, 8), at(12, 14)},
	{at(12, 9), at(12, 15), at(12, 3)},
	{at(12, 21), at(12, 2), at(12, 4)},
	{at(12, 12)},
}

func countCfg(mode Mode) AggConfig {
	w, _ := Tumbling(5 * minute)
	return AggConfig{Window: w, Mode: mode, Aggs: []AggSpec{{Fn: Count, Column: -1, Name: "count"}}}
}

func checkRecords(t *testing.T, got, want []batchRecord) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("ran %d batches, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.state == "" { // state not asserted for this batch
			g.state = ""
		}
		if g != w {
			t.Errorf("batch %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestWMAppend(t *testing.T) {
	got := runStream(t, mustAgg(t, countCfg(Append)), 10*60*1000, wmBatches)
	checkRecords(t, got, []batchRecord{
		{0, "0", "0", 0, 0, "", "[12:05]=2,[12:10]=1", "12:04"},
		{1, "0", "12:04", 0, 0, "", "[12:05]=2,[12:10]=1", "12:04"},
		{2, "12:04", "12:04", 0, 0, "", "[12:00]=1,[12:05]=3,[12:10]=1,[12:15]=1", "12:05"},
		{3, "12:04", "12:05", 0, 0, "[12:00]=1", "[12:05]=3,[12:10]=1,[12:15]=1", "12:05"},
		{4, "12:05", "12:05", 1, 2, "", "[12:05]=3,[12:10]=1,[12:15]=1,[12:20]=1", "12:11"},
		{5, "12:05", "12:11", 0, 0, "[12:05]=3", "[12:10]=1,[12:15]=1,[12:20]=1", "12:11"},
		{6, "12:11", "12:11", 0, 0, "", "[12:10]=2,[12:15]=1,[12:20]=1", "12:11"},
	})
}

func TestWMUpdate(t *testing.T) {
	got := runStream(t, mustAgg(t, countCfg(Update)), 10*60*1000, wmBatches)
	checkRecords(t, got, []batchRecord{
		{0, "0", "0", 0, 0, "[12:05]=2,[12:10]=1", "", "12:04"},
		{1, "0", "12:04", 0, 0, "", "", "12:04"},
		{2, "12:04", "12:04", 0, 0, "[12:00]=1,[12:05]=3,[12:15]=1", "", "12:05"},
		{3, "12:04", "12:05", 0, 0, "", "[12:05]=3,[12:10]=1,[12:15]=1", "12:05"},
		{4, "12:05", "12:05", 1, 2, "[12:20]=1", "", "12:11"},
		{5, "12:05", "12:11", 0, 0, "", "[12:10]=1,[12:15]=1,[12:20]=1", "12:11"},
		{6, "12:11", "12:11", 0, 0, "[12:10]=2", "", "12:11"},
	})
}

func TestWMComplete(t *testing.T) {
	got := runStream(t, mustAgg(t, countCfg(Complete)), 10*60*1000, wmBatches)
	checkRecords(t, got, []batchRecord{
		{0, "0", "0", 0, 0, "[12:05]=2,[12:10]=1", "", "12:04"},
		{1, "0", "12:04", 0, 0, "[12:00]=1,[12:05]=3,[12:10]=1,[12:15]=1", "", "12:05"},
		{2, "12:04", "12:05", 0, 0, "[12:00]=3,[12:05]=3,[12:10]=1,[12:15]=1,[12:20]=1", "", "12:11"},
		{3, "12:05", "12:11", 0, 0, "[12:00]=3,[12:05]=3,[12:10]=2,[12:15]=1,[12:20]=1", "", "12:11"},
	})
}
