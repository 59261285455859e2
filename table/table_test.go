package table

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
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/sqlexpr"
	"github.com/medallion-lake/medallion/txlog"
)

const eventSchema = `{"type":"struct","fields":[
{"name":"event_id","type":"string","nullable":false,"metadata":{}},
{"name":"event_type","type":"string","nullable":true,"metadata":{}},
{"name":"amount","type":"double","nullable":true,"metadata":{}},
{"name":"event_time","type":"timestamp","nullable":false,"metadata":{}},
{"name":"day","type":"date","nullable":true,"metadata":{}}]}`

var t0 = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)

// events builds n rows: id "<prefix>-i", type "click"/"view", amount i, time t0+i minutes,
// day = the date of event_time.
func events(t testing.TB, prefix string, from, n int) *pq.Batch {
	b, err := pq.NewBatch(pqtest.MustSchema(t, eventSchema))
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < from+n; i++ {
		ts := t0.Add(time.Duration(i) * time.Hour)
		b.Columns[0].AppendString(fmt.Sprintf("%s-%d", prefix, i))
		b.Columns[1].AppendString([]string{"click", "view"}[i%2])
		b.Columns[2].AppendFloat64(float64(i))
		b.Columns[3].AppendTime(ts)
		b.Columns[4].AppendInt32(int32(ts.Unix() / 86400))
	}
	return b
}

func scanIDs(t testing.TB, tbl *Table, opts ScanOptions) []string {
	t.Helper()
	var out []string
	for b, err := range tbl.Scan(context.Background(), opts) {
		if err != nil {
			t.Fatal(err)
		}
		c := b.Column("event_id")
		for i := 0; i < b.Len(); i++ {
			out = append(out, c.StringAt(i))
		}
	}
	slices.Sort(out)
	return out
}

func ids(prefix string, from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	slices.Sort(out)
	return out
}

func newTable(t testing.TB, partCols []string, opts Options) (*Table, *mem.Bucket) {
	b := mem.New()
	tbl := Open(b, opts)
	if _, err := tbl.Create(context.Background(), pqtest.MustSchema(t, eventSchema), partCols, nil); err != nil {
		t.Fatal(err)
	}
	return tbl, b
}

func TestAppendScanPartitioned(t *testing.T) {
	ctx := context.Background()
	for _, parts := range [][]string{nil, {"day"}, {"event_type", "day"}} {
		t.Run(strings.Join(parts, ","), func(t *testing.T) {
			tbl, b := newTable(t, parts, Options{})
			if _, err := tbl.Create(ctx, pqtest.MustSchema(t, eventSchema), parts, nil); !errors.Is(err, ErrTableExists) {
				t.Fatalf("second create: %v", err)
			}
			r, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 50)}, AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Version != 1 || r.RowsWritten != 50 {
				t.Fatalf("append: %+v", r)
			}
			wantFiles := 1
			if len(parts) == 1 {
				wantFiles = 3 // 50 hours from midnight span 3 days
			} else if len(parts) == 2 {
				wantFiles = 6
			}
			if len(r.Added) != wantFiles {
				t.Errorf("%d files, want %d", len(r.Added), wantFiles)
			}
			for _, a := range r.Added {
				if _, err := b.Stat(ctx, a.Path); err != nil {
					t.Errorf("file %s: %v", a.Path, err)
				}
				if len(parts) > 0 && !strings.HasPrefix(a.Path, parts[0]+"=") {
					t.Errorf("path %s not under a partition directory", a.Path)
				}
				if !strings.Contains(a.Stats, `"numRecords"`) {
					t.Errorf("stats %s", a.Stats)
				}
			}
			if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "b", 50, 30)}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			got := scanIDs(t, tbl, ScanOptions{})
			want := append(ids("a", 0, 50), ids("b", 50, 30)...)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("scan: got %d ids, want %d", len(got), len(want))
			}
			v1 := int64(1)
			if got := scanIDs(t, tbl, ScanOptions{Version: &v1}); !slices.Equal(got, ids("a", 0, 50)) {
				t.Errorf("time travel to v1: %d ids", len(got))
			}
			// Filter on a partition column and a data column.
			day2 := time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)
			got = scanIDs(t, tbl, ScanOptions{Filter: sqlexpr.And(sqlexpr.Eq("day", day2), sqlexpr.Lt("amount", 30.0))})
			if want := ids("a", 24, 6); !slices.Equal(got, want) {
				t.Errorf("filtered: got %v, want %v", got, want)
			}
			// Projection keeps the requested order.
			for b, err := range tbl.Scan(ctx, ScanOptions{Columns: []string{"amount", "event_id"}}) {
				if err != nil {
					t.Fatal(err)
				}
				if len(b.Columns) != 2 || b.Schema.Fields[0].Name != "amount" {
					t.Fatalf("projection: %s", pq.TypeString(b.Schema))
				}
			}
		})
	}
}

