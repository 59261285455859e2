package join

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// randomRounds is the number of random workloads per test; MEDALLION_JOIN_ROUNDS raises it for
// a long soak.
func randomRounds(t *testing.T, def int) int {
	if s := os.Getenv("MEDALLION_JOIN_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("MEDALLION_JOIN_ROUNDS: %v", err)
		}
		return n
	}
	if testing.Short() {
		return def / 4
	}
	return def
}

// event is one delivered input row of the workload.
type event struct {
	side  Side
	id    int // unique per delivery: a duplicate repeats key and time with a new id
	key   int // -1: null key
	t     int64
	batch int // the batch it arrives in
}

func (e event) payload() string { return fmt.Sprintf("%s%d", e.side.String()[:1], e.id) }

// workload is a random join and its micro-batches.
type workload struct {
	spec    Spec
	delays  [2]int64 // ms
	batches [][]event
	once    []bool // the batch runs without a following no-data batch
}

// randomWorkload draws a join and events on both sides whose arrival lags their event time by
// a random delay, sometimes beyond the watermark delay (late rows), with duplicates, null keys
// and random batch boundaries.
func randomWorkload(rng *rand.Rand) workload {
	types := []Type{Inner, LeftOuter, RightOuter, FullOuter, LeftSemi}
	w := workload{}
	w.spec.Type = types[rng.IntN(len(types))]
	w.spec.NumKeys = 1
	w.spec.LeftWatermark, w.spec.RightWatermark = true, true
	lower := (rng.Int64N(20) - 15) * 1_000_000
	upper := lower + rng.Int64N(20)*1_000_000
	if rng.IntN(4) == 0 {
		lower += rng.Int64N(1000) * 1000 // ms offsets exercise the truncation
		upper += rng.Int64N(1000) * 1000
		if upper < lower {
			upper = lower
		}
	}
	switch rng.IntN(3) {
	case 0:
		w.spec.Condition = Between(lower, upper)
	case 1:
		w.spec.Condition = []Bound{{GT, lower}, {LT, upper}}
	default:
		w.spec.Condition = []Bound{{GE, lower}, {LT, upper}, {LE, upper + 2_000_000}}
	}
	w.delays = [2]int64{rng.Int64N(15) * 1000, rng.Int64N(15) * 1000}
	switch {
	case w.spec.Type == Inner && rng.IntN(4) == 0:
		// Spark's "one side condition": only the right state is bounded.
		w.spec.Condition = []Bound{{GT, lower}}
	case w.spec.Type == Inner && rng.IntN(4) == 0:
		// A side without a watermark: never late, never evicted, no watermark node (§2.4).
		if rng.IntN(2) == 0 {
			w.spec.LeftWatermark = false
		} else {
			w.spec.RightWatermark = false
		}
	case w.spec.Type == FullOuter && rng.IntN(4) == 0:
		// Full outer needs one bound only; the other side keeps its rows (§1).
		w.spec.Condition = []Bound{{LE, upper}}
	}
	nKeys := 1 + rng.IntN(6)
	var evs []event
	id := 0
	// Event time runs forward with jitter; arrival = event time + delay on a clock in µs.
	type arrival struct {
		e  event
		at int64
	}
	var arr []arrival
	for side := Left; side <= Right; side++ {
		n := rng.IntN(60)
		for i := 0; i < n; i++ {
			tt := rng.Int64N(120) * 1_000_000
			if rng.IntN(3) == 0 {
				tt += rng.Int64N(1_000_000) // sub-second times
			}
			key := rng.IntN(nKeys)
			if rng.IntN(15) == 0 {
				key = -1
			}
			lag := rng.Int64N(8) * 1_000_000
			if rng.IntN(6) == 0 {
				lag += rng.Int64N(40) * 1_000_000 // well past the watermark delay
			}
			e := event{side: side, id: id, key: key, t: tt}
			id++
			arr = append(arr, arrival{e, tt + lag})
			if rng.IntN(8) == 0 { // a duplicate, arriving a bit later
				d := e
				d.id = id
				id++
				arr = append(arr, arrival{d, tt + lag + rng.Int64N(10)*1_000_000})
			}
		}
	}
	slices.SortStableFunc(arr, func(a, b arrival) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.e.id - b.e.id
	})
	for _, a := range arr {
		evs = append(evs, a.e)
	}
	// Random batch boundaries, some empty batches too.
	for i := 0; i < len(evs); {
		n := rng.IntN(12)
		if n > len(evs)-i {
			n = len(evs) - i
		}
		b := make([]event, n)
		copy(b, evs[i:i+n])
		w.batches = append(w.batches, b)
		w.once = append(w.once, rng.IntN(4) == 0)
		i += n
	}
	for bi := range w.batches {
		for j := range w.batches[bi] {
			w.batches[bi][j].batch = bi
		}
	}
	return w
}

