package stream

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestFilterBatchMatchesTableFilter checks the pre-sized column filter against table's
// row-by-row Filter on every flat type, with nulls, for random keep masks.
func TestFilterBatchMatchesTableFilter(t *testing.T) {
	prim := func(n, typ string) txlog.StructField {
		return txlog.StructField{Name: n, Type: txlog.PrimitiveType{Name: typ}, Nullable: true}
	}
	schema := &txlog.StructType{Fields: []txlog.StructField{prim("s", txlog.TypeString), prim("l", txlog.TypeLong),
		prim("i", txlog.TypeInteger), prim("d", txlog.TypeDouble), prim("f", txlog.TypeFloat), prim("b", txlog.TypeBoolean),
		prim("t", txlog.TypeTimestamp), {Name: "m", Type: txlog.DecimalType{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "a", Type: txlog.ArrayType{ElementType: txlog.PrimitiveType{Name: txlog.TypeLong}}, Nullable: true}}}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, nested := range []bool{false, true} {
		sc := schema
		if !nested {
			sc = &txlog.StructType{Fields: schema.Fields[:8]}
		}
		b, err := table.NewBatch(sc)
		if err != nil {
			t.Fatal(err)
		}
		for r := range 200 {
			for ci, c := range b.Columns {
				if rng.IntN(5) == 0 {
					c.AppendNull()
					continue
				}
				switch ci {
				case 0:
					c.AppendString(string(rune('a' + r%26)))
				case 1, 6:
					c.AppendInt64(int64(r))
				case 2:
					c.AppendInt32(int32(r))
				case 3:
					c.AppendFloat64(float64(r) / 3)
				case 4:
					c.AppendFloat32(float32(r) / 3)
				case 5:
					c.AppendBool(r%2 == 0)
				case 7:
					c.AppendDecimal(table.DecimalFromInt64(int64(r)))
				case 8:
					c.Children[0].AppendInt64(int64(r))
					c.AppendList()
				}
			}
		}
		keep := make([]bool, b.Len())
		cnt := 0
		for i := range keep {
			keep[i] = rng.IntN(3) > 0
			if keep[i] {
				cnt++
			}
		}
		got, want := filterBatch(b, keep, cnt), b.Filter(keep)
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
		if got.Len() != cnt || want.Len() != cnt {
			t.Fatalf("rows %d, %d; want %d", got.Len(), want.Len(), cnt)
		}
		for i := range cnt {
			g, w := table.AppendJSONRow(nil, got, i), table.AppendJSONRow(nil, want, i)
			if !slices.Equal(g, w) {
				t.Fatalf("row %d: %s, want %s", i, g, w)
			}
		}
	}
}

func TestClusterTimes(t *testing.T) {
	const m = 60_000_000 // a minute in µs
	for _, tc := range []struct {
		name      string
		times     []int64
		maxRanges int
		want      [][2]int64
	}{
		{"one", []int64{5}, 4, [][2]int64{{5, 5}}},
		{"burst and stragglers", []int64{100 * m, 3, 10*m + 1, 10 * m, 10*m + 30_000_000, 11 * m}, 8,
			[][2]int64{{3, 3}, {10 * m, 11 * m}, {100 * m, 100 * m}}},
		{"gap at exactly one minute joins", []int64{0, m, 2*m + 1}, 8, [][2]int64{{0, m}, {2*m + 1, 2*m + 1}}},
		{"too many ranges: the gap doubles", []int64{0, 3 * m, 6 * m, 20 * m}, 2, [][2]int64{{0, 6 * m}, {20 * m, 20 * m}}},
	} {
		got := clusterTimes(slices.Clone(tc.times), m, tc.maxRanges)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Every time lies in exactly one range; ranges are ascending and disjoint.
	rng := rand.New(rand.NewPCG(3, 4))
	times := make([]int64, 500)
	for i := range times {
		times[i] = rng.Int64N(1000 * m)
	}
	ranges := clusterTimes(slices.Clone(times), m, 16)
	if len(ranges) > 16 {
		t.Fatalf("%d ranges, want at most 16", len(ranges))
	}
	for i := 1; i < len(ranges); i++ {
		if ranges[i][0] <= ranges[i-1][1] {
			t.Fatalf("ranges %v and %v overlap or are out of order", ranges[i-1], ranges[i])
		}
	}
	for _, x := range times {
		n := 0
		for _, r := range ranges {
			if r[0] <= x && x <= r[1] {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("time %d lies in %d ranges", x, n)
		}
	}
}
