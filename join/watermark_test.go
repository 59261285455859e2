package join

import "testing"

// TestObserveInputNullKeys: a null-key row reaches Spark's watermark node only on a side the
// join preserves (spec §2.1 as amended; found by the PySpark differential test). Each side gets
// a keyed row at 20 s and a null-key row at 100 s, delays 10 s; the next batch's watermark is
// min(left node, right node).
func TestObserveInputNullKeys(t *testing.T) {
	for _, tc := range []struct {
		typ  Type
		want int64 // ms
	}{
		{Inner, 10_000},      // both null rows filtered: min(10, 10)
		{LeftSemi, 10_000},   // the same filters as inner
		{LeftOuter, 10_000},  // left node 90, right 10
		{RightOuter, 10_000}, // left 10, right 90
		{FullOuter, 90_000},  // nothing filtered: min(90, 90)
	} {
		spec := Spec{Type: tc.typ, NumKeys: 1, Condition: Between(-5_000_000, 5_000_000), LeftWatermark: true, RightWatermark: true}
		w, err := NewWatermarks(&spec, 10_000, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		for _, side := range []Side{Left, Right} {
			in := &Input{EventTime: []int64{20_000_000, 100_000_000}, KeyNull: []bool{false, true}}
			in.Keys.Append([]byte("k"))
			in.Keys.Append([]byte("k"))
			w.ObserveInput(side, in)
		}
		if got := w.EndBatch(); got != tc.want {
			t.Errorf("%s: watermark %d ms, want %d", tc.typ.Name(), got, tc.want)
		}
		wantNode := map[Type][2]int64{Inner: {10_000, 10_000}, LeftSemi: {10_000, 10_000},
			LeftOuter: {90_000, 10_000}, RightOuter: {10_000, 90_000}, FullOuter: {90_000, 90_000}}[tc.typ]
		if got := [2]int64{w.Node(Left), w.Node(Right)}; got != wantNode {
			t.Errorf("%s: nodes %v, want %v", tc.typ.Name(), got, wantNode)
		}
	}
}

// TestObserveInputNoNulls: without a KeyNull column every row counts, and a nil input is no rows.
func TestObserveInputNoNulls(t *testing.T) {
	spec := Spec{Type: Inner, NumKeys: 1, Condition: Between(0, 1), LeftWatermark: true, RightWatermark: true}
	w, _ := NewWatermarks(&spec, 0, 0)
	w.ObserveInput(Left, &Input{EventTime: []int64{7_000, 3_000}})
	w.ObserveInput(Right, &Input{EventTime: []int64{9_000}})
	w.ObserveInput(Right, nil)
	if got := w.EndBatch(); got != 7 {
		t.Errorf("watermark %d ms, want 7", got)
	}
}