func inputsOf(evs []event) (left, right *Input) {
	left, right = &Input{}, &Input{}
	for _, e := range evs {
		in := left
		if e.side == Right {
			in = right
		}
		in.EventTime = append(in.EventTime, e.t)
		in.Keys.Append([]byte(strconv.Itoa(e.key)))
		in.KeyNull = append(in.KeyNull, e.key < 0)
		in.Rows.Append([]byte(e.payload()))
	}
	return left, right
}

// step is one batch the driver ran: its inputs, watermarks and encoded result.
type step struct {
	left, right *Input
	late, evict int64
	out         string // every field of the Result, in order
	rows        []OutRow
	lateIDs     [2][]int32
}

func encodeResult(r *Result) string {
	var b strings.Builder
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "%s|%q|%d|%q|%d\n", row.Kind, row.Left, row.LeftTime, row.Right, row.RightTime)
	}
	fmt.Fprintf(&b, "late %v %v wm %d %d sw %v %v dropped %d total %d updated %d removed %d in %v matched %d unmatched %v\n",
		r.Late[0], r.Late[1], r.LateWatermarkMs, r.EvictionWatermarkMs, r.StateWatermarkMs, r.StateWatermarkOK,
		r.NumRowsDroppedByWatermark, r.NumRowsTotal, r.NumRowsUpdated, r.NumRowsRemoved, r.InputRows, r.Matched, r.Unmatched)
	return b.String()
}

// drive runs a workload batch by batch, adding Spark's no-data batch after each data batch
// that is not `once`, and returns every batch run.
func drive(t *testing.T, w workload, op *Operator) []step {
	t.Helper()
	wm, err := NewWatermarks(&w.spec, w.delays[0], w.delays[1])
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	run := func(l, r *Input) int64 {
		wm.Observe(Left, l.eventTimes())
		wm.Observe(Right, r.eventTimes())
		late, evict := wm.Batch()
		res, err := op.ProcessBatch(l, r, late, evict)
		if err != nil {
			t.Fatalf("batch %d: %v", len(steps), err)
		}
		s := step{left: l, right: r, late: late, evict: evict, out: encodeResult(res)}
		for _, row := range res.Rows { // the payloads live until the next batch only
			row.Left, row.Right = slices.Clone(row.Left), slices.Clone(row.Right)
			s.rows = append(s.rows, row)
		}
		s.lateIDs = [2][]int32{slices.Clone(res.Late[0]), slices.Clone(res.Late[1])}
		steps = append(steps, s)
		return wm.EndBatch()
	}
	for i, b := range w.batches {
		l, r := inputsOf(b)
		_, evict := wm.Batch()
		next := run(l, r)
		if !w.once[i] && w.spec.ShouldRunNoDataBatch(next, evict) {
			run(nil, nil)
		}
	}
	return steps
}

