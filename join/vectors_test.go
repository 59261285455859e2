package join

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/medallion-lake/medallion/gold"
)

// TestSpecVectors runs testdata/vectors, which copies the vectors of spec/stream-joins.md §10
// (verified on PySpark 3.5.8) and the rejections of §1: a new vector is a text edit.
//
//	join type=T [left-delay=D] [right-delay=D]   body: the condition; output: ok or the error
//	step [trigger=once]                          body: rows; output: each batch's rows, drops, W
//	restart                                      snapshot + restore of state and watermarks
//
// A row is `L<key>@<time>[#tag]` or `R...`: key `null` is a null key; time is seconds
// (`14.999`) or `HH:MM[:SS]` on 2024-05-01. The row's payload is its own text.
func TestSpecVectors(t *testing.T) {
	datadriven.RunTest(t, "testdata/vectors", func(t *testing.T, d *datadriven.TestData) string {
		return vec.run(t, d)
	})
}

var vec vectorRun

type vectorRun struct {
	spec   Spec
	delays [2]int64
	op     *Operator
	wm     *Watermarks
	batch  int
}

func (v *vectorRun) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "join":
		return v.join(t, d)
	case "step":
		if v.op == nil {
			d.Fatalf(t, "step before a valid join")
		}
		return v.step(t, d)
	case "restart":
		if v.op == nil {
			d.Fatalf(t, "restart before a valid join")
		}
		snap, err := v.op.AppendSnapshot(nil)
		if err != nil {
			d.Fatalf(t, "snapshot: %v", err)
		}
		wb, _ := v.wm.AppendBinary(nil)
		if v.op, err = Restore(v.spec, snap); err != nil {
			d.Fatalf(t, "restore: %v", err)
		}
		if v.wm, err = RestoreWatermarks(&v.spec, v.delays[0], v.delays[1], wb); err != nil {
			d.Fatalf(t, "restore watermarks: %v", err)
		}
		return fmt.Sprintf("restored %d left, %d right rows\n", v.op.StateRows(Left), v.op.StateRows(Right))
	}
	d.Fatalf(t, "unknown command %q", d.Cmd)
	return ""
}

func (v *vectorRun) join(t *testing.T, d *datadriven.TestData) string {
	*v = vectorRun{}
	var typ string
	d.ScanArgs(t, "type", &typ)
	jt, err := ParseType(typ)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	cond, err := ParseCondition(strings.TrimSpace(d.Input))
	if strings.TrimSpace(d.Input) == "" {
		cond, err = nil, nil
	}
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	v.spec = Spec{Type: jt, NumKeys: 1, Condition: cond}
	if d.HasArg("keys") {
		d.ScanArgs(t, "keys", &v.spec.NumKeys)
	}
	if d.HasArg("mode") {
		var m string
		d.ScanArgs(t, "mode", &m)
		v.spec.Mode = map[string]gold.Mode{"append": 1, "update": 2, "complete": 3}[m]
	}
	for i, k := range []string{"left-delay", "right-delay"} {
		if !d.HasArg(k) {
			continue
		}
		var s string
		d.ScanArgs(t, k, &s)
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.Fatalf(t, "%s: %v", k, err)
		}
		v.delays[i] = dur.Milliseconds()
		if i == 0 {
			v.spec.LeftWatermark = true
		} else {
			v.spec.RightWatermark = true
		}
	}
	if v.op, err = New(v.spec); err != nil {
		if !errors.Is(err, ErrUnsupportedOperation) && !errors.Is(err, ErrBadSpec) {
			d.Fatalf(t, "error %v wraps neither sentinel", err)
		}
		v.op = nil
		return "error: " + err.Error() + "\n"
	}
	if v.wm, err = NewWatermarks(&v.spec, v.delays[0], v.delays[1]); err != nil {
		d.Fatalf(t, "%v", err)
	}
	return "ok\n"
}

const vectorDay = "2024-05-01T"

