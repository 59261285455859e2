package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/checkpoint"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// jrow is one silver row of a join test: its id (how outputs name it), join key ("" = null)
// and event time.
type jrow struct {
	id, key string
	t       time.Time
}

// epoch is where the vectors' seconds count from (spec §10: 1970-01-01).
var epoch = time.Unix(0, 0).UTC()

func secs(s float64) time.Time { return epoch.Add(time.Duration(s * float64(time.Second))) }

// jL and jR are the vectors' `Lk@t` and `Rk@t` (key "null": a null key).
func jL(key string, s float64) jrow { return jside("L", key, s) }
func jR(key string, s float64) jrow { return jside("R", key, s) }

func jside(side, key string, s float64) jrow {
	id := side + key + "@" + strconv.FormatFloat(s, 'f', -1, 64)
	if key == "null" {
		key = ""
	}
	return jrow{id: id, key: key, t: secs(s)}
}

func joinSilverSchema() *txlog.StructType {
	str := txlog.PrimitiveType{Name: txlog.TypeString}
	return &txlog.StructType{Fields: []txlog.StructField{
		{Name: "id", Type: str, Nullable: true},
		{Name: "k", Type: str, Nullable: true},
		{Name: "t", Type: txlog.PrimitiveType{Name: txlog.TypeTimestamp}, Nullable: true},
	}}
}

// appendSilver commits rows to a silver table as one new version (one file), creating it
// first; file modification times follow commit order.
func appendSilver(t testing.TB, lake objstore.Bucket, path string, rows []jrow) {
	t.Helper()
	ctx := context.Background()
	// One table for the version and the append: the append then only lists the commits since
	// (none), instead of loading the log from its last checkpoint a second time.
	version := int64(-1)
	tbl := table.Open(objstore.WithPrefix(lake, path), table.Options{Clock: func() time.Time { return day.Add(time.Duration(version+2) * time.Second) }})
	if snap, err := tbl.Latest(ctx); err == nil {
		version = snap.Version()
	}
	if version < 0 {
		if _, err := tbl.Create(ctx, joinSilverSchema(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) == 0 {
		return
	}
	b, _ := pq.NewBatch(joinSilverSchema())
	for _, r := range rows {
		b.Columns[0].AppendString(r.id)
		if r.key == "" {
			b.Columns[1].AppendNull()
		} else {
			b.Columns[1].AppendString(r.key)
		}
		b.Columns[2].AppendTime(r.t)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
}

// joinSpec is the test join of type typ: left source imp, right source clk, on k = k,
// clk.t BETWEEN imp.t + lower AND imp.t + upper.
func joinSpec(typ string, lower, upper, leftDelay, rightDelay time.Duration) spec.Join {
	return spec.Join{
		Name: "j", Type: typ,
		Left:       spec.JoinInput{Source: "imp", Silver: "silver/imp", EventTime: "t", Watermark: spec.Watermark{Delay: leftDelay, Set: true}},
		Right:      spec.JoinInput{Source: "clk", Silver: "silver/clk", EventTime: "t", Watermark: spec.Watermark{Delay: rightDelay, Set: true}},
		On:         []spec.JoinKey{{Left: "k", Right: "k"}},
		Lower:      lower,
		Upper:      upper,
		Table:      "gold/joined",
		Quarantine: "silver/late_joined",
		Checkpoint: "_checkpoints/j",
		Trigger:    spec.Trigger{Kind: spec.AvailableNow},
		State:      spec.State{MinDeltasForSnapshot: 3},
	}
}

func runJoin(t testing.TB, lake objstore.Bucket, j spec.Join, trigger spec.TriggerKind) JoinReport {
	t.Helper()
	rep, err := tryJoin(lake, j, trigger, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func tryJoin(lake objstore.Bucket, j spec.Join, trigger spec.TriggerKind, l Listener) (JoinReport, error) {
	r, err := NewJoin(JoinOptions{Lake: lake, Join: j, Trigger: spec.Trigger{Kind: trigger}, Clock: runStreamClock, Listener: l})
	if err != nil {
		return JoinReport{}, err
	}
	return r.Run(context.Background())
}

// joinedRows renders the joined table as "(left id,right id)" (null for a missing side; a
// left semi join's rows as the left id), sorted, with multiplicity.
func joinedRows(t testing.TB, lake objstore.Bucket, path string) []string {
	t.Helper()
	var out []string
	for _, line := range tableRows(t, lake, path) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		name := func(k string) string {
			if v, ok := m[k].(string); ok {
				return v
			}
			return "null"
		}
		if _, ok := m["clk_id"]; !ok {
			out = append(out, name("id"))
			continue
		}
		out = append(out, "("+name("id")+","+name("clk_id")+")")
	}
	slices.Sort(out)
	return out
}

// quarantinedRows renders the join quarantine as "side:id@late_watermark".
func quarantinedRows(t testing.TB, lake objstore.Bucket, path string) []string {
	t.Helper()
	var out []string
	for _, line := range tableRows(t, lake, path) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		id := m["id"]
		if m["side"] == "right" {
			id = m["clk_id"]
			if m["id"] != nil {
				t.Fatalf("a late right row has left columns: %s", line)
			}
		} else if m["clk_id"] != nil {
			t.Fatalf("a late left row has right columns: %s", line)
		}
		lw, err := time.Parse(time.RFC3339Nano, m["late_watermark"].(string))
		if err != nil {
			t.Fatalf("late_watermark of %s: %v", line, err)
		}
		out = append(out, fmt.Sprintf("%s:%v@%s", m["side"], id, strconv.FormatFloat(lw.Sub(epoch).Seconds(), 'f', -1, 64)))
	}
	slices.Sort(out)
	return out
}

// minus returns the rows of after that are not in before (multisets, sorted).
func minus(after, before []string) []string {
	left := slices.Clone(before)
	var out []string
	for _, r := range after {
		if i := slices.Index(left, r); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		out = append(out, r)
	}
	return out
}

// joinProgress reads the progress of batches from..to of the join's checkpoint.
func joinProgress(t testing.TB, lake objstore.Bucket, ckpt string, from, to int64) []map[string]any {
	t.Helper()
	d := checkpoint.Open(objstore.WithPrefix(lake, ckpt))
	var out []map[string]any
	for n := from; n <= to; n++ {
		data, err := d.ReadProgress(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// joinOperator is the symmetricHashJoin entry of a progress.
func joinOperator(t testing.TB, p map[string]any) map[string]any {
	t.Helper()
	for _, op := range p["stateOperators"].([]any) {
		if m := op.(map[string]any); m["operatorName"] == "symmetricHashJoin" {
			return m
		}
	}
	t.Fatalf("no symmetricHashJoin operator in %v", p)
	return nil
}
