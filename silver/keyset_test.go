package silver

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// TestKeySetAgainstMap checks keySet against a plain map for sets from empty to past the
// bitset's first growth, on string and integer key columns with nulls, with absent keys that
// share long prefixes with present ones.
func TestKeySetAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []string{txlog.TypeString, txlog.TypeLong, txlog.TypeDouble} {
		for _, n := range []int{0, 1, 7, 300, 5000} {
			// Column rows: every candidate value 0..4n+9, then a null.
			col, err := pq.NewColumn(txlog.PrimitiveType{Name: typ})
			if err != nil {
				t.Fatal(err)
			}
			rows := 4*n + 10
			for i := range rows {
				switch typ {
				case txlog.TypeString:
					col.AppendString(fmt.Sprintf("evt-%08d", i))
				case txlog.TypeLong:
					col.AppendInt64(int64(i) << 20)
				default:
					col.AppendFloat64(float64(i) / 3)
				}
			}
			col.AppendNull()
			encode := func(i int) string { return string(pq.AppendKeyPart(nil, col, i)) }
			in := map[string]bool{}
			s := newKeySet(n)
			var scratch []byte
			for len(in) < n {
				i := rng.IntN(rows + 1)
				if !in[encode(i)] {
					in[encode(i)] = true
					s.add([]byte(encode(i)), firstHash(col, i, &scratch))
				}
			}
			for i := range rows + 1 {
				got := s.mayHave(firstHash(col, i, &scratch)) && s.keys[encode(i)]
				if got != in[encode(i)] {
					t.Fatalf("%s, n=%d: row %d in the set = %v, want %v", typ, n, i, got, in[encode(i)])
				}
				if in[encode(i)] && !s.mayHave(firstHash(col, i, &scratch)) {
					t.Fatalf("%s, n=%d: the bitset turns away row %d, which is in the set", typ, n, i)
				}
			}
		}
	}
}
