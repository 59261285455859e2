package gold

import (
	"bytes"
	"math"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// TestAppendExactSum: a float sum's columns written by AppendExactSum are those
// AppendAggregate and AppendExact write from the same state: no input, zero, cancelled
// terms, tiny and huge magnitudes, infinities and NaN.
func TestAppendExactSum(t *testing.T) {
	spec := &AggSpec{Fn: Sum, Column: 0, Name: "s"}
	newCol := func(name string) *pq.Column {
		c, err := pq.NewColumn(txlog.PrimitiveType{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	gotF, gotX := newCol(txlog.TypeDouble), newCol(txlog.TypeBinary)
	wantF, wantX := newCol(txlog.TypeDouble), newCol(txlog.TypeBinary)
	var scratch []byte
	for _, in := range [][]float64{
		nil, {0}, {1e308, 1e308, -1e308}, {0.1, 0.2, 0.3}, {5e-324, 1}, {-2.5, 2.5},
		{math.Inf(1), 1}, {math.Inf(1), math.Inf(-1)}, {math.NaN()}, {1 << 60, 3, -1 << 60},
	} {
		var x Exact
		for _, f := range in {
			x.Add(f)
		}
		n := int64(len(in))
		AppendExactSum(gotF, gotX, n, &x)
		v := AggValue{Fn: Sum, N: n, X: x, F: x.Float64()}
		if _, _, err := AppendAggregate([]*pq.Column{wantF}, spec, &v, nil); err != nil {
			t.Fatal(err)
		}
		scratch = AppendExact(wantX, &v, scratch)
	}
	for i := range wantF.Len {
		a, b := pq.EncodeRow(nil, []*pq.Column{gotF, gotX}, i), pq.EncodeRow(nil, []*pq.Column{wantF, wantX}, i)
		if !bytes.Equal(a, b) {
			t.Fatalf("row %d: AppendExactSum wrote %x, AppendAggregate and AppendExact %x", i, a, b)
		}
	}
}