func TestAppendIdempotentTxn(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	txn := &AppTxn{AppID: "query-1", Version: 7}
	r, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 10)}, AppendOptions{Txn: txn})
	if err != nil || r.Skipped {
		t.Fatalf("first: %+v %v", r, err)
	}
	r, err = tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 10)}, AppendOptions{Txn: txn})
	if err != nil || !r.Skipped {
		t.Fatalf("rerun must be skipped: %+v %v", r, err)
	}
	r, err = tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 10)}, AppendOptions{Txn: &AppTxn{AppID: "query-1", Version: 6}})
	if err != nil || !r.Skipped {
		t.Fatalf("older version must be skipped: %+v %v", r, err)
	}
	if got := scanIDs(t, tbl, ScanOptions{}); len(got) != 10 {
		t.Fatalf("%d rows, want 10", len(got))
	}
}

func TestSchemaEnforcement(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	bad := pqtest.MustSchema(t, strings.Replace(eventSchema, `"name":"amount","type":"double"`, `"name":"amount","type":"string"`, 1))
	b, _ := pq.NewBatch(bad)
	_, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{})
	if !errors.Is(err, pq.ErrSchemaMismatch) || !strings.Contains(err.Error(), "amount") ||
		!strings.Contains(err.Error(), "string") || !strings.Contains(err.Error(), "double") {
		t.Fatalf("want a mismatch naming amount, string and double; got %v", err)
	}
	extra := pqtest.MustSchema(t, strings.Replace(eventSchema, `]}`, `,{"name":"zzz","type":"long","nullable":true,"metadata":{}}]}`, 1))
	b, _ = pq.NewBatch(extra)
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{}); !errors.Is(err, pq.ErrSchemaMismatch) || !strings.Contains(err.Error(), "zzz") {
		t.Fatalf("extra column: %v", err)
	}
	nulls := events(t, "n", 0, 2)
	nulls.Columns[0] = &pq.Column{Type: nulls.Columns[0].Type, Kind: pq.KindBytes, Offsets: []int32{0}}
	nulls.Columns[0].AppendNull()
	nulls.Columns[0].AppendString("x")
	if _, err := tbl.Append(ctx, []*pq.Batch{nulls}, AppendOptions{}); err == nil || !strings.Contains(err.Error(), "event_id") {
		t.Fatalf("null in a required column: %v", err)
	}
}

