package pq_test

import (
	"bytes"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
)

func TestRoundTripAllTypes(t *testing.T) {
	for _, comp := range []string{pq.CompressionSnappy, pq.CompressionZstd} {
		t.Run(comp, func(t *testing.T) {
			b, want := pqtest.AllTypesBatch(t)
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			data, stats, err := pq.EncodeFile(b.Schema, []*pq.Batch{b}, pq.WriteOptions{Compression: comp})
			if err != nil {
				t.Fatal(err)
			}
			if len(stats) == 0 {
				t.Fatal("no stats")
			}
			got, err := pq.DecodeFile(bytes.NewReader(data), int64(len(data)), b.Schema)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Len() != len(want) {
				t.Fatalf("got %d batches", len(got))
			}
			for r := range want {
				row := got[0].Row(r)
				for k := range want[r] {
					if !reflect.DeepEqual(row[k], want[r][k]) {
						t.Errorf("row %d column %s: got %#v, want %#v", r, b.Schema.Fields[k].Name, row[k], want[r][k])
					}
				}
			}
		})
	}
}

func TestAppendValueRoundTrip(t *testing.T) {
	b, want := pqtest.AllTypesBatch(t)
	out, _ := pq.NewBatch(b.Schema)
	for r := range want {
		for k, v := range want[r] {
			if err := out.Columns[k].AppendValue(v); err != nil {
				t.Fatalf("row %d column %s: %v", r, b.Schema.Fields[k].Name, err)
			}
		}
	}
	for r := range want {
		if !reflect.DeepEqual(out.Row(r), want[r]) {
			t.Errorf("row %d: got %v, want %v", r, out.Row(r), want[r])
		}
	}
	if err := out.Columns[2].AppendValue(int64(math.MaxInt32) + 1); err == nil {
		t.Error("overflow accepted")
	}
	if err := out.Columns[0].AppendValue(3.5); err == nil {
		t.Error("a float accepted in a string column")
	}
}

func TestCompareValues(t *testing.T) {
	cases := []struct {
		a, b any
		want int
		ok   bool
	}{
		{int64(1), int64(2), -1, true},
		{"b", "a", 1, true},
		{time.Unix(5, 0), time.Unix(5, 0), 0, true},
		{pq.Decimal{Unscaled: pq.DecimalFromInt64(150), Scale: 2}, pq.Decimal{Unscaled: pq.DecimalFromInt64(15), Scale: 1}, 0, true},
		{false, true, -1, true},
		{[]byte{1}, []byte{1, 0}, -1, true},
		{int64(1), int32(1), 0, false},
		{[]any{}, []any{}, 0, false},
	}
	for _, c := range cases {
		got, ok := pq.CompareValues(c.a, c.b)
		if got != c.want || ok != c.ok {
			t.Errorf("CompareValues(%v, %v) = %d %v, want %d %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

// FuzzDecodeFile feeds the reader damaged and arbitrary files: an error, never a panic.
func FuzzDecodeFile(f *testing.F) {
	b, _ := pqtest.AllTypesBatch(f)
	data, _, err := pq.EncodeFile(b.Schema, []*pq.Batch{b}, pq.WriteOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)-10])
	mid := append([]byte{}, data...)
	mid[len(mid)/2] ^= 0x55
	f.Add(mid)
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, in []byte) {
		pq.DecodeFile(bytes.NewReader(in), int64(len(in)), b.Schema) // an error, never a panic
	})
}
