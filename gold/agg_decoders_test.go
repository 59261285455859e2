package gold

import (
	"bytes"
	"fmt"
	"testing"
)

// The aggregate state decoder (DecodeAggValue) for groups whose every input is null: the
// sketches are then empty (or absent) and N is 0, a case the encoder sees only when a window
// holds nulls only. The state must round-trip byte for byte, keep its result (SQL NULL or 0),
// and still merge with a non-empty state afterwards.
func TestDecodersAggAllNullGroup(t *testing.T) {
	const n = 5
	nulls := Column{Int64: make([]int64, n), Valid: make([]bool, n)}
	floatNulls := Column{Float64: make([]float64, n), Valid: make([]bool, n)}
	ids := Column{Int64: []int64{1, 2, 3, 4, 5}}
	specs := []AggSpec{
		{Fn: Count, Column: 0},
		{Fn: Sum, Column: 0},
		{Fn: Avg, Column: 0},
		{Fn: Min, Column: 0},
		{Fn: Max, Column: 0},
		{Fn: ApproxCountDistinct, Column: 0},
		{Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5, 0.9}},
	}
	for _, spec := range specs {
		for _, col := range []Column{nulls, floatNulls} {
			spec := spec
			switch spec.Fn {
			case Sum, Avg, Min, Max:
				spec.Int = col.Int64 != nil
			}
			t.Run(fmt.Sprintf("%s/float=%v", spec.Fn, col.Float64 != nil), func(t *testing.T) {
				v := sketchAgg(t, spec, col, n)
				want := fmt.Sprint(v.Result(&spec))
				enc, err := v.AppendBinary(nil)
				if err != nil {
					t.Fatal(err)
				}
				got, rest, err := DecodeAggValue(enc)
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				if len(rest) != 0 {
					t.Fatalf("%d bytes left", len(rest))
				}
				if r := fmt.Sprint(got.Result(&spec)); r != want {
					t.Fatalf("result %s after decoding, %s before", r, want)
				}
				re, err := got.AppendBinary(nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(re, enc) {
					t.Fatalf("re-encoding differs")
				}
				// The decoded empty state merges with a state that has values, both ways.
				if col.Float64 != nil {
					return
				}
				full := sketchAgg(t, spec, ids, n)
				wantMerged := fmt.Sprint(full.Result(&spec))
				a := got
				if err := a.Merge(&full); err != nil {
					t.Fatalf("empty.Merge(full): %v", err)
				}
				if r := fmt.Sprint(a.Result(&spec)); r != wantMerged {
					t.Fatalf("empty.Merge(full) = %s, want %s", r, wantMerged)
				}
				full2 := sketchAgg(t, spec, ids, n)
				got2, _, _ := DecodeAggValue(enc)
				if err := full2.Merge(&got2); err != nil {
					t.Fatalf("full.Merge(empty): %v", err)
				}
				if r := fmt.Sprint(full2.Result(&spec)); r != wantMerged {
					t.Fatalf("full.Merge(empty) = %s, want %s", r, wantMerged)
				}
			})
		}
	}
}

// TestDecodersSnapshotEmptyCases: an operator snapshot of no groups, and of groups whose key is
// empty (a global aggregation) and whose every input was null (empty or absent sketches),
// restores to an operator whose snapshot is byte-identical and that goes on aggregating.
func TestDecodersSnapshotEmptyCases(t *testing.T) {
	aggs := []AggSpec{
		{Fn: Count, Column: -1}, {Fn: Count, Column: 0}, {Fn: Sum, Column: 0}, {Fn: Min, Column: 0},
		{Fn: Avg, Column: 0}, {Fn: ApproxCountDistinct, Column: 0}, {Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5}},
	}
	for _, keys := range []int{0, 1} {
		cfg := AggConfig{Window: mustTumbling(t, hour), Mode: Append, NumKeys: keys, Aggs: aggs}
		t.Run(fmt.Sprintf("keys=%d", keys), func(t *testing.T) {
			a := mustAgg(t, cfg)
			snap, err := a.AppendSnapshot(nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := RestoreAggregation(cfg, snap); err != nil {
				t.Fatalf("snapshot of no groups: %v", err)
			}
			const n = 4
			in := &Input{EventTime: []int64{at(12, 1), at(12, 2), at(13, 1), at(13, 2)},
				Columns: []Column{{Float64: make([]float64, n), Valid: make([]bool, n)}}}
			for j := 0; j < n; j++ {
				if keys > 0 {
					in.Keys.Append([]byte{}) // an empty key
				}
			}
			if _, err := a.ProcessBatch(in, 0, 0); err != nil {
				t.Fatal(err)
			}
			snap, err = a.AppendSnapshot(nil)
			if err != nil {
				t.Fatal(err)
			}
			b, err := RestoreAggregation(cfg, snap)
			if err != nil {
				t.Fatalf("snapshot of all-null groups: %v", err)
			}
			again, err := b.AppendSnapshot(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(snap, again) {
				t.Fatal("restore then snapshot changed the bytes")
			}
			// Both go on identically with values.
			more := &Input{EventTime: []int64{at(12, 3), at(13, 3)}, Columns: []Column{{Float64: []float64{1.5, 2.5}}}}
			if keys > 0 {
				more.Keys.Append([]byte{})
				more.Keys.Append([]byte{})
			}
			ra, err := a.ProcessBatch(more, 0, at(14, 0))
			if err != nil {
				t.Fatal(err)
			}
			rb, err := b.ProcessBatch(more, 0, at(14, 0))
			if err != nil {
				t.Fatal(err)
			}
			if len(ra.Rows) != 2 || !bytes.Equal(rowsDump(t, ra.Rows), rowsDump(t, rb.Rows)) {
				t.Fatalf("restored operator emits differently (%d rows, %d rows)", len(ra.Rows), len(rb.Rows))
			}
		})
	}
}
