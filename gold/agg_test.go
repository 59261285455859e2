package gold

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
)

// sketchAgg aggregates xs (as int64 ids or float values) into one group and returns its value.
func sketchAgg(t *testing.T, spec AggSpec, col Column, n int) AggValue {
	t.Helper()
	op := mustAgg(t, AggConfig{Window: mustTumbling(t, hour), Mode: Complete, Aggs: []AggSpec{spec}})
	in := &Input{EventTime: make([]int64, n), Columns: []Column{col}}
	res, err := op.ProcessBatch(in, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	return res.Rows[0].Aggs[0]
}

func TestApproxCountDistinct(t *testing.T) {
	spec := AggSpec{Fn: ApproxCountDistinct, Column: 0, Name: "acd", RSD: 0.02}
	ids := make([]int64, 20000)
	for i := range ids {
		ids[i] = int64(i % 10000) // 10k distinct, each twice
	}
	a := sketchAgg(t, spec, Column{Int64: ids[:10000]}, 10000)
	b := sketchAgg(t, spec, Column{Int64: ids[5000:15000]}, 10000) // overlaps a by half
	if err := a.Merge(&b); err != nil {
		t.Fatal(err)
	}
	got := a.Result(&spec).(int64)
	if math.Abs(float64(got)-10000)/10000 > 3*0.02 {
		t.Fatalf("estimate %d for 10000 distinct (3 sigma at rsd 0.02)", got)
	}
	var strs Binary
	for _, s := range []string{"x", "y", "x", "z", "y"} {
		strs.Append([]byte(s))
	}
	v := sketchAgg(t, spec, Column{Bytes: &strs}, 5)
	if got := v.Result(&spec); got != int64(3) {
		t.Fatalf("3 distinct strings estimated as %v", got)
	}
}

func TestApproxPercentile(t *testing.T) {
	spec := AggSpec{Fn: ApproxPercentile, Column: 0, Name: "p", Percentiles: []float64{0.5, 0.99}, RelativeAccuracy: 0.01}
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	a := sketchAgg(t, spec, Column{Float64: xs[:500]}, 500)
	b := sketchAgg(t, spec, Column{Float64: xs[500:]}, 500)
	if err := a.Merge(&b); err != nil {
		t.Fatal(err)
	}
	got := a.Result(&spec).([]float64)
	for i, want := range []float64{500, 990} {
		if math.Abs(got[i]-want)/want > 0.02 {
			t.Fatalf("p%v = %v, want %v within 2%%", spec.Percentiles[i], got[i], want)
		}
	}
}

func TestMinMaxNaNOrdering(t *testing.T) {
	for _, tc := range []struct {
		fn   Func
		a, b float64
		want float64
	}{
		{Min, 1, 2, 1}, {Min, math.NaN(), 2, 2}, {Min, 2, math.NaN(), 2},
		{Max, 1, 2, 2}, {Max, math.NaN(), 2, math.NaN()}, {Max, 2, math.NaN(), math.NaN()},
	} {
		got := pickFloat(tc.fn, tc.a, tc.b)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("%s(%v,%v) = %v, want %v", tc.fn, tc.a, tc.b, got, tc.want)
		}
	}
}

func TestAggValueEncodingRoundTrip(t *testing.T) {
	acd := AggSpec{Fn: ApproxCountDistinct, Column: 0}
	pct := AggSpec{Fn: ApproxPercentile, Column: 0, Percentiles: []float64{0.5}}
	ids := []int64{1, 2, 3, 4, 5, 1000, -7}
	vals := []AggValue{
		{Fn: Count, N: 42},
		{Fn: Sum, Int: true, N: 3, I: -9},
		{Fn: Avg, N: 2, F: 3.5, X: ExactOf(3.5)},
		{Fn: Min, N: 1, F: math.Inf(-1)},
		sketchAgg(t, acd, Column{Int64: ids}, len(ids)),
		sketchAgg(t, pct, Column{Int64: ids}, len(ids)),
	}
	for _, v := range vals {
		enc, err := v.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		got, rest, err := DecodeAggValue(append(enc[len("prefix"):], 0xEE))
		if err != nil {
			t.Fatalf("%s: %v", v.Fn, err)
		}
		if !bytes.Equal(rest, []byte{0xEE}) {
			t.Fatalf("%s: rest %x", v.Fn, rest)
		}
		re, err := got.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(re, enc[len("prefix"):]) {
			t.Fatalf("%s: re-encoding differs", v.Fn)
		}
		if v.Fn == ApproxPercentile && got.Result(&pct).([]float64)[0] != v.Result(&pct).([]float64)[0] {
			t.Fatalf("percentile changed across encoding")
		}
		if v.Fn == ApproxCountDistinct && got.Result(&acd) != v.Result(&acd) {
			t.Fatalf("distinct count changed across encoding")
		}
	}
}

func FuzzDecodeAggValue(f *testing.F) {
	for _, v := range []AggValue{{Fn: Count, N: 1}, {Fn: Max, Int: true, N: 2, I: 7}} {
		b, _ := v.AppendBinary(nil)
		f.Add(b)
	}
	f.Add([]byte{byte(ApproxCountDistinct), 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3})
	f.Add([]byte{byte(ApproxPercentile), 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, err := DecodeAggValue(b)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v is not ErrBadState", err)
			}
			return
		}
		if _, err := v.AppendBinary(nil); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMergeIntoEmptyCopiesSketch: a value without a sketch that merges one takes a copy, so
// that merging more into the source afterwards leaves it as it was (and the other way round).
func TestMergeIntoEmptyCopiesSketch(t *testing.T) {
	acd := AggSpec{Fn: ApproxCountDistinct, Column: 0, Name: "acd", RSD: 0.02}
	pct := AggSpec{Fn: ApproxPercentile, Column: 0, Name: "p", Percentiles: []float64{0.5}, RelativeAccuracy: 0.01}
	for _, c := range []struct {
		spec        AggSpec
		first, more Column
	}{
		{acd, Column{Int64: []int64{1, 2, 3}}, Column{Int64: []int64{4, 5, 6}}},
		{pct, Column{Float64: []float64{1, 2, 3}}, Column{Float64: []float64{100, 200, 300}}},
	} {
		src := sketchAgg(t, c.spec, c.first, 3)
		more := sketchAgg(t, c.spec, c.more, 3)
		empty := AggValue{Fn: src.Fn, Int: src.Int}
		if err := empty.Merge(&src); err != nil {
			t.Fatal(err)
		}
		before := fmt.Sprint(empty.Result(&c.spec))
		if err := src.Merge(&more); err != nil {
			t.Fatal(err)
		}
		if after := fmt.Sprint(empty.Result(&c.spec)); after != before {
			t.Errorf("%s: the merged-into value changed from %s to %s when its source merged more", c.spec.Fn, before, after)
		}
	}
}
