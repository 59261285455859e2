package gold

import (
	"errors"
	"slices"
	"strings"
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

func utc(y int, mo time.Month, d, h, m, s int) int64 {
	return time.Date(y, mo, d, h, m, s, 0, time.UTC).UnixMicro()
}

func TestWindowVectors(t *testing.T) {
	tests := []struct {
		name              string
		size, slide, strt int64
		t                 int64
		want              []Window
	}{
		{"W1", 10 * minute, 10 * minute, 0, at(12, 7), []Window{{at(12, 0), at(12, 10)}}},
		{"W2", 10 * minute, 10 * minute, 0, at(12, 10), []Window{{at(12, 10), at(12, 20)}}},
		{"W3", 10 * minute, 5 * minute, 0, at(12, 7), []Window{{at(12, 5), at(12, 15)}, {at(12, 0), at(12, 10)}}},
		{"W4", 12 * minute, 5 * minute, 0, at(12, 5), []Window{{at(12, 5), at(12, 17)}, {at(12, 0), at(12, 12)}, {at(11, 55), at(12, 7)}}},
		{"W5", 12 * minute, 5 * minute, 2 * minute, at(12, 5), []Window{{at(12, 2), at(12, 14)}, {at(11, 57), at(12, 9)}}},
		{"W6", hour, hour, -15 * minute, at(12, 50), []Window{{at(12, 45), at(13, 45)}}},
		{"W7", 10 * second, 10 * second, 0, -1 * second, []Window{{utc(1969, 12, 31, 23, 59, 50), 0}}},
		{"W8", 10 * second, 10 * second, 5 * second, utc(1969, 12, 31, 0, 0, 2), []Window{{utc(1969, 12, 30, 23, 59, 55), utc(1969, 12, 31, 0, 0, 5)}}},
		{"W9", 10 * second, 10 * second, 5 * second, utc(1969, 12, 31, 0, 0, 12), []Window{{utc(1969, 12, 31, 0, 0, 5), utc(1969, 12, 31, 0, 0, 15)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := NewWindowSpec(tc.size, tc.slide, tc.strt)
			if err != nil {
				t.Fatal(err)
			}
			got := spec.Assign(nil, tc.t)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Assign(%d) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
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

func TestWindowValidation(t *testing.T) {
	tests := []struct {
		name              string
		size, slide, strt int64
		want              string
	}{
		{"W11", 5 * minute, 10 * minute, 0, "The `slide_duration`(600000000L) must be <= the `window_duration`(300000000L)."},
		{"W12", 10 * minute, 5 * minute, 5 * minute, "The `abs(start_time)`(300000000L) must be < the `slide_duration`(300000000L)."},
		{"W12neg", 10 * minute, 5 * minute, -5 * minute, "The `abs(start_time)`(300000000L) must be < the `slide_duration`(300000000L)."},
		{"zero-size", 0, 0, 0, "The `window_duration` must be between (0, 9223372036854775807] (current value = 0L)."},
		{"neg-slide", 10, -1, 0, "The `slide_duration` must be between (0, 9223372036854775807] (current value = -1L)."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWindowSpec(tc.size, tc.slide, tc.strt)
			if !errors.Is(err, ErrInvalidWindow) {
				t.Fatalf("err = %v, want ErrInvalidWindow", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %q, want it to contain %q", err, tc.want)
			}
		})
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

func TestS1(t *testing.T) {
	times := []int64{at(0, 0), at(0, 4, 30), at(0, 10)}
	keys := []string{"A", "A", "A"}
	got := batchSessions(keys, times, []int64{5 * minute, 5 * minute, 5 * minute})["A"]
	want := []Window{{at(0, 0), at(0, 9, 30)}, {at(0, 10), at(0, 15)}}
	if !slices.Equal(got, want) || countIn(times, keys, "A", got[0]) != 2 || countIn(times, keys, "A", got[1]) != 1 {
		t.Fatalf("sessions = %v, want %v with counts 2,1", got, want)
	}
}

func TestS2(t *testing.T) {
	times := []int64{at(0, 0), at(0, 5)}
	got := batchSessions([]string{"A", "A"}, times, []int64{5 * minute, 5 * minute})["A"]
	if want := []Window{{at(0, 0), at(0, 10)}}; !slices.Equal(got, want) {
		t.Fatalf("touching sessions = %v, want %v", got, want)
	}
}

func TestS3DynamicGap(t *testing.T) {
	keys := []string{"A", "A", "A", "B", "B"}
	times := []int64{at(0, 0), at(0, 4, 30), at(0, 10), at(0, 1), at(0, 4, 30)}
	gaps := []int64{5 * minute, 5 * minute, 5 * minute, minute, minute}
	got := batchSessions(keys, times, gaps)
	if want := []Window{{at(0, 0), at(0, 9, 30)}, {at(0, 10), at(0, 15)}}; !slices.Equal(got["A"], want) {
		t.Fatalf("A = %v, want %v", got["A"], want)
	}
	if want := []Window{{at(0, 1), at(0, 2)}, {at(0, 4, 30), at(0, 5, 30)}}; !slices.Equal(got["B"], want) {
		t.Fatalf("B = %v, want %v", got["B"], want)
	}
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