func TestOverwriteReplaceWhere(t *testing.T) {
	ctx := context.Background()
	for _, parts := range [][]string{nil, {"day"}} {
		t.Run(strings.Join(parts, ","), func(t *testing.T) {
			tbl, _ := newTable(t, parts, Options{})
			if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 72)}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			from, to := t0.Add(24*time.Hour), t0.Add(36*time.Hour)
			pred := sqlexpr.And(sqlexpr.Ge("event_time", from), sqlexpr.Lt("event_time", to))
			// A new row outside the predicate: an error, nothing committed.
			_, err := tbl.Overwrite(ctx, pred, []*pq.Batch{events(t, "x", 40, 1)}, AppendOptions{})
			if !errors.Is(err, ErrReplaceWhereMismatch) {
				t.Fatalf("want mismatch, got %v", err)
			}
			snap, _ := tbl.Log().Snapshot(ctx)
			if snap.Version() != 1 {
				t.Fatalf("a failed overwrite committed version %d", snap.Version())
			}
			r, err := tbl.Overwrite(ctx, pred, []*pq.Batch{events(t, "n", 24, 12)}, AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := append(append(ids("a", 0, 24), ids("a", 36, 36)...), ids("n", 24, 12)...)
			slices.Sort(want)
			if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, want) {
				t.Fatalf("after overwrite: got %v\nwant %v", got, want)
			}
			if len(r.Removed) == 0 {
				t.Fatal("nothing removed")
			}
			hist, err := tbl.Log().History(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			ci := hist[0].CommitInfo
			var mode, predText string
			json.Unmarshal(ci.OperationParameters["mode"], &mode)
			json.Unmarshal(ci.OperationParameters["predicate"], &predText)
			if ci.Operation != "WRITE" || mode != "Overwrite" ||
				predText != "event_time >= '2024-03-02 00:00:00' AND event_time < '2024-03-02 12:00:00'" {
				t.Errorf("commitInfo: %s %q %q", ci.Operation, mode, predText)
			}
		})
	}
}

func TestOptimizeAndVacuum(t *testing.T) {
	ctx := context.Background()
	now := t0
	tbl, b := newTable(t, []string{"event_type"}, Options{Clock: func() time.Time { return now }})
	for i := 0; i < 5; i++ {
		if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", i*10, 10)}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := tbl.Log().Snapshot(ctx)
	if n := len(before.Files()); n != 10 {
		t.Fatalf("%d files before optimize", n)
	}
	res, err := tbl.Optimize(ctx, OptimizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.FilesRemoved != 10 || res.FilesAdded != 2 {
		t.Fatalf("optimize: %+v", res)
	}
	after, _ := tbl.Log().Snapshot(ctx)
	for _, a := range after.Files() {
		if a.DataChange {
			t.Errorf("optimize add %s has dataChange=true", a.Path)
		}
	}
	if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, ids("a", 0, 50)) {
		t.Fatalf("after optimize: %d rows", len(got))
	}
	// A second optimize has nothing to do.
	if res, err := tbl.Optimize(ctx, OptimizeOptions{}); err != nil || res.Version != -1 {
		t.Fatalf("second optimize: %+v %v", res, err)
	}

	// An orphan left by a crashed writer.
	if err := objstore.PutBytes(ctx, b, "event_type=click/part-orphan.parquet", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Vacuum(ctx, VacuumOptions{Retention: time.Hour}); !errors.Is(err, ErrRetentionTooShort) {
		t.Fatalf("short retention: %v", err)
	}
	// A zero retention means zero, so it too is refused without Force (it was a silent 168h).
	if _, err := tbl.Vacuum(ctx, VacuumOptions{DryRun: true}); !errors.Is(err, ErrRetentionTooShort) {
		t.Fatalf("zero retention: %v", err)
	}
	// Nothing is old enough yet.
	now = t0.Add(time.Hour)
	if r, err := tbl.Vacuum(ctx, VacuumOptions{Retention: MinVacuumRetention, DryRun: true}); err != nil || len(r.Files) != 0 {
		t.Fatalf("early vacuum: %+v %v", r, err)
	}
	for _, info := range must(objstore.ListAll(ctx, b, "", objstore.ListOptions{})) {
		b.SetModTime(info.Key, t0)
	}
	now = t0.Add(8 * 24 * time.Hour)
	dry, err := tbl.Vacuum(ctx, VacuumOptions{Retention: MinVacuumRetention, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Files) != 11 { // 10 compacted files and the orphan
		t.Fatalf("dry run lists %d files: %v", len(dry.Files), dry.Files)
	}
	if _, err := b.Stat(ctx, dry.Files[0]); err != nil {
		t.Fatal("dry run deleted a file")
	}
	if _, err := tbl.Vacuum(ctx, VacuumOptions{Retention: MinVacuumRetention}); err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, ids("a", 0, 50)) {
		t.Fatalf("after vacuum: %d rows", len(got))
	}
	for _, info := range must(objstore.ListAll(ctx, b, "", objstore.ListOptions{})) {
		if !strings.HasPrefix(info.Key, txlog.LogDir) && !slices.ContainsFunc(after.Files(), func(a *txlog.Add) bool { return a.Path == info.Key }) {
			t.Errorf("vacuum left %s", info.Key)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestTargetFileSizeAndRowGroups(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{Write: pq.WriteOptions{TargetFileSize: 16 << 10, RowGroupRows: 500}})
	r, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 5000)}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Added) < 2 {
		t.Fatalf("target size ignored: %d files", len(r.Added))
	}
	if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, ids("a", 0, 5000)) {
		t.Fatalf("%d rows back", len(got))
	}
}

