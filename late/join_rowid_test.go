package late

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestMergeLateJoinRowIdentity: merge-late compares rows by value, so its row identity must
// tell apart rows that differ in any one column, of any kind silver can hold. Each pair of
// left rows below is identical but for one column (decimal, struct, -0 against 0, a NaN
// payload, date, timestamp_ntz, binary, boolean, float, array); the old identity (the key
// encoding) wrote decimal and nested values as null and normalized -0 and NaN, so each pair
// counted as two copies of one value and the joined table got one row's values twice.
// Pairs keyed a..j are late with a late partner; pairs keyed A..J are on time (the stream
// buffers them and, in left_outer, writes them null-extended once their window closes) and
// their partner is late, so merge-late must pair each row with its own values and then
// recognise the stream's null-extended row of each as a row it replaces.
func TestMergeLateJoinRowIdentity(t *testing.T) {
	for _, typ := range []string{"inner", "left_outer"} {
		t.Run(typ, func(t *testing.T) {
			s := newJoinSimSchemas(t, mem.New(), simJoin(typ, -10*time.Second, 10*time.Second, 10*time.Second, 10*time.Second), wideLeftSchema, rightSchema)
			base := xvals{amount: 100, tag: "x", score: 1.5, ratio: 0.5, day: 19844, seen: 1_714_564_800_000_000, blob: "\x00\x01", flag: true, labels: []string{"p", "q"}}
			variants := []func(x *xvals){
				func(x *xvals) { x.amount = 200 },                                     // decimal(10,2): 1.00 against 2.00
				func(x *xvals) { x.tag = "y" },                                        // a struct's field
				func(x *xvals) { x.score = math.Copysign(0, -1) },                     // -0 against base's 0 below
				func(x *xvals) { x.score = math.Float64frombits(0x7ff8000000000001) }, // another NaN payload
				func(x *xvals) { x.day++ },                                            // date
				func(x *xvals) { x.seen++ },                                           // timestamp_ntz
				func(x *xvals) { x.blob = "\x00\x02" },                                // binary
				func(x *xvals) { x.flag = false },                                     // boolean
				func(x *xvals) { x.ratio = 0.25 },                                     // float
				func(x *xvals) { x.labels = []string{"p"} },                           // array
			}
			// The first element of each pair: base, with score 0 for the -0 pair and the
			// canonical NaN for the NaN pair.
			firsts := make([]xvals, len(variants))
			for i := range firsts {
				firsts[i] = base
				firsts[i].labels = append([]string(nil), base.labels...)
			}
			firsts[2].score = 0
			firsts[3].score = math.NaN()
			sec := func(id, k string, v int64, x *xvals) jrow { return jrow{id: id, ad: ad(k), t: v * 1_000_000, x: x} }
			pair := func(k string, v int64, i int) []jrow {
				a, b := firsts[i], firsts[i]
				b.labels = append([]string(nil), a.labels...)
				variants[i](&b)
				// Same id, key and time: the rows differ only in the varied column.
				return []jrow{sec("L", k, v, &a), sec("L", k, v, &b)}
			}

			// On time: the stream buffers pairs A..J (window 90..110 still open at W=90).
			var onTime []jrow
			for i := range variants {
				onTime = append(onTime, pair(string(rune('A'+i)), 100, i)...)
			}
			s.step(onTime, []jrow{sec("R0", "z", 100, nil)}) // W = 90
			// Late: each pair at 50 and its partner at 52 (window 40..60), and each on-time
			// pair's partner at 90 (late: 90 <= W).
			var lateL, lateR []jrow
			for i := range variants {
				k := string(rune('a' + i))
				lateL = append(lateL, pair(k, 50, i)...)
				lateR = append(lateR, sec("R"+k, k, 52, nil), sec("R"+string(rune('A'+i)), string(rune('A'+i)), 90, nil))
			}
			s.step(lateL, lateR)
			rep := s.merge()
			if rep.LateRows != int64(len(lateL)+len(lateR)) || rep.PairsAdded == 0 || rep.Commit == nil {
				t.Fatalf("merge: %+v, want %d late rows, pairs added, a commit", rep, len(lateL)+len(lateR))
			}
			s.checkJ("after merge-late")

			// The stream evicts the on-time pairs (left_outer: null-extended, as it never saw
			// their late partner); the next merge replaces those rows.
			s.step([]jrow{sec("Z2", "z", 200, nil)}, []jrow{sec("R2", "z", 200, nil)}) // W = 190
			s.merge()
			s.checkJ("after the window closed")
			want := s.joinedRows()
			again := s.merge()
			if again.Commit != nil || again.PairsAdded+again.NullRowsAdded+again.NullRowsReplaced != 0 {
				t.Fatalf("rerun changed the table: %+v", again)
			}
			if got := s.joinedRows(); !slices.Equal(got, want) {
				t.Fatalf("after the rerun:\n%s", diffLines(got, want))
			}
		})
	}
}
