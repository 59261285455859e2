package stream

import (
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/gold"
	"github.com/medallion-lake/medallion/stream/spec"
)

// TestShareKeysGroups: time-window aggregations over the same group-by columns (same order)
// share a table; a session window, a global aggregation, other columns or the same columns in
// another order, and an aggregation alone keep tables of their own.
func TestShareKeysGroups(t *testing.T) {
	win, err := gold.Tumbling(5 * 60e6)
	if err != nil {
		t.Fatal(err)
	}
	count := []gold.AggSpec{{Fn: gold.Count, Column: -1}}
	plan := func(name string, keyCols []int, session bool) *aggPlan {
		c := gold.AggConfig{Window: win, Mode: gold.Append, NumKeys: len(keyCols), Aggs: count}
		if session {
			c = gold.AggConfig{Session: &gold.SessionSpec{Gap: 60e6}, Mode: gold.Append, NumKeys: len(keyCols), Aggs: count}
		}
		return &aggPlan{cfg: &spec.Aggregation{Name: name}, agg: c, keyCols: keyCols}
	}
	aps := []*aggPlan{
		plan("a", []int{2}, false),
		plan("session", []int{2}, true),
		plan("b", []int{2}, false),
		plan("global", nil, false),
		plan("ab", []int{2, 3}, false),
		plan("ba", []int{3, 2}, false),
		plan("c", []int{2}, false),
		plan("ab2", []int{2, 3}, false),
		plan("alone", []int{4}, false),
	}
	ops := make([]*gold.Aggregation, len(aps))
	for i, ap := range aps {
		if ops[i], err = gold.NewAggregation(ap.agg); err != nil {
			t.Fatal(err)
		}
	}
	shares, of, err := shareKeys(aps, ops)
	if err != nil {
		t.Fatal(err)
	}
	if len(shares) != 2 || !slices.Equal(shares[0].aggs, []int{0, 2, 6}) || !slices.Equal(shares[1].aggs, []int{4, 7}) {
		t.Fatalf("shares %v %v", shares, of)
	}
	if want := []int{0, -1, 0, -1, 1, -1, 0, 1, -1}; !slices.Equal(of, want) {
		t.Fatalf("share of each aggregation %v, want %v", of, want)
	}
}