func TestAppendMergeSchema(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 3)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	wider := pqtest.MustSchema(t, strings.Replace(eventSchema, `]}`, `,{"name":"country","type":"string","nullable":true,"metadata":{}}]}`, 1))
	b, _ := pq.NewBatch(wider)
	old := events(t, "b", 3, 2)
	copy(b.Columns, old.Columns)
	b.Columns[5].AppendString("FR")
	b.Columns[5].AppendNull()
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{}); !errors.Is(err, pq.ErrSchemaMismatch) {
		t.Fatalf("without MergeSchema: %v", err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{MergeSchema: true}); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for bt, err := range tbl.Scan(ctx, ScanOptions{Columns: []string{"event_id", "country"}}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < bt.Len(); i++ {
			got[bt.Columns[0].StringAt(i)] = bt.Columns[1].Value(i)
		}
	}
	want := map[string]any{"a-0": nil, "a-1": nil, "a-2": nil, "b-3": "FR", "b-4": nil}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestOverwriteConflictsWithConcurrentAppend(t *testing.T) {
	ctx := context.Background()
	tbl, b := newTable(t, []string{"day"}, Options{})
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 48)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// A second writer appends into the overwritten day between our read and our commit: the
	// bucket decorator below injects that append just before our commit file is written.
	other := Open(b, Options{})
	day := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	racing := &raceBucket{Bucket: b, before: func() {
		if _, err := other.Append(ctx, []*pq.Batch{events(t, "c", 0, 2)}, AppendOptions{}); err != nil {
			t.Error(err)
		}
	}}
	_, err := Open(racing, Options{}).Overwrite(ctx, sqlexpr.Eq("day", day), []*pq.Batch{events(t, "n", 0, 24)}, AppendOptions{})
	if !errors.Is(err, txlog.ErrConflict) {
		t.Fatalf("want a conflict, got %v", err)
	}
	// The racing append survived and nothing of the overwrite is visible.
	got := scanIDs(t, tbl, ScanOptions{})
	want := append(ids("a", 0, 48), ids("c", 0, 2)...)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got %v", got)
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

// TestRowRules: CHECK constraints, column invariants and generated columns hold for every row
// an append, overwrite or rewrite writes (PROTOCOL.md: true, not false or NULL), and a rule
// medallion cannot evaluate refuses the table before any data file is written.
func TestRowRules(t *testing.T) {
	ctx := context.Background()
	withMeta := func(col, meta string) string {
		return strings.Replace(eventSchema, `"name":"`+col+`","type":"double","nullable":true,"metadata":{}`,
			`"name":"`+col+`","type":"double","nullable":true,"metadata":`+meta, 1)
	}
	nullAmount := func() *pq.Batch {
		b, err := pq.NewBatch(pqtest.MustSchema(t, eventSchema))
		if err != nil {
			t.Fatal(err)
		}
		b.Columns[0].AppendString("n-1")
		b.Columns[1].AppendString("click")
		b.Columns[2].AppendNull()
		b.Columns[3].AppendTime(t0)
		b.Columns[4].AppendInt32(int32(t0.Unix() / 86400))
		return b
	}
	cases := []struct {
		name   string
		props  map[string]string
		schema string
		ok     []*pq.Batch
		bad    *pq.Batch
		want   string // in the violation
	}{
		{"CHECK constraint", map[string]string{"delta.constraints.positive": "amount >= 1"}, eventSchema,
			[]*pq.Batch{events(t, "a", 1, 3)}, events(t, "a", 0, 2), "CHECK constraint positive (amount >= 1) is false"},
		{"CHECK constraint NULL", map[string]string{"delta.constraints.positive": "amount >= 1"}, eventSchema,
			nil, nullAmount(), "is NULL"},
		{"invariant", nil, withMeta("amount", `{"delta.invariants":"{\"expression\":{\"expression\":\"amount < 5\"}}"}`),
			[]*pq.Batch{events(t, "a", 0, 5)}, events(t, "a", 3, 3), "invariant of column amount (amount < 5) is false"},
		{"generated column", nil, withMeta("amount", `{"delta.generationExpression":"length(event_id) * 1.0"}`),
			[]*pq.Batch{events(t, "g", 3, 1)}, events(t, "g", 0, 1), "generated column amount (length(event_id) * 1.0) is false"},
	}
	for _, c := range cases {
		tbl := Open(mem.New(), Options{})
		if _, err := tbl.Create(ctx, pqtest.MustSchema(t, c.schema), nil, c.props); err != nil {
			t.Fatal(err)
		}
		for _, b := range c.ok {
			if _, err := tbl.Append(ctx, []*pq.Batch{b}, AppendOptions{}); err != nil {
				t.Errorf("%s: a row that keeps the rule was refused: %v", c.name, err)
			}
		}
		before, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tbl.Append(ctx, []*pq.Batch{c.bad}, AppendOptions{})
		if !errors.Is(err, ErrRowRuleViolated) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: append: err = %v, want a violation saying %q", c.name, err, c.want)
		}
		_, err = tbl.Overwrite(ctx, nil, []*pq.Batch{c.bad}, AppendOptions{})
		if !errors.Is(err, ErrRowRuleViolated) {
			t.Errorf("%s: overwrite: err = %v, want a violation", c.name, err)
		}
		if after, err := tbl.Latest(ctx); err != nil || after.Version() != before.Version() {
			t.Errorf("%s: a refused write committed: %v", c.name, err)
		}
	}
}

