package gold

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestWME1Equality(t *testing.T) {
	op := mustAgg(t, countCfg(Append))
	res, err := op.ProcessBatch(&Input{EventTime: []int64{at(12, 5) - 1, at(12, 5)}}, msAt(12, 5), msAt(12, 5))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.LateRows, []int32{0}) || res.NumRowsDroppedByWatermark != 1 {
		t.Fatalf("late rows %v dropped %d, want [0] and 1", res.LateRows, res.NumRowsDroppedByWatermark)
	}
}

func TestWME2PreEpoch(t *testing.T) {
	op := mustAgg(t, countCfg(Append))
	// Batch 0: late watermark 0; window [-5m,0) ends at the epoch and is late.
	res, err := op.ProcessBatch(&Input{EventTime: []int64{-1 * second, 1 * second}}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.LateRows, []int32{0}) || op.NumGroups() != 1 {
		t.Fatalf("late %v groups %d, want [0] and 1", res.LateRows, op.NumGroups())
	}
}

// A sliding row late for one window and on time for another is aggregated into the on-time
// one and reported late exactly once, with the judging watermark.
func TestSlidingPartiallyLate(t *testing.T) {
	w, _ := NewWindowSpec(10*minute, 5*minute, 0)
	op := mustAgg(t, AggConfig{Window: w, Mode: Append, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
	// 12:07 is in [12:00,12:10) and [12:05,12:15); 11:58 in [11:50,12:00) and [11:55,12:05).
	res, err := op.ProcessBatch(&Input{EventTime: []int64{at(12, 7), at(11, 58)}}, msAt(12, 10), msAt(12, 10))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.LateRows, []int32{0, 1}) || res.LateWatermarkMs != msAt(12, 10) {
		t.Fatalf("late rows %v wm %d", res.LateRows, res.LateWatermarkMs)
	}
	if res.NumRowsDroppedByWatermark != 3 {
		t.Fatalf("dropped groups %d, want 3", res.NumRowsDroppedByWatermark)
	}
	if got := stateString(op); got != "[12:05]=1" {
		t.Fatalf("state %s, want [12:05]=1", got)
	}
}

func sessionCfg(mode Mode, gap int64) AggConfig {
	return AggConfig{Session: &SessionSpec{Gap: gap}, Mode: mode, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}}
}

func keyed(key string, times ...int64) *Input {
	in := &Input{EventTime: times}
	for range times {
		in.Keys.Append([]byte(key))
	}
	return in
}