// TestRandomAgainstBatchJoin checks random workloads against an independent batch join: the
// late rows are exactly those at or below the previous batch's watermark (computed here from
// the event times, not by Watermarks); every pair of on-time rows is emitted once, in the
// batch where the later of the two arrives; an on-time row of a preserved side without a
// partner comes out null-extended once, in the first batch whose state watermark (computed
// here) reaches it, and never if it has a partner; a left semi row comes out once, when its
// first partner is there.
func TestRandomAgainstBatchJoin(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2026))
	for round := 0; round < randomRounds(t, 400); round++ {
		w := randomWorkload(rng)
		op, err := New(w.spec)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		steps := drive(t, w, op)
		if err := checkAgainstOracle(w, steps); err != nil {
			t.Fatalf("round %d (%s %v delays %v): %v", round, w.spec.Type.Name(), w.spec.Condition, w.delays, err)
		}
	}
}

// oracleWatermarks recomputes, from the events alone, each run batch's late and eviction
// watermark (ms) and whether it is a no-data batch, following spec §2 and §7 literally.
type oracleBatch struct {
	data        int // index into workload.batches, -1 for a no-data batch
	late, evict int64
}

func oracleSchedule(w workload) []oracleBatch {
	var node [2]int64
	var global, prev int64
	var out []oracleBatch
	has := [2]bool{w.spec.LeftWatermark, w.spec.RightWatermark}
	for i, b := range w.batches {
		out = append(out, oracleBatch{data: i, late: prev, evict: global})
		for _, e := range b {
			ms := e.t / 1000 // times are non-negative here
			node[e.side] = max(node[e.side], ms-w.delays[e.side])
		}
		next := global
		switch {
		case has[0] && has[1]:
			next = max(global, min(node[0], node[1]))
		case has[0]:
			next = max(global, node[0])
		case has[1]:
			next = max(global, node[1])
		}
		prev, global = global, next
		_, lok := oracleStateWatermark(w.spec, Left, 0)
		_, rok := oracleStateWatermark(w.spec, Right, 0)
		if !w.once[i] && (lok || rok) && next > out[len(out)-1].evict {
			out = append(out, oracleBatch{data: -1, late: prev, evict: global})
			prev = global
		}
	}
	return out
}

// oracleStateWatermark is the state watermark of side for W (ms), from the conjuncts: for
// `r.t <(=) l.t + c` the left side gets trunc((W*1000 - c)/1000) (-1 if inclusive), for
// `r.t >(=) l.t + c` the right side trunc((W*1000 + c)/1000) (-1 if inclusive); the min wins.
// A side evicts only if both sides carry a watermark.
func oracleStateWatermark(spec Spec, side Side, w int64) (int64, bool) {
	if !spec.LeftWatermark || !spec.RightWatermark {
		return 0, false
	}
	best, ok := int64(0), false
	for _, b := range spec.Condition {
		var v int64
		switch {
		case side == Left && (b.Op == LT || b.Op == LE):
			v = (w*1000 - b.Offset) / 1000
		case side == Right && (b.Op == GT || b.Op == GE):
			v = (w*1000 + b.Offset) / 1000
		default:
			continue
		}
		if b.Op == LE || b.Op == GE {
			v--
		}
		if !ok || v < best {
			best, ok = v, true
		}
	}
	return best, ok
}

func oracleMatch(spec Spec, l, r event) bool {
	if l.key < 0 || r.key < 0 || l.key != r.key {
		return false
	}
	for _, b := range spec.Condition {
		v := l.t + b.Offset
		ok := false
		switch b.Op {
		case LT:
			ok = r.t < v
		case LE:
			ok = r.t <= v
		case GT:
			ok = r.t > v
		case GE:
			ok = r.t >= v
		}
		if !ok {
			return false
		}
	}
	return true
}