func TestRowRuleMedallionCannotEvaluateRefusesBeforeWriting(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		props   map[string]string
		schema  string
		feature string
	}{
		{map[string]string{"delta.constraints.valid": "my_udf(amount)"}, eventSchema, "checkConstraints"},
		{nil, strings.Replace(eventSchema, `"name":"day","type":"date","nullable":true,"metadata":{}`,
			`"name":"day","type":"date","nullable":true,"metadata":{"delta.generationExpression":"my_to_date(event_time)"}`, 1), "generatedColumns"},
	} {
		b := mem.New()
		tbl := Open(b, Options{})
		if _, err := tbl.Create(ctx, pqtest.MustSchema(t, c.schema), nil, c.props); err != nil {
			t.Fatal(err)
		}
		_, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 1)}, AppendOptions{})
		var fe *txlog.FeatureError
		if !errors.As(err, &fe) || fe.Feature != c.feature || fe.Kind != txlog.WriteAppend {
			t.Errorf("%s: err = %v, want a refusal by %s", c.feature, err, c.feature)
		}
		for info, err := range b.List(ctx, "", objstore.ListOptions{}) {
			if err == nil && !strings.HasPrefix(info.Key, txlog.LogDir) {
				t.Errorf("%s: the refused append wrote %s", c.feature, info.Key)
			}
		}
	}
}

