package stream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/stream/spec"
)

// jstep is one step of a join vector (spec/stream-joins.md §10): the rows each side's silver
// gets, then one join run; out are the joined rows the step's batches append, late the rows
// they quarantine ("side:id@late watermark in s"), wMs the global watermark after it (nil:
// not checked) and batches the batches it runs (0: not checked).
type jstep struct {
	left, right []jrow
	out, late   []string
	wMs         *int64
	batches     int
}

type jvector struct {
	name    string
	join    spec.Join
	trigger spec.TriggerKind
	steps   []jstep
}

func ms(v int64) *int64         { return &v }
func rows(rs ...jrow) []jrow    { return rs }
func outs(s ...string) []string { return s }
func lateL(id string, w float64) string {
	return "left:" + id + "@" + strconv.FormatFloat(w, 'f', -1, 64)
}
func lateR(id string, w float64) string {
	return "right:" + id + "@" + strconv.FormatFloat(w, 'f', -1, 64)
}

func jvectors() []jvector {
	s := time.Second
	var v []jvector
	v = append(v, jvector{name: "JV1 inner two-sided range", join: joinSpec("inner", -5*s, 10*s, 20*s, 30*s), steps: []jstep{
		{left: rows(jL("1", 20)), wMs: ms(0), batches: 1},
		{right: rows(jR("1", 14), jR("1", 15), jR("1", 25), jR("1", 26), jR("1", 30), jR("1", 31)),
			out: outs("(L1@20,R1@15)", "(L1@20,R1@25)", "(L1@20,R1@26)", "(L1@20,R1@30)"), wMs: ms(0), batches: 1},
		{right: rows(jR("1", 60)), wMs: ms(0), batches: 1},
		{left: rows(jL("1", 49), jL("1", 50), jL("1", 65), jL("1", 66)), out: outs("(L1@50,R1@60)", "(L1@65,R1@60)"), wMs: ms(30000), batches: 2},
		{left: rows(jL("1", 30), jL("1", 31)), out: outs("(L1@31,R1@26)", "(L1@31,R1@30)", "(L1@31,R1@31)"), late: outs(lateL("L1@30", 30)), wMs: ms(30000), batches: 1},
		{right: rows(jR("1", 80)), wMs: ms(46000), batches: 2},
		{right: rows(jR("1", 46), jR("1", 50)), out: outs("(L1@49,R1@50)", "(L1@50,R1@50)"), late: outs(lateR("R1@46", 46)), wMs: ms(46000), batches: 1},
	}})
	jv2 := func(typ string, step3 jrow, out2, out3, out4, out5 []string, w4 int64) jvector {
		return jvector{name: "JV2 " + typ, join: joinSpec(typ, -5*s, 5*s, 10*s, 10*s), steps: []jstep{
			{left: rows(jL("1", 5), jL("3", 5)), wMs: ms(0)},
			{right: rows(jR("1", 10), jR("2", 5)), out: out2, wMs: ms(0)},
			{right: rows(step3), out: out3, wMs: ms(0)},
			{left: rows(jL("1", 7), jL("1", 30)), out: out4, wMs: ms(w4)},
			{right: rows(jR("0", 30)), out: out5, wMs: ms(20000)},
		}}
	}
	v = append(v,
		jv2("left_outer", jR("1", 11), outs("(L1@5,R1@10)"), nil, outs("(L1@7,R1@10)", "(L1@7,R1@11)"), outs("(L3@5,null)"), 1000),
		jv2("right_outer", jR("1", 11), outs("(L1@5,R1@10)"), nil, outs("(L1@7,R1@10)", "(L1@7,R1@11)"), outs("(null,R2@5)"), 1000),
		jv2("full_outer", jR("1", 9), outs("(L1@5,R1@10)"), outs("(L1@5,R1@9)"), outs("(L1@7,R1@10)", "(L1@7,R1@9)"), outs("(L3@5,null)", "(null,R2@5)"), 0),
		jv2("left_semi", jR("1", 9), outs("L1@5"), nil, outs("L1@7"), nil, 0),
	)
	var jv3 [3]jstep
	for st := range 3 {
		for i := st*5 + 1; i <= st*5+5; i++ {
			k := strconv.Itoa(i)
			jv3[st].left = append(jv3[st].left, jL(k, float64(i)))
			if i%2 == 0 {
				jv3[st].right = append(jv3[st].right, jR(k, float64(i)))
				jv3[st].out = append(jv3[st].out, fmt.Sprintf("(L%d@%d,R%d@%d)", i, i, i, i))
			}
		}
	}
	jv3[0].wMs, jv3[1].wMs, jv3[2].wMs = ms(0), ms(5000), ms(9000)
	jv3[2].out = append(jv3[2].out, "(L1@1,null)", "(L3@3,null)")
	v = append(v, jvector{name: "JV3 matched flag", join: joinSpec("left_outer", 0, 5*s, 5*s, 5*s), steps: jv3[:]})
	v = append(v, jvector{name: "JV4 late boundary", join: joinSpec("inner", -5*s, 5*s, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("1", 20)), right: rows(jR("1", 20)), out: outs("(L1@20,R1@20)"), wMs: ms(10000), batches: 2},
		{left: rows(jL("1", 10), jL("1", 10.001)), right: rows(jR("1", 10), jR("1", 10.001)), out: outs("(L1@10.001,R1@10.001)"),
			late: outs(lateL("L1@10", 10), lateR("R1@10", 10))},
	}})
	v = append(v, jvector{name: "JV5 left eviction boundary", join: joinSpec("left_outer", 0, 5*s, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("1", 14.999), jL("2", 15), jL("9", 30)), right: rows(jR("9", 30)), out: outs("(L9@30,R9@30)", "(L1@14.999,null)"), wMs: ms(20000)},
		{left: rows(jL("9", 30.001)), right: rows(jR("9", 30.001)), out: outs("(L9@30,R9@30.001)", "(L9@30.001,R9@30.001)", "(L2@15,null)"), wMs: ms(20001)},
	}})
	v = append(v, jvector{name: "JV6 right eviction boundary", join: joinSpec("right_outer", -5*s, 0, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("9", 30)), right: rows(jR("1", 14.999), jR("2", 15), jR("9", 30)), out: outs("(L9@30,R9@30)", "(null,R1@14.999)")},
		{left: rows(jL("9", 30.001)), right: rows(jR("9", 30.001)), out: outs("(L9@30.001,R9@30)", "(L9@30.001,R9@30.001)", "(null,R2@15)")},
	}})
	v = append(v, jvector{name: "JV7 trigger once", join: joinSpec("right_outer", 0, 10*s, 10*s, 10*s), trigger: spec.Once, steps: []jstep{
		{left: rows(jL("1", 100)), right: rows(jR("1", 100)), out: outs("(L1@100,R1@100)"), wMs: ms(90000), batches: 1},
		{left: rows(jL("2", 45)), right: rows(jR("2", 50), jR("4", 60)), out: outs("(L2@45,R2@50)", "(null,R4@60)"), wMs: ms(90000), batches: 1},
		{right: rows(jR("5", 95), jR("1", 101), jR("6", 90)), out: outs("(L1@100,R1@101)"), late: outs(lateR("R6@90", 90)), wMs: ms(90000), batches: 1},
		{left: rows(jL("7", 200)), right: rows(jR("7", 200)), out: outs("(L7@200,R7@200)"), wMs: ms(190000), batches: 1},
		{left: rows(jL("8", 300)), out: outs("(null,R5@95)"), batches: 1},
	}})
	v = append(v, jvector{name: "JV8 silent source", join: joinSpec("left_outer", -5*s, 5*s, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("1", 10), jL("2", 100)), wMs: ms(0)},
		{left: rows(jL("3", 200)), wMs: ms(0)},
		{right: rows(jR("9", 50)), out: outs("(L1@10,null)"), wMs: ms(40000)},
		{left: rows(jL("4", 30), jL("5", 45)), right: rows(jR("2", 100)), out: outs("(L2@100,R2@100)", "(L5@45,null)"), late: outs(lateL("L4@30", 40)), wMs: ms(90000)},
	}})
	v = append(v, jvector{name: "JV9 watermarks across runs", join: joinSpec("inner", -5*s, 5*s, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("1", 100)), right: rows(jR("1", 50)), wMs: ms(40000)},
		{left: rows(jL("2", 60)), right: rows(jR("2", 200)), wMs: ms(90000)},
		{left: rows(jL("3", 85)), right: rows(jR("3", 85)), late: outs(lateL("L3@85", 90), lateR("R3@85", 90)), wMs: ms(90000)},
	}})
	v = append(v, jvector{name: "JV10 left semi", join: joinSpec("left_semi", -5*s, 5*s, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("1", 10)), right: rows(jR("1", 12), jR("1", 8)), out: outs("L1@10")},
		{right: rows(jR("1", 14))},
		{left: rows(jL("2", 20)), right: rows(jR("2", 21)), out: outs("L2@20")},
		{left: rows(jL("9", 60)), right: rows(jR("9", 60)), out: outs("L9@60"), wMs: ms(50000)},
		{right: rows(jR("2", 22)), late: outs(lateR("R2@22", 50))},
	}})
	jv11 := func(typ string, out2 []string) jvector {
		return jvector{name: "JV11 null keys " + typ, join: joinSpec(typ, -5*s, 5*s, 10*s, 10*s), steps: []jstep{
			{left: rows(jL("null", 10), jL("1", 10)), right: rows(jR("null", 10), jR("1", 10)), out: outs("(L1@10,R1@10)")},
			{left: rows(jL("9", 40)), right: rows(jR("9", 40)), out: out2, wMs: ms(30000)},
		}}
	}
	v = append(v,
		jv11("left_outer", outs("(L9@40,R9@40)", "(Lnull@10,null)")),
		// §9.2: null keys never match, not even in a full outer join.
		jv11("full_outer", outs("(L9@40,R9@40)", "(Lnull@10,null)", "(null,Rnull@10)")),
	)
	// Null-key rows never reach the watermark node of a side the join does not preserve:
	// Spark's inferred `key IS NOT NULL` runs below withWatermark (found by
	// tests/interop/test_join_differential.py against PySpark 3.5.8). In an inner join the rows
	// at 100 s leave both watermarks at 0 s, so step 2's rows at 50 s are joined, not late.
	v = append(v, jvector{name: "null keys hold no watermark inner", join: joinSpec("inner", -5*s, 5*s, 10*s, 10*s), steps: []jstep{
		{left: rows(jL("null", 100), jL("1", 20)), right: rows(jR("null", 100), jR("1", 20)), out: outs("(L1@20,R1@20)"), wMs: ms(10000)},
		{left: rows(jL("2", 50)), right: rows(jR("2", 50)), out: outs("(L2@50,R2@50)"), wMs: ms(40000)},
	}})
	at := func(id, key, hhmm string) jrow { return jrow{id: id, key: key, t: hm(hhmm)} }
	w := func(hhmm string) int64 { return hm(hhmm).UnixMilli() }
	lw := hm("13:50").Sub(epoch).Seconds()
	v = append(v, jvector{name: "JV12 contract shape", join: joinSpec("left_outer", 0, time.Hour, 10*time.Minute, 20*time.Minute), steps: []jstep{
		{left: rows(at("I1", "ad1", "12:00"), at("I2", "ad2", "12:05")), right: rows(at("C1", "ad1", "12:10")), out: outs("(I1,C1)"), wMs: ms(w("11:50"))},
		{left: rows(at("I3", "ad3", "12:40")), right: rows(at("C9", "ad9", "12:45")), wMs: ms(w("12:25"))},
		{left: rows(at("I4", "ad4", "14:00")), right: rows(at("C9b", "ad9", "14:30")), out: outs("(I2,null)", "(I3,null)"), wMs: ms(w("13:50"))},
		{left: rows(at("I5", "ad5", "12:30")), right: rows(at("C4", "ad4", "14:59:59"), at("C2", "ad2", "12:30")), out: outs("(I4,C4)"),
			late: outs(lateL("I5", lw), lateR("C2", lw))},
	}})
	return v
}

