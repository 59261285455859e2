package join

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/gold"
)

const sec = int64(1_000_000)

func TestParseCondition(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Bound
		err  string
	}{
		{in: "r.t BETWEEN l.t AND l.t + 1h", want: Between(0, 3600*sec)},
		{in: "R.T between L.T - 5s and L.T + 10s", want: Between(-5*sec, 10*sec)},
		{in: "r.t >= l.t - 5s AND r.t <= l.t + 10s", want: Between(-5*sec, 10*sec)},
		// Spark's "one side condition": l.t < r.t - 5s <=> r.t > l.t + 5s.
		{in: "l.t < r.t - 5s", want: []Bound{{GT, 5 * sec}}},
		{in: "l.t + 2m > r.t AND r.t > l.t", want: []Bound{{LT, 120 * sec}, {GT, 0}}},
		{in: "r.t+1s-500ms<=l.t+1ms", want: []Bound{{LE, -499_000}}},
		{in: "r.t < l.t + 3650d", want: []Bound{{LT, 3650 * 86400 * sec}}},
		{in: "r.t < l.t + 1.5us", err: "finer than a microsecond"},
		{in: "", err: "want l.t or r.t"},
		{in: "r.t = l.t", err: "want a comparison"},
		{in: "r.t < l.t AND", err: "want l.t or r.t"},
		{in: "r.t < l.t OR r.t > l.t", err: "want AND between conjuncts"},
		{in: "l.t < l.t + 1s", err: "uses l.t on both sides"},
		{in: "r.t BETWEEN l.t l.t", err: "want AND after BETWEEN"},
		{in: "r.t < l.t + 1x", err: `bad duration "1x"`},
		{in: "r.t < l.t + 100000d", err: "bad duration"},
		{in: "r.t < l.t + 30000d + 30000d", err: "out of range"},
		{in: "x.t < l.t", err: "column 1"},
	} {
		got, err := ParseCondition(tc.in)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want ErrBadSpec containing %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestStateWatermarks pins the algebra of spec §3: inclusive bounds subtract 1 ms, strict ones
// do not, µs offsets truncate toward zero, the min over conjuncts wins, and a side evicts only
// if both it and the other side are watermarked.
func TestStateWatermarks(t *testing.T) {
	both := func(c []Bound) Spec {
		return Spec{Type: Inner, NumKeys: 1, Condition: c, LeftWatermark: true, RightWatermark: true}
	}
	for _, tc := range []struct {
		name       string
		spec       Spec
		w          int64
		l, r       int64
		lok, rok   bool
		outputWant int64
	}{
		{"between 0..1h", both(Between(0, 3600*sec)), 13*3600_000 + 50*60_000,
			13*3600_000 + 50*60_000 - 3600_000 - 1, 13*3600_000 + 50*60_000 - 1, true, true, 13*3600_000 + 50*60_000 - 3600_000 - 1},
		{"between ±5s", both(Between(-5*sec, 5*sec)), 20_000, 14_999, 14_999, true, true, 14_999},
		{"strict", both([]Bound{{GT, -5 * sec}, {LT, 10 * sec}}), 30_000, 20_000, 25_000, true, true, 20_000},
		{"truncation toward zero", both([]Bound{{LE, 1500}, {GE, -1500}}), 0, -2, -2, true, true, -2},
		{"truncation positive", both([]Bound{{LE, -1500}, {GE, 1500}}), 10, 10, 10, true, true, 10},
		// Spark keeps the least value, the loosest bound (spec §3.1 step 6).
		{"min of conjuncts", both([]Bound{{LE, 5 * sec}, {LT, 2 * sec}, {GE, 0}}), 10_000, 4_999, 9_999, true, true, 4_999},
		{"one side condition", both([]Bound{{GT, 5 * sec}}), 10_000, 0, 15_000, false, true, 10_000},
		// A side evicts by its own watermark, bounded through the other side's: with one side
		// unwatermarked neither state shrinks.
		{"left unwatermarked", Spec{Type: Inner, NumKeys: 1, Condition: Between(0, sec), RightWatermark: true}, 10_000, 0, 0, false, false, 10_000},
		{"right unwatermarked", Spec{Type: Inner, NumKeys: 1, Condition: Between(0, sec), LeftWatermark: true}, 10_000, 0, 0, false, false, 10_000},
		{"no condition", both(nil), 10_000, 0, 0, false, false, 10_000},
	} {
		l, lok, r, rok := tc.spec.StateWatermarks(tc.w)
		if lok != tc.lok || rok != tc.rok || (lok && l != tc.l) || (rok && r != tc.r) {
			t.Errorf("%s: got left %d %t right %d %t; want %d %t, %d %t", tc.name, l, lok, r, rok, tc.l, tc.lok, tc.r, tc.rok)
		}
		if got := tc.spec.OutputWatermark(tc.w); got != tc.outputWant {
			t.Errorf("%s: output watermark %d, want %d", tc.name, got, tc.outputWant)
		}
		if got := tc.spec.HasStateWatermark(); got != (tc.lok || tc.rok) {
			t.Errorf("%s: HasStateWatermark %t", tc.name, got)
		}
	}
	s := both(Between(0, sec))
	if s.ShouldRunNoDataBatch(10, 10) || !s.ShouldRunNoDataBatch(11, 10) {
		t.Error("no-data batch predicate: runs only when the watermark moved")
	}
	if n := both(nil); n.ShouldRunNoDataBatch(11, 10) {
		t.Error("no-data batch without any state watermark")
	}
}

func TestValidateBadSpecs(t *testing.T) {
	ok := Spec{Type: Inner, NumKeys: 1, Condition: Between(0, sec), LeftWatermark: true, RightWatermark: true}
	for _, tc := range []struct {
		name string
		mut  func(*Spec)
		want string
	}{
		{"unknown type", func(s *Spec) { s.Type = 42 }, "unknown join type 42"},
		{"negative keys", func(s *Spec) { s.NumKeys = -1 }, "-1 join keys"},
		{"unknown op", func(s *Spec) { s.Condition = []Bound{{Op: 9}} }, "unknown operator"},
		{"huge offset", func(s *Spec) { s.Condition = []Bound{{LE, maxOffset + 1}} }, "out of range"},
		{"unknown mode", func(s *Spec) { s.Mode = 7 }, "unknown output mode"},
		{"state format", func(s *Spec) { s.StateFormatVersion = 3 }, "unknown state format version 3"},
	} {
		s := ok
		tc.mut(&s)
		err := s.Validate()
		if !errors.Is(err, ErrBadSpec) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadSpec with %q", tc.name, err, tc.want)
		}
	}
	// State format 1 is Spark's SPARK-26154 rejection for outer joins only.
	s := ok
	s.StateFormatVersion = 1
	if err := s.Validate(); err != nil {
		t.Errorf("inner on state format 1: %v", err)
	}
	s.Type = FullOuter
	want := "join: unsupported operation: The query is using stream-stream FullOuter join with state format version 1 - correctness issue is discovered. Please discard the checkpoint and rerun the query. See SPARK-26154 for more details."
	if err := s.Validate(); err == nil || err.Error() != want {
		t.Errorf("full outer on state format 1: %v", err)
	}
	if s.Mode = gold.Append; s.Validate() == nil {
		t.Error("explicit Append changed the answer")
	}
	for _, name := range []string{"inner", "left_outer", "right_outer", "full_outer", "left_semi", "left_anti", "cross"} {
		typ, err := ParseType(name)
		if err != nil || typ.Name() != name {
			t.Errorf("ParseType(%q) = %v, %v", name, typ, err)
		}
	}
}