func TestParallelWritersOneCommit(t *testing.T) {
	ctx := context.Background()
	tbl, _ := newTable(t, nil, Options{})
	txn := AppTxn{AppID: "ingest", Version: 1}
	if has, err := tbl.HasTxn(ctx, txn); err != nil || has {
		t.Fatalf("HasTxn before: %v %v", has, err)
	}
	var adds []*txlog.Add
	results := make(chan []*txlog.Add, 2)
	for shard := 0; shard < 2; shard++ {
		w, err := tbl.Writer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		go func(shard int) {
			if err := w.Write(ctx, events(t, fmt.Sprint("s", shard), 0, 100)); err != nil {
				t.Error(err)
			}
			a, err := w.Close(ctx)
			if err != nil {
				t.Error(err)
			}
			results <- a
		}(shard)
	}
	adds = append(<-results, <-results...)
	r, err := tbl.CommitFiles(ctx, adds, AppendOptions{Txn: &txn})
	if err != nil || r.RowsWritten != 200 || len(r.Added) != 2 {
		t.Fatalf("%+v %v", r, err)
	}
	if has, _ := tbl.HasTxn(ctx, txn); !has {
		t.Error("txn not recorded")
	}
	want := append(ids("s0", 0, 100), ids("s1", 0, 100)...)
	slices.Sort(want)
	if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, want) {
		t.Errorf("%d rows", len(got))
	}
}

// TestOperationsThenCheckpoint runs every write operation on partitioned and unpartitioned
// tables, checkpoints, and reads the result back through a fresh log.
func TestOperationsThenCheckpoint(t *testing.T) {
	ctx := context.Background()
	for _, parts := range [][]string{nil, {"event_type"}} {
		t.Run(strings.Join(parts, ","), func(t *testing.T) {
			tbl, b := newTable(t, parts, Options{})
			for i := 0; i < 3; i++ {
				if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", i*20, 20)}, AppendOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tbl.Overwrite(ctx, sqlexpr.Lt("amount", 10.0), []*pq.Batch{events(t, "n", 0, 5)}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.Optimize(ctx, OptimizeOptions{}); err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.Log().Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := tbl.Log().Checkpoint(ctx, snap); err != nil {
				t.Fatal(err)
			}
			want := append(ids("a", 10, 50), ids("n", 0, 5)...)
			slices.Sort(want)
			if got := scanIDs(t, Open(b, Options{}), ScanOptions{}); !slices.Equal(got, want) {
				t.Fatalf("after checkpoint: got %v\nwant %v", got, want)
			}
			// A plain overwrite replaces everything.
			if _, err := tbl.Overwrite(ctx, nil, []*pq.Batch{events(t, "z", 0, 3)}, AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, ids("z", 0, 3)) {
				t.Fatalf("after full overwrite: %v", got)
			}
		})
	}
}

