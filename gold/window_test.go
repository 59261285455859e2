package gold

import (
	"errors"
	"slices"
	"testing"
	"time"
)

const (
	second = int64(1_000_000)
	minute = 60 * second
	hour   = 60 * minute
)

// at is hh:mm[:ss] on 2024-05-01 UTC in µs; the oracle is time.Date, not our arithmetic.
func at(h, m int, s ...int) int64 {
	ss := 0
	if len(s) > 0 {
		ss = s[0]
	}
	return time.Date(2024, 5, 1, h, m, ss, 0, time.UTC).UnixMicro()
}

// W10: a null event time produces no window row; checked through the operator's input path.
func TestW10NullEventTime(t *testing.T) {
	op := mustAgg(t, AggConfig{Window: mustTumbling(t, 10*minute), Mode: Complete, Aggs: []AggSpec{{Fn: Count, Column: -1, Name: "count"}}})
	in := &Input{EventTime: []int64{at(12, 7), 0}, EventValid: []bool{true, false}}
	res, err := op.ProcessBatch(in, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Aggs[0].N != 1 {
		t.Fatalf("rows = %+v, want one window with count 1", res.Rows)
	}
}

// TestWindowAssignProperty checks, against a brute-force oracle that scans every slide-aligned
// start, that Assign returns exactly the windows containing t, including before the epoch.
func TestWindowAssignProperty(t *testing.T) {
	specs := [][3]int64{{10, 10, 0}, {10, 5, 0}, {12, 5, 2}, {12, 5, -3}, {7, 3, 1}, {1, 1, 0}}
	for _, p := range specs {
		spec, err := NewWindowSpec(p[0], p[1], p[2])
		if err != nil {
			t.Fatal(err)
		}
		for tt := int64(-50); tt <= 50; tt++ {
			var want []Window
			// Starts are startTime + k*slide; scan a range generously wider than the window.
			for k := int64(-200); k <= 200; k++ {
				s := p[2] + k*p[1]
				if s <= tt && tt < s+p[0] {
					want = append(want, Window{s, s + p[0]})
				}
			}
			slices.Reverse(want)
			got := spec.Assign(nil, tt)
			if !slices.Equal(got, want) {
				t.Fatalf("spec %v t=%d: got %v want %v", p, tt, got, want)
			}
		}
	}
}

// batchSessions is the batch semantics of session_window: per key, proto-sessions merged.
// It is the reference the S vectors state, built only from ProtoSession and MergeSessions.
func batchSessions(keys []string, times, gaps []int64) map[string][]Window {
	per := map[string][]Window{}
	for i, k := range keys {
		if w, ok := ProtoSession(times[i], gaps[i]); ok {
			per[k] = append(per[k], w)
		}
	}
	for k, ws := range per {
		per[k] = MergeSessions(ws)
	}
	return per
}

func countIn(times []int64, keys []string, key string, w Window) int {
	n := 0
	for i, tt := range times {
		if keys[i] == key && w.Start <= tt && tt < w.End {
			n++
		}
	}
	return n
}

func TestS4EmptyGapFiltered(t *testing.T) {
	for _, gap := range []int64{0, -5} {
		if _, ok := ProtoSession(at(0, 0), gap); ok {
			t.Fatalf("gap %d: proto-session kept, want filtered", gap)
		}
	}
	if _, err := NewSessionSpec(0); !errors.Is(err, ErrInvalidWindow) {
		t.Fatalf("static gap 0: err = %v, want ErrInvalidWindow", err)
	}
}

func mustTumbling(t testing.TB, size int64) WindowSpec {
	t.Helper()
	s, err := Tumbling(size)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLateWindows(t *testing.T) {
	spec, _ := NewWindowSpec(10*minute, 5*minute, 0)
	// 12:07 is in [12:05,12:15) and [12:00,12:10); judged at 12:10 only the second was closed.
	got := spec.LateWindows(nil, at(12, 7), at(12, 10)/1000)
	if want := []Window{{at(12, 0), at(12, 10)}}; !slices.Equal(got, want) {
		t.Fatalf("LateWindows = %v, want %v", got, want)
	}
	if got := spec.LateWindows(nil, at(12, 7), at(12, 9)/1000); len(got) != 0 {
		t.Fatalf("nothing closed yet, got %v", got)
	}
}
