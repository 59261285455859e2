package gold

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// TestSortKeysMatchesBytes: sortKeys (8-byte prefixes after the common prefix, bytes on ties)
// orders keys exactly as comparing their bytes does, for keys sharing long prefixes, keys that
// are prefixes of others, zero bytes, and runs of keys equal in their 8 prefix bytes, in
// batches of keys sorted by comparison and, from radixKeys on, by radix.
func TestSortKeysMatchesBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for trial := range 200 {
		op := mustAgg(t, AggConfig{Window: mustTumbling(t, 5*minute), Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
		prefix := strings.Repeat("device-", rng.IntN(3))
		seen := map[string]bool{}
		var ids []int32
		n := 1 + rng.IntN(300)
		if trial%4 == 0 {
			n = radixKeys + rng.IntN(3000) // sorted by radix
		}
		for range n {
			b := []byte(prefix)
			for range rng.IntN(14) {
				b = append(b, []byte{0, 1, '0', '1', '9', 0xff}[rng.IntN(6)])
			}
			if seen[string(b)] {
				continue
			}
			seen[string(b)] = true
			id, _ := op.internKey(b)
			ids = append(ids, id)
		}
		want := slices.Clone(ids)
		slices.SortFunc(want, func(x, y int32) int { return strings.Compare(op.key(x), op.key(y)) })
		op.sortKeys(ids)
		if !slices.Equal(ids, want) {
			t.Fatalf("trial %d (prefix %q): order differs from the bytes' order", trial, prefix)
		}
	}
}

// TestEmitOrderManyWindows: emitted rows come in window, then key order whether the batch's
// windows span few slides (counted directly), more than maxSortWindows slides (searched), or
// sliding windows with an offset.
func TestEmitOrderManyWindows(t *testing.T) {
	for _, tc := range []struct {
		name             string
		size, slide, off int64
		span             int64
	}{
		{"tumbling", 5 * minute, 5 * minute, 0, 6 * hour},
		{"sliding-offset", 10 * minute, 5 * minute, minute, 6 * hour},
		{"sparse-span", minute, minute, 0, (maxSortWindows + 50) * minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := NewWindowSpec(tc.size, tc.slide, tc.off)
			if err != nil {
				t.Fatal(err)
			}
			op := mustAgg(t, AggConfig{Window: spec, Mode: Append, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
			rng := rand.New(rand.NewPCG(6, 6))
			in := &Input{}
			for range 20_000 {
				in.EventTime = append(in.EventTime, rng.Int64N(tc.span))
				in.Keys.Append([]byte("device-" + string(rune('a'+rng.IntN(26))) + string(rune('a'+rng.IntN(26)))))
			}
			if _, err := op.ProcessBatch(in, 0, 0); err != nil {
				t.Fatal(err)
			}
			res, err := op.ProcessBatch(&Input{}, 0, (tc.span+2*tc.size)/1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) < 1000 || op.NumGroups() != 0 {
				t.Fatalf("%d rows emitted, %d groups left", len(res.Rows), op.NumGroups())
			}
			if !slices.IsSortedFunc(res.Rows, func(x, y OutRow) int {
				return cmp.Or(cmp.Compare(x.Window.Start, y.Window.Start), strings.Compare(x.Key, y.Key))
			}) {
				t.Fatal("rows out of window, key order")
			}
			var n int64
			for _, r := range res.Rows {
				n += r.Aggs[0].N
			}
			if w := int64(len(in.EventTime)) * (tc.size / tc.slide); n != w {
				t.Fatalf("counts sum to %d, want %d", n, w)
			}
		})
	}
}

// TestEmitGrowsOutOnce: a batch that closes many windows reserves gold's columns once
// (growOut) instead of growing them append by append, which allocated about four times their
// final size on the way (Go grows a large slice by 1.25x). The second of two equal emits is
// measured, so the operator's own buffers are warm.
func TestEmitGrowsOutOnce(t *testing.T) {
	if raceEnabled {
		t.Skip("counts allocations, which the race detector adds to; make go-test runs it without -race")
	}
	aggs := []AggSpec{{Fn: Count, Column: -1}, {Fn: Sum, Column: 0}}
	op := mustAgg(t, AggConfig{Window: mustTumbling(t, 5*minute), Mode: Append, NumKeys: 1, Aggs: aggs})
	const keys = 60_000
	var allocated, held uint64
	for round := range 2 {
		in := &Input{Columns: []Column{{Float64: make([]float64, keys)}}}
		for k := range keys {
			in.EventTime = append(in.EventTime, int64(round)*hour+int64(k%300)*second)
			in.Keys.Append(pq.AppendKeyString(nil, "device-"+strconv.Itoa(k)))
		}
		if _, err := op.ProcessBatch(in, 0, 0); err != nil {
			t.Fatal(err)
		}
		out, err := pq.NewBatch(goldSchema(aggs))
		if err != nil {
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		if _, err := op.ProcessBatch(&Input{Columns: []Column{{Float64: []float64{}}}, Out: out}, 0, (int64(round)*hour+10*minute)/1000); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&m1)
		if out.Len() != keys {
			t.Fatalf("round %d: %d rows emitted, want %d", round, out.Len(), keys)
		}
		allocated, held = m1.TotalAlloc-m0.TotalAlloc, 0
		for _, c := range out.Columns {
			held += uint64(8*(cap(c.Int64)+cap(c.Float64)) + cap(c.Data) + 4*cap(c.Offsets))
			for _, ch := range c.Children {
				held += uint64(8 * cap(ch.Int64))
			}
		}
	}
	if allocated > held+held/2 {
		t.Fatalf("emitting %d rows allocated %d bytes for columns that hold %d", keys, allocated, held)
	}
	t.Logf("emit allocated %d bytes, the columns hold %d", allocated, held)
}

// TestPermuteBytes: permuteBytes moves values of every length, short ones (fixed-size copies)
// beside longer ones, nulls and empty values, to where a naive permutation puts them, and
// leaves the rows before from alone.
func TestPermuteBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	c, err := pq.NewColumn(txlog.PrimitiveType{Name: txlog.TypeBinary})
	if err != nil {
		t.Fatal(err)
	}
	var vals [][]byte
	for i := range 300 {
		v := make([]byte, rng.IntN(3*shortBytes))
		for k := range v {
			v[k] = byte(rng.Uint32())
		}
		if i%17 == 0 {
			v = nil
			c.AppendNull()
		} else {
			c.AppendBytes(v)
		}
		vals = append(vals, v)
	}
	const from = 7
	perm := make([]int32, len(vals)-from)
	for i := range perm {
		perm[i] = int32(i)
	}
	rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	var p permBuffers
	if err := p.permute(c, from, perm); err != nil {
		t.Fatal(err)
	}
	for i := range vals {
		want := vals[i]
		if i >= from {
			want = vals[from+int(perm[i-from])]
		}
		if got := c.BytesAt(i); !bytes.Equal(got, want) || c.IsNull(i) != (want == nil) {
			t.Fatalf("row %d: %x (null %v), want %x", i, got, c.IsNull(i), want)
		}
	}
	if int(c.Offsets[len(vals)]) != len(c.Data) {
		t.Errorf("data holds %d bytes, the offsets end at %d", len(c.Data), c.Offsets[len(vals)])
	}
}
