package gold

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestOperatorAgainstNaiveOracle runs random out-of-order batches (sliding windows with a start
// offset, several keys, no-data batches) through the operator in Append and Update modes and
// through a direct transcription of spec §3.3-3.4 that scans every window of every row
// without WindowSpec.Assign. Emitted rows, late rows and the group-level drop counter must match.
func TestOperatorAgainstNaiveOracle(t *testing.T) {
	const size, slide, offset = 10 * minute, 4 * minute, minute
	spec, err := NewWindowSpec(size, slide, offset)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []Mode{Append, Update} {
		t.Run(mode.String(), func(t *testing.T) {
			op := mustAgg(t, AggConfig{Window: spec, Mode: mode, NumKeys: 1, Aggs: []AggSpec{{Fn: Count, Column: -1}}})
			type gk struct {
				start int64
				key   string
			}
			state := map[gk]int64{}
			rng := rand.New(rand.NewPCG(9, uint64(mode)))
			wm, maxSeen := int64(0), int64(0)
			prevWM := int64(0)
			clock := at(10, 0)
			var totalLate, totalRows int
			for b := 0; b < 400; b++ {
				in := &Input{}
				if rng.IntN(4) != 0 { // some batches carry no data
					for i := 0; i < 1+rng.IntN(30); i++ {
						ts := clock - rng.Int64N(25*minute)
						in.EventTime = append(in.EventTime, ts)
						in.Keys.Append([]byte{byte('a' + rng.IntN(4))})
					}
				}
				clock += rng.Int64N(2 * minute)
				late, evict := prevWM, wm
				res, err := op.ProcessBatch(in, late, evict)
				if err != nil {
					t.Fatal(err)
				}
				// Oracle: every start = offset + k*slide with start <= t < start+size.
				var wantLate []int32
				lateGroups := map[gk]bool{}
				touched := map[gk]bool{}
				for i, ts := range in.EventTime {
					key := string(in.Keys.Value(i))
					isLate := false
					k0 := (ts-offset)/slide - size/slide - 2
					for k := k0; k <= k0+size/slide+4; k++ {
						s := offset + k*slide
						if !(s <= ts && ts < s+size) {
							continue
						}
						if s+size <= late*1000 {
							isLate = true
							lateGroups[gk{s, key}] = true
							continue
						}
						state[gk{s, key}]++
						touched[gk{s, key}] = true
					}
					if isLate {
						wantLate = append(wantLate, int32(i))
					}
				}
				var want []string
				if mode == Update {
					for g := range touched {
						want = append(want, fmt.Sprintf("%d/%s=%d", g.start, g.key, state[g]))
					}
				}
				for g, n := range state {
					if g.start+size <= evict*1000 {
						if mode == Append {
							want = append(want, fmt.Sprintf("%d/%s=%d", g.start, g.key, n))
						}
						delete(state, g)
					}
				}
				var got []string
				for _, r := range res.Rows {
					got = append(got, fmt.Sprintf("%d/%s=%d", r.Window.Start, r.Key, r.Aggs[0].N))
				}
				// Rows come ordered by window, then key bytes (keys of evicted groups too).
				if !slices.IsSortedFunc(res.Rows, func(x, y OutRow) int {
					return cmp.Or(cmp.Compare(x.Window.Start, y.Window.Start), cmp.Compare(x.Window.End, y.Window.End), strings.Compare(x.Key, y.Key))
				}) {
					t.Fatalf("batch %d: rows out of order: %v", b, got)
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) || !slices.Equal(res.LateRows, wantLate) || res.NumRowsDroppedByWatermark != int64(len(lateGroups)) {
					t.Fatalf("batch %d (late %d evict %d):\n rows %v\nwant %v\n late %v want %v, dropped %d want %d",
						b, late, evict, got, want, res.LateRows, wantLate, res.NumRowsDroppedByWatermark, len(lateGroups))
				}
				totalLate += len(wantLate)
				totalRows += len(want)
				if op.NumGroups() != len(state) {
					t.Fatalf("batch %d: %d groups in state, oracle %d", b, op.NumGroups(), len(state))
				}
				// Watermark: max event time so far minus a 5-minute delay, never backwards.
				for _, ts := range in.EventTime {
					maxSeen = max(maxSeen, ts/1000)
				}
				prevWM = wm
				wm = max(wm, maxSeen-5*60*1000)
			}
			if totalLate < 50 || totalRows < 50 {
				t.Fatalf("workload too tame: %d late rows, %d emitted rows", totalLate, totalRows)
			}
		})
	}
}

// TestSessionsIndependentOfBatching: in Complete mode (no late filter), streaming sessions
// built batch by batch, with fusion of stored sessions, equal the batch sessionization of all
// rows at once (batchSessions), and so do their counts.
func TestSessionsIndependentOfBatching(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 30; trial++ {
		gap := (1 + rng.Int64N(5)) * minute
		op := mustAgg(t, sessionCfg(Complete, gap))
		var keys []string
		var times, gaps []int64
		for b := 0; b < 1+rng.IntN(8); b++ {
			in := &Input{}
			for i := 0; i < rng.IntN(15); i++ {
				k := string(rune('a' + rng.IntN(3)))
				ts := at(9, 0) + rng.Int64N(hour)
				in.EventTime = append(in.EventTime, ts)
				in.Keys.Append([]byte(k))
				keys, times, gaps = append(keys, k), append(times, ts), append(gaps, gap)
			}
			if _, err := op.ProcessBatch(in, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		var want []string
		for k, ws := range batchSessions(keys, times, gaps) {
			for _, w := range ws {
				want = append(want, fmt.Sprintf("%s%v=%d", k, w, countIn(times, keys, k, w)))
			}
		}
		var got []string
		for s, g := range op.groups {
			if g.live() {
				got = append(got, fmt.Sprintf("%s%v=%d", op.key(g.key), op.window(int32(s)), op.accs[0].value(int32(s), false).N))
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d gap %d:\n got %v\nwant %v", trial, gap, got, want)
		}
	}
}