func TestScanAsOfTimestamp(t *testing.T) {
	ctx := context.Background()
	tbl, b := newTable(t, nil, Options{})
	for i := 0; i < 2; i++ {
		if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", i*10, 10)}, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for v := int64(0); v < 3; v++ {
		if err := b.SetModTime(txlog.CommitKey(v), t0.Add(time.Duration(v)*10*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	at := t0.Add(15 * time.Minute)
	if got := scanIDs(t, tbl, ScanOptions{Timestamp: &at}); !slices.Equal(got, ids("a", 0, 10)) {
		t.Errorf("as of %s: %v", at, got)
	}
}

// TestOverwriteTouchesOnlyWhatItMust checks which files a replaceWhere removes and whether
// it had to read them: a whole partition is dropped without a scan, a straddling file is
// rewritten, and files outside the predicate are left alone.
func TestOverwriteTouchesOnlyWhatItMust(t *testing.T) {
	ctx := context.Background()
	metrics := func(tbl *Table) map[string]string {
		hist, err := tbl.Log().History(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for k, v := range hist[0].CommitInfo.OperationMetrics {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			out[k] = s
		}
		return out
	}
	tbl, _ := newTable(t, []string{"day"}, Options{})
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 72)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := tbl.Overwrite(ctx, sqlexpr.Eq("day", "2024-03-02"), []*pq.Batch{events(t, "n", 24, 2)}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics(tbl)
	if len(r.Removed) != 1 || m["numRemovedFiles"] != "1" || m["numDeletedRows"] != "" || m["numCopiedRows"] != "" {
		t.Errorf("whole partition: removed %d, metrics %v", len(r.Removed), m)
	}
	r, err = tbl.Overwrite(ctx, sqlexpr.And(sqlexpr.Ge("event_time", t0.Add(48*time.Hour)), sqlexpr.Lt("event_time", t0.Add(50*time.Hour))),
		[]*pq.Batch{events(t, "m", 48, 1)}, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m = metrics(tbl)
	if len(r.Removed) != 1 || m["numDeletedRows"] != "2" || m["numCopiedRows"] != "22" || m["numOutputRows"] != "23" {
		t.Errorf("straddling file: removed %d, metrics %v", len(r.Removed), m)
	}
}

// TestWriteRowsWritesTheSelection: WriteRows writes exactly the listed rows, partitioned or
// not, and refuses rows out of range or order.
func TestWriteRowsWritesTheSelection(t *testing.T) {
	ctx := context.Background()
	for _, parts := range [][]string{nil, {"event_type"}} {
		tbl, _ := newTable(t, parts, Options{})
		w, err := tbl.Writer(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b := events(t, "e", 0, 50)
		var rows []int
		var want []string
		for i := 0; i < 50; i++ {
			if i%3 == 0 || i == 49 {
				rows = append(rows, i)
				want = append(want, fmt.Sprintf("e-%d", i))
			}
		}
		slices.Sort(want)
		if err := w.WriteRows(ctx, b, rows); err != nil {
			t.Fatal(err)
		}
		for _, bad := range [][]int{{3, 2}, {50}, {-1}, {4, 4}} {
			if err := w.WriteRows(ctx, b, bad); err == nil {
				t.Errorf("partitioned by %v: rows %v accepted", parts, bad)
			}
		}
		adds, err := w.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tbl.CommitFiles(ctx, adds, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := scanIDs(t, tbl, ScanOptions{}); !slices.Equal(got, want) {
			t.Errorf("partitioned by %v: %v, want %v", parts, got, want)
		}
	}
}

// TestVacuumRunsTheWriterCheck: vacuum deletes files, so a writer feature it does not know
// (which may own files vacuum would take for orphans) refuses it ("VACUUM Protocol Check").
func TestVacuumRunsTheWriterCheck(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	tbl := Open(b, Options{})
	if _, err := tbl.Create(ctx, pqtest.MustSchema(t, eventSchema), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, "orphan.parquet", []byte("x")); err != nil {
		t.Fatal(err)
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.Log().Begin(snap)
	tx.SetProtocol(txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"vacuumProtocolCheck"},
		WriterFeatures: []string{"vacuumProtocolCheck", "someFutureFeature"}})
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "UPGRADE PROTOCOL"}); err == nil {
		t.Fatal("a protocol with an unknown writer feature was committed")
	}
	// Another engine wrote it: put the commit in by hand.
	data, err := txlog.MarshalActions([]txlog.Action{{Protocol: &txlog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
		ReaderFeatures: []string{"vacuumProtocolCheck"}, WriterFeatures: []string{"vacuumProtocolCheck", "someFutureFeature"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, txlog.CommitKey(1), data); err != nil {
		t.Fatal(err)
	}
	_, err = tbl.Vacuum(ctx, VacuumOptions{Retention: 0, Force: true})
	if !errors.Is(err, txlog.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "someFutureFeature") {
		t.Errorf("vacuum: err = %v, want a refusal naming someFutureFeature", err)
	}
	if _, err := b.Stat(ctx, "orphan.parquet"); err != nil {
		t.Errorf("the refused vacuum deleted a file: %v", err)
	}
}