func TestInputErrors(t *testing.T) {
	op, err := New(Spec{Type: Inner, NumKeys: 1, Condition: Between(0, sec), LeftWatermark: true, RightWatermark: true})
	if err != nil {
		t.Fatal(err)
	}
	good := func() *Input {
		l, _ := inputsOf([]event{{side: Left, id: 1, key: 1, t: 5}, {side: Left, id: 2, key: 2, t: 6}})
		return l
	}
	for _, tc := range []struct {
		name        string
		mut         func(*Input)
		late, evict int64
		want        string
	}{
		{"keys short", func(in *Input) { in.Keys.Offsets = in.Keys.Offsets[:2] }, 0, 0, "left keys column has 1 rows, want 2"},
		{"rows short", func(in *Input) { in.Rows = gold.Binary{} }, 0, 0, "left rows column has 0 rows, want 2"},
		{"null mask", func(in *Input) { in.KeyNull = []bool{false} }, 0, 0, "key null mask has 1 rows"},
		{"offsets past data", func(in *Input) { in.Rows.Data = in.Rows.Data[:1] }, 0, 0, "offsets run past the data"},
		{"offsets decrease", func(in *Input) { in.Keys.Offsets[1] = 5; in.Keys.Offsets[2] = 1 }, 0, 0, "offset 2 decreases"},
		{"event time", func(in *Input) { in.EventTime[1] = maxEventTime + 1 }, 0, 0, "left row 1: event time"},
		{"watermarks", func(*Input) {}, 5, 4, "want 0 <= late <= eviction"},
	} {
		in := good()
		tc.mut(in)
		_, err := op.ProcessBatch(in, nil, tc.late, tc.evict)
		if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrBadInput with %q", tc.name, err, tc.want)
		}
	}
	if op.StateRows(Left) != 0 {
		t.Errorf("a rejected batch left %d rows in state", op.StateRows(Left))
	}
}

// FuzzParseCondition: any text parses or fails with ErrBadSpec, and what parses prints back
// (Bound.String) to text that parses to the same conjuncts.
func FuzzParseCondition(f *testing.F) {
	for _, s := range []string{"r.t BETWEEN l.t AND l.t + 1h", "l.t < r.t - 5s", "l.t + 2m > r.t AND r.t > l.t", "r.t <= l.t + 3650d", "r.t>=l.t-1.5s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bs, err := ParseCondition(s)
		if err != nil {
			if !errors.Is(err, ErrBadSpec) {
				t.Fatalf("%q: %v does not wrap ErrBadSpec", s, err)
			}
			return
		}
		var parts []string
		for _, b := range bs {
			parts = append(parts, b.String())
		}
		again, err := ParseCondition(strings.Join(parts, " AND "))
		if err != nil || !slices.Equal(again, bs) {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, bs, parts, again, err)
		}
	})
}