func sessString(a *Aggregation) string {
	var parts []string
	for s, g := range a.groups {
		if g.live() {
			parts = append(parts, a.key(g.key)+a.window(int32(s)).String()+"="+strconv.FormatInt(a.accs[0].value(int32(s), false).N, 10))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func TestS5Bridge(t *testing.T) {
	op := mustAgg(t, sessionCfg(Append, 10*second))
	res, err := op.ProcessBatch(keyed("A", 0, 5*second, 20*second), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := sessString(op); got != "A[0,15000000)=2,A[20000000,30000000)=1" {
		t.Fatalf("batch 0 state %s", got)
	}
	if len(res.Rows) != 0 {
		t.Fatalf("batch 0 emitted %v", res.Rows)
	}
	res, err = op.ProcessBatch(keyed("A", 12*second), 0, 29_999)
	if err != nil {
		t.Fatal(err)
	}
	if got := sessString(op); got != "A[0,30000000)=4" {
		t.Fatalf("batch 1 state %s, want one fused session of 4", got)
	}
	if res.NumRowsRemoved != 2 || res.NumRowsUpdated != 1 || len(res.Rows) != 0 {
		t.Fatalf("batch 1 removed %d updated %d rows %v", res.NumRowsRemoved, res.NumRowsUpdated, res.Rows)
	}
	res, err = op.ProcessBatch(&Input{}, 29_999, 30_000)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Window != (Window{0, 30 * second}) || res.Rows[0].Aggs[0].N != 4 || op.NumGroups() != 0 {
		t.Fatalf("eviction emitted %+v, groups left %d", res.Rows, op.NumGroups())
	}
}

func TestS6SessionLate(t *testing.T) {
	op := mustAgg(t, sessionCfg(Append, 10*second))
	res, err := op.ProcessBatch(keyed("A", 29*second, 31*second), 40_000, 40_000)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.LateRows, []int32{0}) || res.NumRowsDroppedByWatermark != 1 {
		t.Fatalf("late %v dropped %d", res.LateRows, res.NumRowsDroppedByWatermark)
	}
	if got := sessString(op); got != "A[31000000,41000000)=1" {
		t.Fatalf("state %s", got)
	}
}

func TestValidateSparkErrors(t *testing.T) {
	w, _ := Tumbling(minute)
	tests := []struct {
		name string
		cfg  AggConfig
		want string
	}{
		{"append-no-watermark", AggConfig{Window: w, Mode: Append, NoWatermark: true, Aggs: []AggSpec{{Fn: Count, Column: -1}}},
			"Append output mode not supported when there are streaming aggregations on streaming DataFrames/DataSets without watermark"},
		{"update-session", AggConfig{Session: &SessionSpec{Gap: 1}, NumKeys: 1, Mode: Update, Aggs: []AggSpec{{Fn: Count, Column: -1}}},
			"Update output mode not supported for session window on streaming DataFrames/DataSets"},
		{"global-session", AggConfig{Session: &SessionSpec{Gap: 1}, Mode: Append, Aggs: []AggSpec{{Fn: Count, Column: -1}}},
			"Global aggregation with session window in streaming query is not supported."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if !errors.Is(err, ErrUnsupportedOperation) || !strings.HasSuffix(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	ok := AggConfig{Window: w, Mode: Complete, NoWatermark: true, Aggs: []AggSpec{{Fn: Count, Column: -1}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("complete without watermark: %v", err)
	}
}

// TestAggregatesMatchOracle feeds random keyed batches through an Update-mode operator and
// compares every emitted group with sums computed directly from the rows.
func TestAggregatesMatchOracle(t *testing.T) {
	w, _ := NewWindowSpec(10*minute, 5*minute, 0)
	specs := []AggSpec{
		{Fn: Count, Column: -1, Name: "n"},
		{Fn: Count, Column: 0, Name: "n_amount"},
		{Fn: Sum, Column: 0, Name: "sum"},
		{Fn: Min, Column: 0, Name: "min"},
		{Fn: Max, Column: 0, Name: "max"},
		{Fn: Avg, Column: 0, Name: "avg"},
		{Fn: Sum, Column: 1, Name: "isum", Int: true},
		{Fn: Max, Column: 1, Name: "imax", Int: true},
	}
	op := mustAgg(t, AggConfig{Window: w, Mode: Complete, NumKeys: 1, Aggs: specs})
	type ora struct {
		n, nn      int64
		sum        float64
		mn, mx     float64
		isum, imax int64
		has        bool
	}
	want := map[string]*ora{}
	rng := rand.New(rand.NewPCG(1, 2))
	for b := 0; b < 5; b++ {
		in := &Input{Columns: make([]Column, 2)}
		for i := 0; i < 500; i++ {
			ts := at(12, 0) + rng.Int64N(hour)
			k := []string{"a", "b", "c"}[rng.IntN(3)]
			x := float64(rng.IntN(1000)) / 4 // exact in binary, so sums compare exactly
			valid := rng.IntN(10) != 0
			iv := rng.Int64N(100) - 50
			in.EventTime = append(in.EventTime, ts)
			in.Keys.Append([]byte(k))
			in.Columns[0].Float64 = append(in.Columns[0].Float64, x)
			in.Columns[0].Valid = append(in.Columns[0].Valid, valid)
			in.Columns[1].Int64 = append(in.Columns[1].Int64, iv)
			// Oracle windows: every slide-aligned start s with s <= ts < s+10m.
			for s := ts - ts%(5*minute) - 5*minute; s <= ts; s += 5 * minute {
				if ts >= s+10*minute {
					continue
				}
				g := k + "@" + hhmm(s)
				o := want[g]
				if o == nil {
					o = &ora{imax: -1 << 62}
					want[g] = o
				}
				o.n++
				o.isum += iv
				o.imax = max(o.imax, iv)
				if valid {
					if !o.has || x < o.mn {
						o.mn = x
					}
					if !o.has || x > o.mx {
						o.mx = x
					}
					o.has = true
					o.nn++
					o.sum += x
				}
			}
		}
		res, err := op.ProcessBatch(in, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if b < 4 {
			continue
		}
		if len(res.Rows) != len(want) {
			t.Fatalf("%d groups, want %d", len(res.Rows), len(want))
		}
		for _, r := range res.Rows {
			g := r.Key + "@" + hhmm(r.Window.Start)
			o := want[g]
			if o == nil {
				t.Fatalf("unexpected group %s", g)
			}
			got := []any{r.Aggs[0].Result(&specs[0]), r.Aggs[1].Result(&specs[1]), r.Aggs[2].Result(&specs[2]),
				r.Aggs[3].Result(&specs[3]), r.Aggs[4].Result(&specs[4]), r.Aggs[5].Result(&specs[5]),
				r.Aggs[6].Result(&specs[6]), r.Aggs[7].Result(&specs[7])}
			exp := []any{o.n, o.nn, o.sum, o.mn, o.mx, o.sum / float64(o.nn), o.isum, o.imax}
			for i := range exp {
				if got[i] != exp[i] {
					t.Fatalf("group %s agg %s = %v, want %v", g, specs[i].Name, got[i], exp[i])
				}
			}
		}
	}
}

// TestStateBoundedByOpenWindows streams many batches and checks evicted windows are freed.
func TestStateBoundedByOpenWindows(t *testing.T) {
	op := mustAgg(t, countCfg(Append))
	tr, _ := NewWatermarkTracker(PolicyMin, []int64{10 * 60 * 1000}, 0)
	maxGroups, mem20 := 0, int64(0)
	for b := 0; b < 200; b++ {
		base := int64(b) * minute
		in := &Input{}
		for i := 0; i < 50; i++ {
			in.EventTime = append(in.EventTime, base+int64(i)*second)
			in.Keys.Append([]byte{byte('a' + i%7)})
		}
		late, evict := tr.BatchWatermarks()
		tr.Observe(0, in.EventTime, nil)
		if _, err := op.ProcessBatch(in, late, evict); err != nil {
			t.Fatal(err)
		}
		tr.EndBatch(0)
		maxGroups = max(maxGroups, op.NumGroups())
		if b == 20 {
			mem20 = op.MemoryUsedBytes()
		}
	}
	if mem := op.MemoryUsedBytes(); mem <= 0 || mem > 2*mem20 {
		t.Fatalf("memory estimate grew from %d to %d bytes", mem20, mem)
	}
	// 10 min delay + 5 min windows: at most ~4 open windows x 7 keys.
	if maxGroups > 5*7 || len(op.groups) > 6*7 || op.keyIDs.Len() > 7 {
		t.Fatalf("state grew: max groups %d, slots %d, keys %d", maxGroups, len(op.groups), op.keyIDs.Len())
	}
}

func TestBadInput(t *testing.T) {
	op := mustAgg(t, AggConfig{Window: mustTumbling(t, minute), Mode: Append, Aggs: []AggSpec{{Fn: Sum, Column: 0, Name: "s"}}})
	for name, in := range map[string]*Input{
		"missing column": {EventTime: []int64{1}},
		"short column":   {EventTime: []int64{1, 2}, Columns: []Column{{Float64: []float64{1}}}},
		"wrong type":     {EventTime: []int64{1}, Columns: []Column{{Int64: []int64{1}}}},
		"short keys":     {EventTime: []int64{1, 2}, Keys: Binary{Data: []byte("a"), Offsets: []int32{0, 1}}, Columns: []Column{{Float64: []float64{1, 2}}}},
	} {
		if _, err := op.ProcessBatch(in, 0, 0); !errors.Is(err, ErrBadInput) {
			t.Errorf("%s: err = %v, want ErrBadInput", name, err)
		}
	}
}

// S3 and S4 through the operator: a per-row gap column; a null or zero gap drops the row
// silently (not late); Complete mode shows every session.
func TestS3S4SessionGapColumn(t *testing.T) {
	op := mustAgg(t, sessionCfg(Complete, 5*minute))
	in := &Input{
		EventTime:       []int64{at(0, 0), at(0, 4, 30), at(0, 10), at(0, 1), at(0, 4, 30), at(0, 2), at(0, 3)},
		SessionGap:      []int64{5 * minute, 5 * minute, 5 * minute, minute, minute, 0, minute},
		SessionGapValid: []bool{true, true, true, true, true, true, false},
	}
	for _, k := range []string{"A", "A", "A", "B", "B", "B", "B"} {
		in.Keys.Append([]byte(k))
	}
	res, err := op.ProcessBatch(in, msAt(23, 0), msAt(23, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := "A[" + itoa64(at(0, 0)) + "," + itoa64(at(0, 9, 30)) + ")=2," +
		"A[" + itoa64(at(0, 10)) + "," + itoa64(at(0, 15)) + ")=1," +
		"B[" + itoa64(at(0, 1)) + "," + itoa64(at(0, 2)) + ")=1," +
		"B[" + itoa64(at(0, 4, 30)) + "," + itoa64(at(0, 5, 30)) + ")=1"
	if got := sessString(op); got != want {
		t.Fatalf("sessions\n got %s\nwant %s", got, want)
	}
	if len(res.Rows) != 4 || len(res.LateRows) != 0 || res.NumRowsDroppedByWatermark != 0 {
		t.Fatalf("rows %d late %v dropped %d", len(res.Rows), res.LateRows, res.NumRowsDroppedByWatermark)
	}
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }
