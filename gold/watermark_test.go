package gold

import (
	"errors"
	"testing"
)

func msAt(h, m int) int64 { return at(h, m) / 1000 }

func TestWatermarkMonotonicFromZero(t *testing.T) {
	tr, err := NewWatermarkTracker(PolicyMin, []int64{10 * 60 * 1000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Pre-epoch data cannot pull the watermark below 0.
	tr.Observe(0, []int64{-5 * hour}, nil)
	if got := tr.EndBatch(0); got != 0 {
		t.Fatalf("pre-epoch batch: watermark %d, want 0", got)
	}
	tr.Observe(0, []int64{at(12, 21)}, nil)
	if got := tr.EndBatch(0); got != msAt(12, 11) {
		t.Fatalf("watermark %d, want 12:11", got)
	}
	// WM-E4: a batch whose max is 12:12 keeps 12:11.
	tr.Observe(0, []int64{at(12, 12)}, nil)
	if got := tr.EndBatch(0); got != msAt(12, 11) {
		t.Fatalf("WM-E4: watermark %d, want 12:11", got)
	}
	late, evict := tr.BatchWatermarks()
	if late != msAt(12, 11) || evict != msAt(12, 11) {
		t.Fatalf("watermarks %d,%d", late, evict)
	}
}

func TestWME3MultipleWatermarks(t *testing.T) {
	delays := []int64{10 * 60 * 1000, 5 * 60 * 1000}
	for _, tc := range []struct {
		policy Policy
		bSeen  bool
		want   int64
	}{
		{PolicyMin, true, msAt(12, 5)},
		{PolicyMax, true, msAt(12, 20)},
		{PolicyMin, false, 0},
		{PolicyMax, false, msAt(12, 20)},
	} {
		tr, err := NewWatermarkTracker(tc.policy, delays, 0)
		if err != nil {
			t.Fatal(err)
		}
		tr.Observe(0, []int64{at(12, 30)}, nil)
		if tc.bSeen {
			tr.Observe(1, []int64{at(12, 10)}, nil)
		}
		if got := tr.EndBatch(0); got != tc.want {
			t.Errorf("policy %d bSeen %v: %s, want %s", tc.policy, tc.bSeen, hhmmMs(got), hhmmMs(tc.want))
		}
	}
}

func TestWatermarkIdleness(t *testing.T) {
	tr, err := NewWatermarkTracker(PolicyMin, []int64{0, 0}, 60_000)
	if err != nil {
		t.Fatal(err)
	}
	tr.Observe(0, []int64{at(12, 0)}, nil)
	tr.Observe(1, []int64{at(11, 0)}, nil)
	if got := tr.EndBatch(1_000); got != msAt(11, 0) {
		t.Fatalf("both active: %s", hhmmMs(got))
	}
	tr.Observe(0, []int64{at(12, 30)}, nil)
	if got := tr.EndBatch(30_000); got != msAt(11, 0) {
		t.Fatalf("source 1 silent 29s: %s, want 11:00 (not idle yet)", hhmmMs(got))
	}
	tr.Observe(0, []int64{at(12, 40)}, nil)
	if got := tr.EndBatch(62_000); got != msAt(12, 40) {
		t.Fatalf("source 1 silent 61s: %s, want 12:40 (idle source released)", hhmmMs(got))
	}
	// The source comes back with old data: the global never goes backwards.
	tr.Observe(1, []int64{at(11, 30)}, nil)
	if got := tr.EndBatch(63_000); got != msAt(12, 40) {
		t.Fatalf("after resume: %s, want 12:40", hhmmMs(got))
	}
}

func TestWME5Restart(t *testing.T) {
	tr, _ := NewWatermarkTracker(PolicyMin, []int64{10 * 60 * 1000}, 0)
	// commits/N present: N+1 runs with max(offsets/N, commits/N.next); late = offsets/N.
	if err := tr.ResumeAfterCommit(msAt(12, 4), msAt(12, 5)); err != nil {
		t.Fatal(err)
	}
	if l, e := tr.BatchWatermarks(); l != msAt(12, 4) || e != msAt(12, 5) {
		t.Fatalf("after commit: %s,%s", hhmmMs(l), hhmmMs(e))
	}
	// A batch with old data keeps the restored floor.
	tr.Observe(0, []int64{at(12, 1)}, nil)
	if got := tr.EndBatch(0); got != msAt(12, 5) {
		t.Fatalf("next = %s, want 12:05", hhmmMs(got))
	}
	// Uncommitted batch N re-runs with exactly offsets/N's watermark.
	if err := tr.ResumeRerun(msAt(12, 4), msAt(12, 4)); err != nil {
		t.Fatal(err)
	}
	if l, e := tr.BatchWatermarks(); l != msAt(12, 4) || e != msAt(12, 4) {
		t.Fatalf("rerun: %s,%s", hhmmMs(l), hhmmMs(e))
	}
	if err := tr.ResumeRerun(5, 4); !errors.Is(err, ErrBadWatermark) {
		t.Fatalf("non-monotonic restore: %v", err)
	}
}

func TestWatermarkStats(t *testing.T) {
	tr, _ := NewWatermarkTracker(PolicyMin, []int64{0}, 0)
	tr.Observe(0, []int64{at(12, 21), at(12, 2), at(12, 4), 999}, []bool{true, true, true, false})
	st := tr.Stats(0)
	if st.Count != 3 || st.Max != msAt(12, 21) || st.Min != msAt(12, 2) || st.Avg() != msAt(12, 9) {
		t.Fatalf("stats %+v", st)
	}
	if _, err := NewWatermarkTracker(PolicyMin, []int64{-1}, 0); !errors.Is(err, ErrBadWatermark) {
		t.Fatalf("negative delay: %v", err)
	}
}