// FuzzValidate builds specs from arbitrary bytes: Validate answers with nil or one of the two
// sentinels, never panics, and what it accepts keeps Spark's promises: an outer or semi join's
// preserved side (one of them for full outer) has a state watermark, and an operator runs.
func FuzzValidate(f *testing.F) {
	f.Add([]byte{2, 1, 3, 4, 0, 0, 2, 0})
	f.Add([]byte{5, 1, 1, 3, 1, 8, 4, 8})
	f.Add([]byte{4, 0, 1, 2, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4 {
			return
		}
		s := Spec{Type: Type(b[0] % 9), NumKeys: int(b[1]%3) - 0, Mode: gold.Mode(b[2] % 5),
			LeftWatermark: b[3]&1 != 0, RightWatermark: b[3]&2 != 0, StateFormatVersion: int(b[3]>>2) % 4}
		for p := b[4:]; len(p) >= 2; {
			op := Op(p[0] % 6)
			off, n := binary.Varint(p[1:])
			if n <= 0 {
				break
			}
			s.Condition = append(s.Condition, Bound{op, off})
			p = p[1+n:]
		}
		err := s.Validate()
		if err != nil {
			if !errors.Is(err, ErrUnsupportedOperation) && !errors.Is(err, ErrBadSpec) {
				t.Fatalf("%+v: %v wraps neither sentinel", s, err)
			}
			return
		}
		switch s.Type {
		case LeftOuter, LeftSemi:
			if !s.hasStateValueWatermark(Left) {
				t.Fatalf("accepted %s without a left state watermark: %+v", s.Type, s)
			}
		case RightOuter:
			if !s.hasStateValueWatermark(Right) {
				t.Fatalf("accepted %s without a right state watermark: %+v", s.Type, s)
			}
		case FullOuter:
			if !s.hasStateValueWatermark(Left) && !s.hasStateValueWatermark(Right) {
				t.Fatalf("accepted %s without any state watermark: %+v", s.Type, s)
			}
		case Inner:
		default:
			t.Fatalf("accepted %s", s.Type)
		}
		if s.NumKeys == 0 {
			t.Fatalf("accepted a join without equality: %+v", s)
		}
		op, err := New(s)
		if err != nil {
			t.Fatal(err)
		}
		l, r := inputsOf([]event{{side: Left, id: 1, key: 1, t: 5 * sec}, {side: Right, id: 2, key: 1, t: 6 * sec}})
		if _, err := op.ProcessBatch(l, r, 0, 1000); err != nil {
			t.Fatal(err)
		}
		if _, err := op.ProcessBatch(nil, nil, 1000, maxWatermarkMs); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMatchRange checks the partner ranges against Bound.holds, time by time, for random
// conditions of every form.
func TestMatchRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for round := 0; round < 300; round++ {
		var s Spec
		for n := rng.IntN(4); n > 0; n-- {
			s.Condition = append(s.Condition, Bound{Op(1 + rng.IntN(4)), rng.Int64N(21) - 10})
		}
		t0 := rng.Int64N(41) - 20
		for _, side := range []Side{Left, Right} {
			lo, hi, ok := s.MatchRange(side, t0)
			for x := int64(-100); x <= 100; x++ {
				lt, rt := t0, x
				if side == Right {
					lt, rt = x, t0
				}
				match := true
				for _, b := range s.Condition {
					match = match && b.holds(lt, rt)
				}
				if in := ok && lo <= x && x <= hi; in != match {
					t.Fatalf("%v %s row at %d: partner %d matches %t, range [%d, %d] ok %t", s.Condition, side, t0, x, match, lo, hi, ok)
				}
			}
		}
	}
	s := Spec{Type: LeftOuter, NumKeys: 1, Condition: Between(0, 3600*sec), LeftWatermark: true, RightWatermark: true}
	// JV12: at W = 13:50 the impressions up to 12:49:59.999 are closed, 12:50 is not.
	w := int64(13*3600_000 + 50*60_000)
	if !s.MatchWindowClosed(Left, (w-3600_000-1)*1000, w) || s.MatchWindowClosed(Left, (w-3600_000)*1000, w) {
		t.Error("left window boundary")
	}
	if !s.MatchWindowClosed(Right, (w-1)*1000, w) || s.MatchWindowClosed(Right, w*1000, w) {
		t.Error("right window boundary")
	}
	s.LeftWatermark = false
	if s.MatchWindowClosed(Right, 0, w) {
		t.Error("a side that is never evicted closed")
	}
}

// TestKindString pins the kinds' names (the example's output and the random test's row dumps
// print them) and the fallback for a value that is no kind.
func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{
		0: "Kind(0)", Pair: "pair", LeftUnmatched: "left-unmatched", RightUnmatched: "right-unmatched",
		SemiLeft: "semi", SemiLeft + 1: "Kind(5)", 255: "Kind(255)",
	} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", uint8(k), got, want)
		}
	}
}