func checkAgainstOracle(w workload, steps []step) error {
	sched := oracleSchedule(w)
	if len(sched) != len(steps) {
		return fmt.Errorf("ran %d batches, the oracle schedules %d", len(steps), len(sched))
	}
	// Which batch (run index) each data batch is, and the late rows per the oracle.
	runOf := map[int]int{}
	late := map[[2]int]bool{} // (side, id)
	var onTime [2][]event
	for i, s := range sched {
		if steps[i].late != s.late || steps[i].evict != s.evict {
			return fmt.Errorf("batch %d ran with watermarks %d/%d, the oracle says %d/%d", i, steps[i].late, steps[i].evict, s.late, s.evict)
		}
		if s.data < 0 {
			continue
		}
		runOf[s.data] = i
		var wantLate [2][]int32
		var idx [2]int32
		for _, e := range w.batches[s.data] {
			j := idx[e.side]
			idx[e.side]++
			filtered := e.key < 0 && !w.spec.Type.preserves(e.side)
			if filtered {
				continue // never reaches the join: neither late nor stored
			}
			if has(w.spec, e.side) && e.t <= s.late*1000 {
				wantLate[e.side] = append(wantLate[e.side], j)
				late[[2]int{int(e.side), e.id}] = true
				continue
			}
			onTime[e.side] = append(onTime[e.side], e)
		}
		for side := range 2 {
			if !slices.Equal(steps[i].lateIDs[side], wantLate[side]) && (len(wantLate[side]) > 0 || len(steps[i].lateIDs[side]) > 0) {
				return fmt.Errorf("batch %d: %s late rows %v, want %v", i, Side(side), steps[i].lateIDs[side], wantLate[side])
			}
		}
	}
	// Expected output rows with the batch each must appear in.
	want := map[string]int{}
	add := func(k string, batch int) { want[fmt.Sprintf("%d %s", batch, k)]++ }
	partnered := [2]map[int]bool{{}, {}}
	firstPartner := map[int]int{} // semi: left id -> earliest arrival batch of a partner
	for _, l := range onTime[Left] {
		for _, r := range onTime[Right] {
			if !oracleMatch(w.spec, l, r) {
				continue
			}
			partnered[Left][l.id], partnered[Right][r.id] = true, true
			if w.spec.Type != LeftSemi {
				add(fmt.Sprintf("pair %s %s", l.payload(), r.payload()), runOf[max(l.batch, r.batch)])
			} else if fb, ok := firstPartner[l.id]; !ok || r.batch < fb {
				firstPartner[l.id] = r.batch
			}
		}
	}
	if w.spec.Type == LeftSemi {
		for _, l := range onTime[Left] {
			if fb, ok := firstPartner[l.id]; ok {
				add("semi "+l.payload(), runOf[max(l.batch, fb)])
			}
		}
	}
	for side := Left; side <= Right; side++ {
		if !w.spec.Type.preserves(side) {
			continue
		}
		for _, e := range onTime[side] {
			if partnered[side][e.id] {
				continue
			}
			// The first batch at or after its arrival whose state watermark reaches it.
			for i := runOf[e.batch]; i < len(sched); i++ {
				if v, ok := oracleStateWatermark(w.spec, side, sched[i].evict); ok && e.t <= v*1000 {
					add(fmt.Sprintf("%s-unmatched %s", side, e.payload()), i)
					break
				}
			}
		}
	}
	got := map[string]int{}
	for i, s := range steps {
		for _, r := range s.rows {
			var k string
			switch r.Kind {
			case Pair:
				k = fmt.Sprintf("pair %s %s", r.Left, r.Right)
			case SemiLeft:
				k = "semi " + string(r.Left)
			case LeftUnmatched:
				k = "left-unmatched " + string(r.Left)
			case RightUnmatched:
				k = "right-unmatched " + string(r.Right)
			}
			got[fmt.Sprintf("%d %s", i, k)]++
		}
	}
	var diffs []string
	for k, n := range want {
		if got[k] != n {
			diffs = append(diffs, fmt.Sprintf("want %dx %q, got %d", n, k, got[k]))
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("unexpected %dx %q", n, k))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		if len(diffs) > 10 {
			diffs = diffs[:10]
		}
		return fmt.Errorf("output differs from the batch join:\n  %s", strings.Join(diffs, "\n  "))
	}
	_ = late
	return nil
}

func has(spec Spec, side Side) bool {
	if side == Left {
		return spec.LeftWatermark
	}
	return spec.RightWatermark
}