func parseVectorTime(t *testing.T, s string) int64 {
	t.Helper()
	if strings.Contains(s, ":") {
		if strings.Count(s, ":") == 1 {
			s += ":00"
		}
		ts, err := time.Parse(time.RFC3339Nano, vectorDay+s+"Z")
		if err != nil {
			t.Fatalf("time %q: %v", s, err)
		}
		return ts.UnixMicro()
	}
	secs, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	us := n * 1_000_000
	if frac != "" {
		f, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		if err != nil {
			t.Fatalf("time %q: %v", s, err)
		}
		us += f
	}
	return us
}

// vectorInputs parses a step's rows into the two inputs.
func vectorInputs(t *testing.T, body string) (left, right *Input) {
	left, right = &Input{}, &Input{}
	for _, tok := range strings.Fields(body) {
		in := left
		switch tok[0] {
		case 'L':
		case 'R':
			in = right
		default:
			t.Fatalf("row %q: want L or R", tok)
		}
		spec, _, _ := strings.Cut(tok[1:], "#")
		key, ts, ok := strings.Cut(spec, "@")
		if !ok {
			t.Fatalf("row %q: want key@time", tok)
		}
		in.EventTime = append(in.EventTime, parseVectorTime(t, ts))
		in.Keys.Append([]byte(key))
		in.KeyNull = append(in.KeyNull, key == "null")
		in.Rows.Append([]byte(tok))
	}
	return left, right
}

func fmtWatermark(ms int64) string {
	if ms >= 86_400_000 {
		return time.UnixMilli(ms).UTC().Format("15:04:05.999")
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64)
}

func fmtRows(rows []OutRow) []string {
	var out []string
	for _, r := range rows {
		l, rt := "null", "null"
		if r.Kind.HasLeft() {
			l = string(r.Left)
		}
		if r.Kind.HasRight() {
			rt = string(r.Right)
		}
		if r.Kind == SemiLeft {
			out = append(out, l)
		} else {
			out = append(out, "("+l+","+rt+")")
		}
	}
	slices.Sort(out)
	return out
}

func (v *vectorRun) step(t *testing.T, d *datadriven.TestData) string {
	once := false
	if d.HasArg("trigger") {
		var s string
		d.ScanArgs(t, "trigger", &s)
		once = s == "once"
	}
	left, right := vectorInputs(t, d.Input)
	var out strings.Builder
	var dropped []string
	var runBatch func(l, r *Input, noData bool)
	runBatch = func(l, r *Input, noData bool) {
		v.wm.Observe(Left, l.eventTimes())
		v.wm.Observe(Right, r.eventTimes())
		late, evict := v.wm.Batch()
		res, err := v.op.ProcessBatch(l, r, late, evict)
		if err != nil {
			d.Fatalf(t, "batch %d: %v", v.batch, err)
		}
		if got := int64(len(res.Late[Left]) + len(res.Late[Right])); res.NumRowsDroppedByWatermark != got {
			d.Fatalf(t, "numRowsDroppedByWatermark %d, late rows %d", res.NumRowsDroppedByWatermark, got)
		}
		for _, i := range res.Late[Left] {
			dropped = append(dropped, string(l.Rows.Value(int(i))))
		}
		for _, i := range res.Late[Right] {
			dropped = append(dropped, string(r.Rows.Value(int(i))))
		}
		label := fmt.Sprintf("b%d", v.batch)
		if noData {
			label += " no-data"
		}
		rows := fmtRows(res.Rows)
		if len(rows) == 0 {
			rows = []string{"-"}
		}
		fmt.Fprintf(&out, "%s: %s\n", label, strings.Join(rows, " "))
		v.batch++
		next := v.wm.EndBatch()
		if !noData && !once && v.spec.ShouldRunNoDataBatch(next, evict) {
			runBatch(nil, nil, true)
		}
	}
	runBatch(left, right, false)
	if len(dropped) == 0 {
		dropped = []string{"-"}
	}
	_, w := v.wm.Batch()
	fmt.Fprintf(&out, "dropped: %s\nW %s\n", strings.Join(dropped, " "), fmtWatermark(w))
	return out.String()
}