// TestJoinVectors runs the spec's vectors JV1-JV12 through the join host, a new runner for
// every step (every CLI run is a restart; JV9 needs the per-source watermarks to survive
// it): each step's joined rows, quarantined rows with their side and late watermark, the
// watermark after it, its batch count, and the progress's dropped counts.
func TestJoinVectors(t *testing.T) {
	for _, vec := range jvectors() {
		t.Run(vec.name, func(t *testing.T) { testJoinVector(t, vec, false) })
	}
}

// TestJoinVectorsOneRunner runs the vectors with one runner for all steps, as a process
// that never stops: the same rows as with a new runner per step.
func TestJoinVectorsOneRunner(t *testing.T) {
	for _, vec := range jvectors() {
		t.Run(vec.name, func(t *testing.T) { testJoinVector(t, vec, true) })
	}
}

func testJoinVector(t *testing.T, vec jvector, reuse bool) {
	lake := mem.New()
	trigger := vec.trigger
	if trigger == "" {
		trigger = spec.AvailableNow
	}
	appendSilver(t, lake, "silver/imp", nil)
	appendSilver(t, lake, "silver/clk", nil)
	var prevOut, prevLate []string
	last := int64(-1)
	var runner *JoinRunner
	var before JoinReport
	for i, st := range vec.steps {
		if len(st.left) > 0 {
			appendSilver(t, lake, "silver/imp", st.left)
		}
		if len(st.right) > 0 {
			appendSilver(t, lake, "silver/clk", st.right)
		}
		if runner == nil || !reuse {
			var err error
			if runner, err = NewJoin(JoinOptions{Lake: lake, Join: vec.join, Trigger: spec.Trigger{Kind: trigger}, Clock: runStreamClock}); err != nil {
				t.Fatal(err)
			}
			before = JoinReport{}
		}
		rep, err := runner.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// A reused runner's report sums all its runs: this step's share is the difference.
		rep.Batches -= before.Batches
		rep.OutputRows -= before.OutputRows
		rep.LateLeftRows -= before.LateLeftRows
		rep.LateRightRows -= before.LateRightRows
		before.Batches += rep.Batches
		before.OutputRows += rep.OutputRows
		before.LateLeftRows += rep.LateLeftRows
		before.LateRightRows += rep.LateRightRows
		out, late := joinedRows(t, lake, vec.join.Table), quarantinedRows(t, lake, vec.join.Quarantine)
		gotOut, gotLate := minus(out, prevOut), minus(late, prevLate)
		wantOut, wantLate := slices.Sorted(slices.Values(st.out)), slices.Sorted(slices.Values(st.late))
		if !slices.Equal(gotOut, wantOut) {
			t.Fatalf("step %d: joined rows %v, want %v", i+1, gotOut, wantOut)
		}
		if !slices.Equal(gotLate, wantLate) {
			t.Fatalf("step %d: quarantined rows %v, want %v", i+1, gotLate, wantLate)
		}
		if len(minus(prevOut, out)) > 0 {
			t.Fatalf("step %d: joined rows disappeared: %v", i+1, minus(prevOut, out))
		}
		if st.wMs != nil && rep.WatermarkMs != *st.wMs {
			t.Fatalf("step %d: watermark %d ms, want %d", i+1, rep.WatermarkMs, *st.wMs)
		}
		if st.batches > 0 && rep.Batches != st.batches {
			t.Fatalf("step %d: %d batches, want %d", i+1, rep.Batches, st.batches)
		}
		if rep.Batches == 0 {
			t.Fatalf("step %d: no batch ran", i+1)
		}
		var dropped, lateL, lateR float64
		for _, p := range joinProgress(t, lake, vec.join.Checkpoint, last+1, rep.LastBatch) {
			op := joinOperator(t, p)
			dropped += op["numRowsDroppedByWatermark"].(float64)
			cm := op["customMetrics"].(map[string]any)
			lateL += cm[JoinMetricLateLeftRows].(float64)
			lateR += cm[JoinMetricLateRightRows].(float64)
		}
		if int(dropped) != len(st.late) || int(lateL+lateR) != len(st.late) || rep.LateLeftRows+rep.LateRightRows != int64(len(st.late)) {
			t.Fatalf("step %d: progress dropped %v (left %v, right %v), report %d+%d, want %d", i+1, dropped, lateL, lateR, rep.LateLeftRows, rep.LateRightRows, len(st.late))
		}
		if rep.OutputRows != int64(len(st.out)) {
			t.Fatalf("step %d: report says %d output rows, want %d", i+1, rep.OutputRows, len(st.out))
		}
		prevOut, prevLate, last = out, late, rep.LastBatch
	}
}
