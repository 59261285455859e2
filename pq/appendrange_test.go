package pq_test

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// AppendRange must leave a batch exactly as AppendRow row by row does, whatever the kinds,
// the nulls (a struct's, a list's, a null slot holding a value) and the ranges.
func TestAppendRangeEqualsAppendRow(t *testing.T) {
	rows := payloadBatch(t)
	src, err := pq.NewBatch(payloadSchema())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 35))
	for range 300 {
		src.AppendRow(rows, rng.IntN(rows.Len()))
	}
	// A reader may leave a value in a null row's slot: AppendRow does not copy it.
	dirty := src.Len()
	src.AppendRow(rows, 0)
	for _, c := range src.Columns[:10] {
		for len(c.Nulls) < c.Len {
			c.Nulls = append(c.Nulls, false)
		}
		c.Nulls[dirty] = true
	}
	for trial := range 200 {
		byRow, err := pq.NewBatch(payloadSchema())
		if err != nil {
			t.Fatal(err)
		}
		byRange, err := pq.NewBatch(payloadSchema())
		if err != nil {
			t.Fatal(err)
		}
		// A few runs, each after a row appended by itself, as a rewrite interleaves them.
		for range 1 + rng.IntN(4) {
			lo := rng.IntN(src.Len())
			hi := lo + rng.IntN(src.Len()-lo+1)
			if trial%2 == 0 {
				hi = max(hi, dirty+1)
				lo = min(lo, dirty)
			}
			one := rng.IntN(rows.Len())
			byRow.AppendRow(rows, one)
			byRange.AppendRow(rows, one)
			for r := lo; r < hi; r++ {
				byRow.AppendRow(src, r)
			}
			byRange.AppendRange(src, lo, hi)
		}
		if !reflect.DeepEqual(byRow.Columns, byRange.Columns) {
			for k := range byRow.Columns {
				if !reflect.DeepEqual(byRow.Columns[k], byRange.Columns[k]) {
					t.Fatalf("trial %d: column %s differs:\nby row   %+v\nby range %+v", trial, src.Schema.Fields[k].Name, byRow.Columns[k], byRange.Columns[k])
				}
			}
		}
	}
}

// BenchmarkAppendRange copies a gold-like row group (window struct, key string, counts and an
// exact-sum binary) into a batch: row by row, as the rewrite did, and in one range.
func BenchmarkAppendRange(b *testing.B) {
	rows := payloadBatch(b)
	src, err := pq.NewBatch(payloadSchema())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 1 << 16 {
		src.AppendRow(rows, 2*(i%2)) // rows 0 and 2: values, no nulls
	}
	out, err := pq.NewBatch(payloadSchema())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("row", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			out.Reset()
			for r := range src.Len() {
				out.AppendRow(src, r)
			}
		}
	})
	b.Run("range", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			out.Reset()
			out.AppendRange(src, 0, src.Len())
		}
	})
}
