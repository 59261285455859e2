package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
	"github.com/medallion-lake/medallion/txlog"
)

const goldSchema = `{"type":"struct","fields":[
{"name":"window","type":{"type":"struct","fields":[{"name":"start","type":"timestamp","nullable":true,"metadata":{}},{"name":"end","type":"timestamp","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"event_type","type":"string","nullable":true,"metadata":{}},
{"name":"count","type":"long","nullable":true,"metadata":{}}]}`

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

type goldRow struct {
	win   int // window index: start = t0 + win*5m
	typ   string
	count int64
}

func schema(t testing.TB) *txlog.StructType {
	s, err := txlog.ParseSchema(goldSchema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func batch(t testing.TB, rows ...goldRow) *pq.Batch {
	b, err := pq.NewBatch(schema(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		start := t0.Add(time.Duration(r.win) * 5 * time.Minute)
		w := b.Columns[0]
		w.Children[0].AppendTime(start)
		w.Children[1].AppendTime(start.Add(5 * time.Minute))
		w.AppendStruct()
		if r.typ == "" {
			b.Columns[1].AppendNull()
		} else {
			b.Columns[1].AppendString(r.typ)
		}
		b.Columns[2].AppendInt64(r.count)
	}
	return b
}

// newGold creates a gold table with one file per group of rows.
func newGold(t testing.TB, files ...[]goldRow) *table.Table {
	ctx := context.Background()
	tbl := table.Open(mem.New(), table.Options{})
	if _, err := tbl.Create(ctx, schema(t), nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := tbl.Append(ctx, []*pq.Batch{batch(t, f...)}, table.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

func contents(t testing.TB, tbl *table.Table) []string {
	var out []string
	for b, err := range tbl.Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Len(); i++ {
			start := b.Columns[0].Children[0].Int64[i]
			win := (start - t0.UnixMicro()) / (5 * 60 * 1_000_000)
			typ := "null"
			if !b.Columns[1].IsNull(i) {
				typ = b.Columns[1].StringAt(i)
			}
			out = append(out, fmt.Sprintf("%d/%s=%d", win, typ, b.Columns[2].Int64[i]))
		}
	}
	slices.Sort(out)
	return out
}

// upsertAdd is the late-merge shape: add the source count to a matched window, insert others.
func upsertAdd(source *pq.Batch) Spec {
	return Spec{
		Source: []*pq.Batch{source},
		Keys:   []string{"window", "event_type"},
		Matched: []Matched{{Desc: "true", Set: map[string]Value{
			"count": func(tg, s Row) any { return tg.Get("count").(int64) + s.Get("count").(int64) },
		}}},
		NotMatched: []NotMatched{{}},
	}
}

func TestMergeUpsertRewritesOnlyTouchedFiles(t *testing.T) {
	ctx := context.Background()
	// Ten files, one window each, two event types per window.
	var files [][]goldRow
	for w := 0; w < 10; w++ {
		files = append(files, []goldRow{{w, "click", 10}, {w, "view", 20}})
	}
	tbl := newGold(t, files...)
	res, err := Run(ctx, tbl, upsertAdd(batch(t, goldRow{3, "click", 1}, goldRow{3, "buy", 5})))
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRead != 1 || res.FilesRemoved != 1 || res.FilesAdded != 1 {
		t.Errorf("files read/removed/added = %d/%d/%d, want 1/1/1", res.FilesRead, res.FilesRemoved, res.FilesAdded)
	}
	if res.Updated != 1 || res.Inserted != 1 || res.Copied != 1 || res.Deleted != 0 || res.SourceRows != 2 {
		t.Errorf("metrics %+v", res)
	}
	want := []string{"3/buy=5", "3/click=11"}
	for w := 0; w < 10; w++ {
		if w != 3 {
			want = append(want, fmt.Sprintf("%d/click=10", w))
		}
		want = append(want, fmt.Sprintf("%d/view=20", w))
	}
	slices.Sort(want)
	if got := contents(t, tbl); !slices.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	hist, err := tbl.Log().History(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	ci := hist[0].CommitInfo
	var updated string
	json.Unmarshal(ci.OperationMetrics["numTargetRowsUpdated"], &updated)
	if ci.Operation != "MERGE" || (updated != "1" && string(ci.OperationMetrics["numTargetRowsUpdated"]) != "1") {
		t.Errorf("commitInfo %s %s", ci.Operation, ci.OperationMetrics["numTargetRowsUpdated"])
	}
}

func TestMergeClauses(t *testing.T) {
	ctx := context.Background()
	base := [][]goldRow{{{0, "click", 1}, {0, "view", 2}}, {{1, "click", 3}, {1, "view", 4}}}
	cases := []struct {
		name string
		spec func(src *pq.Batch) Spec
		src  []goldRow
		want []string
		err  error
	}{
		{"matched delete", func(s *pq.Batch) Spec {
			return Spec{Source: []*pq.Batch{s}, Keys: []string{"window", "event_type"}, Matched: []Matched{{Delete: true}}}
		}, []goldRow{{0, "view", 0}, {5, "view", 0}}, []string{"0/click=1", "1/click=3", "1/view=4"}, nil},
		{"conditional clauses", func(s *pq.Batch) Spec {
			return Spec{Source: []*pq.Batch{s}, Keys: []string{"window", "event_type"},
				Matched: []Matched{
					{Desc: "source.count = 0", Cond: func(_, s Row) bool { return s.Get("count").(int64) == 0 }, Delete: true},
					{Set: map[string]Value{"count": FromSource("count")}}},
				NotMatched: []NotMatched{{Cond: func(s Row) bool { return s.Get("count").(int64) > 10 }}}}
		}, []goldRow{{0, "click", 0}, {0, "view", 9}, {7, "x", 5}, {8, "y", 50}},
			[]string{"0/view=9", "1/click=3", "1/view=4", "8/y=50"}, nil},
		{"update set star and insert values", func(s *pq.Batch) Spec {
			return Spec{Source: []*pq.Batch{s}, Keys: []string{"window", "event_type"},
				Matched:    []Matched{{}},
				NotMatched: []NotMatched{{Values: map[string]Value{"window": FromSource("window"), "event_type": FromSource("event_type"), "count": Const(int64(-1))}}}}
		}, []goldRow{{1, "view", 40}, {2, "click", 7}}, []string{"0/click=1", "0/view=2", "1/click=3", "1/view=40", "2/click=-1"}, nil},
		{"multiple source rows match one target row", func(s *pq.Batch) Spec { return upsertAdd(s) },
			[]goldRow{{0, "click", 1}, {0, "click", 2}}, nil, ErrMultipleSourceRows},
		{"duplicates allowed for an unconditional delete", func(s *pq.Batch) Spec {
			return Spec{Source: []*pq.Batch{s}, Keys: []string{"window", "event_type"}, Matched: []Matched{{Delete: true}}}
		}, []goldRow{{0, "click", 1}, {0, "click", 2}}, []string{"0/view=2", "1/click=3", "1/view=4"}, nil},
		{"null keys never match", func(s *pq.Batch) Spec { return upsertAdd(s) },
			[]goldRow{{0, "", 5}}, []string{"0/click=1", "0/null=5", "0/view=2", "1/click=3", "1/view=4"}, nil},
		{"empty source", func(s *pq.Batch) Spec { return upsertAdd(s) },
			nil, []string{"0/click=1", "0/view=2", "1/click=3", "1/view=4"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := newGold(t, base...)
			before, _ := tbl.Log().Snapshot(ctx)
			_, err := Run(ctx, tbl, c.spec(batch(t, c.src...)))
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("got %v, want %v", err, c.err)
				}
				after, _ := tbl.Log().Snapshot(ctx)
				if after.Version() != before.Version() {
					t.Error("a failed merge committed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(t, tbl); !slices.Equal(got, c.want) {
				t.Errorf("got %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestMergeIntoEmptyTargetAndTxn(t *testing.T) {
	ctx := context.Background()
	tbl := newGold(t)
	spec := upsertAdd(batch(t, goldRow{0, "click", 1}, goldRow{1, "view", 2}))
	spec.Txn = &table.AppTxn{AppID: "merge-late", Version: 3}
	res, err := Run(ctx, tbl, spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 2 || res.FilesRead != 0 {
		t.Errorf("%+v", res)
	}
	again, err := Run(ctx, tbl, spec)
	if err != nil || !again.Skipped {
		t.Fatalf("rerun: %+v %v", again, err)
	}
	if got := contents(t, tbl); !slices.Equal(got, []string{"0/click=1", "1/view=2"}) {
		t.Errorf("got %v", got)
	}
}

func TestMergeBadSpec(t *testing.T) {
	ctx := context.Background()
	tbl := newGold(t, []goldRow{{0, "click", 1}})
	for _, spec := range []Spec{
		{Source: []*pq.Batch{batch(t, goldRow{0, "click", 1})}},
		{Source: []*pq.Batch{batch(t, goldRow{0, "click", 1})}, Keys: []string{"nope"}},
		{Source: []*pq.Batch{batch(t, goldRow{0, "click", 1})}, Keys: []string{"window", "event_type"},
			Matched: []Matched{{Set: map[string]Value{"nope": Const(1)}}}},
	} {
		if _, err := Run(ctx, tbl, spec); !errors.Is(err, ErrBadMerge) {
			t.Errorf("got %v, want ErrBadMerge", err)
		}
	}
}

// raceBucket runs before once, just before the first commit file is written through it.
type raceBucket struct {
	objstore.Bucket
	before func()
	done   bool
}

func (r *raceBucket) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	if !r.done && strings.HasPrefix(key, txlog.LogDir) && strings.HasSuffix(key, ".json") {
		r.done = true
		r.before()
	}
	return r.Bucket.PutIfAbsent(ctx, key, body, size)
}

func TestMergeIsolation(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		level    txlog.IsolationLevel
		conflict bool
	}{{txlog.Serializable, true}, {txlog.WriteSerializable, false}} {
		t.Run(string(c.level), func(t *testing.T) {
			b := mem.New()
			tbl := table.Open(b, table.Options{})
			if _, err := tbl.Create(ctx, schema(t), nil, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Append(ctx, []*pq.Batch{batch(t, goldRow{0, "click", 1})}, table.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			racing := &raceBucket{Bucket: b, before: func() {
				// A blind append lands between the merge's read and its commit.
				if _, err := tbl.Append(ctx, []*pq.Batch{batch(t, goldRow{9, "view", 1})}, table.AppendOptions{}); err != nil {
					t.Error(err)
				}
			}}
			spec := upsertAdd(batch(t, goldRow{0, "click", 5}))
			spec.Isolation = c.level
			_, err := Run(ctx, table.Open(racing, table.Options{}), spec)
			if c.conflict != errors.Is(err, txlog.ErrConflict) {
				t.Fatalf("conflict=%v, got %v", c.conflict, err)
			}
			want := []string{"0/click=1", "9/view=1"}
			if !c.conflict {
				want = []string{"0/click=6", "9/view=1"}
			}
			if got := contents(t, tbl); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestMergeUsesTheTablesWriteOptions: the files a merge writes come from the table's writer
// (its clock here), and the files it removes are recorded at that clock too.
func TestMergeUsesTheTablesWriteOptions(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tbl := table.Open(b, table.Options{Clock: func() time.Time { return at }})
	if _, err := tbl.Create(ctx, schema(t), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{batch(t, goldRow{1, "click", 1})}, table.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := Run(ctx, tbl, upsertAdd(batch(t, goldRow{1, "click", 2}, goldRow{2, "view", 1})))
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesAdded != 1 || res.FilesRemoved != 1 {
		t.Fatalf("merge added %d and removed %d files, want 1 and 1", res.FilesAdded, res.FilesRemoved)
	}
	data, err := objstore.ReadAll(ctx, b, txlog.CommitKey(res.Version))
	if err != nil {
		t.Fatal(err)
	}
	actions, err := txlog.ParseActions(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if a.Add != nil && a.Add.ModificationTime != at.UnixMilli() {
			t.Errorf("added file at %d, want the table's clock %d", a.Add.ModificationTime, at.UnixMilli())
		}
		if a.Remove != nil && (a.Remove.DeletionTimestamp == nil || *a.Remove.DeletionTimestamp != at.UnixMilli() || a.Remove.Stats == "") {
			t.Errorf("remove %+v: want deletionTimestamp %d and the file's stats", a.Remove, at.UnixMilli())
		}
	}
}

// With the target's change data feed on, each MERGE of TestMergeClauses writes Spark's change
// rows in its commit (a pre- and post-image per updated row, a delete per deleted one, an
// insert per inserted one), and the feed from version 0 stays equal to the table (invariant C).
func TestMergeChangeFeed(t *testing.T) {
	ctx := context.Background()
	base := [][]goldRow{{{0, "click", 1}, {0, "view", 2}}, {{1, "click", 3}, {1, "view", 4}}}
	specs := []func(s *pq.Batch) Spec{
		upsertAdd,
		func(s *pq.Batch) Spec {
			return Spec{Source: []*pq.Batch{s}, Keys: []string{"window", "event_type"},
				Matched: []Matched{
					{Desc: "source.count = 0", Cond: func(_, s Row) bool { return s.Get("count").(int64) == 0 }, Delete: true},
					{Set: map[string]Value{"count": FromSource("count")}}},
				NotMatched: []NotMatched{{Cond: func(s Row) bool { return s.Get("count").(int64) > 10 }}}}
		},
	}
	for k, spec := range specs {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			tbl := table.Open(mem.New(), table.Options{})
			if _, err := tbl.Create(ctx, schema(t), nil, map[string]string{"delta.enableChangeDataFeed": "true"}); err != nil {
				t.Fatal(err)
			}
			for _, f := range base {
				if _, err := tbl.Append(ctx, []*pq.Batch{batch(t, f...)}, table.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Run(ctx, tbl, spec(batch(t, goldRow{0, "click", 0}, goldRow{0, "view", 9}, goldRow{7, "x", 5}, goldRow{8, "y", 50})))
			if err != nil {
				t.Fatal(err)
			}
			vs, err := cdftest.CheckInvariantC(ctx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			got := cdftest.Counts(vs[len(vs)-1:])
			want := map[string]int{"update_preimage": int(res.Updated), "update_postimage": int(res.Updated), "delete": int(res.Deleted), "insert": int(res.Inserted)}
			for typ, n := range want {
				if got[typ] != n {
					t.Errorf("%s rows: %d, want %d (%+v)", typ, got[typ], n, res)
				}
			}
			if res.Updated == 0 || res.Inserted == 0 {
				t.Fatalf("the merge updated %d and inserted %d rows: the test proves little", res.Updated, res.Inserted)
			}
		})
	}
}
