package table

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/pq/pqtest"
	"github.com/medallion-lake/medallion/txlog"
)

// changeRow renders a change row of the events table as "id|type|amount|change|version".
func changeRow(b *pq.Batch, r int) string {
	amount := "NULL"
	if c := b.Column("amount"); !c.IsNull(r) {
		amount = fmt.Sprint(c.Float64[r])
	}
	return fmt.Sprintf("%s|%s|%s|%s|%d", b.Column("event_id").StringAt(r), b.Column("event_type").StringAt(r), amount,
		b.Column(ChangeTypeColumn).StringAt(r), b.Column(CommitVersionColumn).Int64[r])
}

// commitRaw writes version v of the log by hand, as another engine would, and sets its
// modification time.
func commitRaw(t *testing.T, b *mem.Bucket, v int64, at time.Time, actions ...txlog.Action) {
	t.Helper()
	data, err := txlog.MarshalActions(actions)
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytesIfAbsent(context.Background(), b, txlog.CommitKey(v), data); err != nil {
		t.Fatal(err)
	}
	if err := b.SetModTime(txlog.CommitKey(v), at); err != nil {
		t.Fatal(err)
	}
}

// writeChangeFile writes rows (the events schema plus _change_type) as a change data file.
func writeChangeFile(t *testing.T, b objstore.Bucket, partCols []string, rows [][4]string) *txlog.CDC {
	t.Helper()
	schema := pqtest.MustSchema(t, eventSchema)
	schema.Fields = append(schema.Fields, txlog.StructField{Name: ChangeTypeColumn, Type: txlog.PrimitiveType{Name: "string"}, Nullable: true})
	batch, err := pq.NewBatch(schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows { // id, type, amount, change type
		batch.Columns[0].AppendString(r[0])
		batch.Columns[1].AppendString(r[1])
		var amount float64
		fmt.Sscan(r[2], &amount)
		batch.Columns[2].AppendFloat64(amount)
		batch.Columns[3].AppendTime(t0)
		batch.Columns[4].AppendInt32(int32(t0.Unix() / 86400))
		batch.Columns[5].AppendString(r[3])
	}
	w, err := NewDataWriter(objstore.WithPrefix(b, ChangeDataDir), schema, partCols, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	adds, err := w.Close(context.Background())
	if err != nil || len(adds) != 1 {
		t.Fatalf("change file: %v, %d files", err, len(adds))
	}
	return &txlog.CDC{Path: ChangeDataDir + adds[0].Path, PartitionValues: adds[0].PartitionValues, Size: adds[0].Size}
}

// readChanges collects the rendered rows of each version of a change feed read, and the
// commit timestamps it reports, stopping at the first error.
func readChanges(tbl *Table, from, to int64) (map[int64][]string, map[int64]time.Time, error) {
	rows := map[int64][]string{}
	times := map[int64]time.Time{}
	for cs, err := range tbl.Changes(context.Background(), from, to) {
		if err != nil {
			return rows, times, err
		}
		for r := 0; r < cs.Rows.Len(); r++ {
			rows[cs.Version] = append(rows[cs.Version], changeRow(cs.Rows, r))
			if got := time.UnixMicro(cs.Rows.Column(CommitTimestampColumn).Int64[r]).UTC(); !got.Equal(cs.Timestamp) {
				return rows, times, fmt.Errorf("version %d row %d: _commit_timestamp %s, the set says %s", cs.Version, r, got, cs.Timestamp)
			}
		}
		slices.Sort(rows[cs.Version])
		times[cs.Version] = cs.Timestamp
	}
	return rows, times, nil
}

// fileWith returns the live file of the snapshot in partition event_type=typ.
func fileWith(t *testing.T, tbl *Table, typ string) *txlog.Add {
	t.Helper()
	snap, err := tbl.Log().Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range snap.Files() {
		if v := a.PartitionValues["event_type"]; v != nil && *v == typ {
			return a
		}
	}
	t.Fatalf("no file in partition %s", typ)
	return nil
}

// TestChangesReadsEachKindOfVersion writes a log by hand (as Spark would) with each kind of
// version a change feed reader meets, and checks the rows read against the rows the test put
// there: a version with change data files is read from them alone; one without is read from
// its data-changing adds (inserts) and removes (deletes, partition values taken from the
// removed add when the remove lacks them); a dataChange=false rewrite yields nothing; a file
// re-added with a deletion vector deletes just the rows the vector masks; a commit turning the
// feed off ends the readable range with ErrChangeFeedOff naming it.
func TestChangesReadsEachKindOfVersion(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	tbl := Open(b, Options{})
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	at := func(v int64) time.Time { return base.Add(time.Duration(v) * time.Minute) }
	if _, err := tbl.Create(ctx, pqtest.MustSchema(t, eventSchema), []string{"event_type"}, map[string]string{ChangeFeedProperty: "true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, []*pq.Batch{events(t, "a", 0, 4)}, AppendOptions{}); err != nil { // v1
		t.Fatal(err)
	}
	for v := int64(0); v <= 1; v++ {
		if err := b.SetModTime(txlog.CommitKey(v), at(v)); err != nil {
			t.Fatal(err)
		}
	}
	// v2: an update of a-1 (view) with its change file; the rewritten view file holds a-1 (100) and a-3.
	view := fileWith(t, tbl, "view")
	w, err := NewDataWriter(b, pqtest.MustSchema(t, eventSchema), []string{"event_type"}, pq.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upd := events(t, "a", 1, 3) // a-1 view, a-2 click, a-3 view: keep the views
	upd = upd.Filter([]bool{true, false, true})
	upd.Columns[2].Float64[0] = 100
	if err := w.Write(ctx, upd); err != nil {
		t.Fatal(err)
	}
	rewritten, err := w.Close(ctx)
	if err != nil || len(rewritten) != 1 {
		t.Fatalf("rewrite: %v %d", err, len(rewritten))
	}
	cdc := writeChangeFile(t, b, []string{"event_type"}, [][4]string{{"a-1", "view", "1", "update_preimage"}, {"a-1", "view", "100", "update_postimage"}})
	commitRaw(t, b, 2, at(2), txlog.Action{CommitInfo: &txlog.CommitInfo{Operation: "UPDATE"}},
		txlog.Action{Remove: tbl.RemoveOf(view, true)}, txlog.Action{Add: rewritten[0]}, txlog.Action{CDC: cdc})
	// v3: a DELETE of the click file, its remove without partition values (an old writer).
	click := fileWith(t, tbl, "click")
	del := int64(1)
	commitRaw(t, b, 3, at(3), txlog.Action{Remove: &txlog.Remove{Path: click.Path, DeletionTimestamp: &del, DataChange: true}})
	// v4: compaction of the view file: dataChange=false both ways.
	moved := *rewritten[0]
	moved.Path = strings.Replace(moved.Path, ".parquet", "-c.parquet", 1)
	moved.DataChange = false
	data, err := objstore.ReadAll(ctx, b, rewritten[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, moved.Path, data); err != nil {
		t.Fatal(err)
	}
	commitRaw(t, b, 4, at(4), txlog.Action{Remove: tbl.RemoveOf(rewritten[0], false)}, txlog.Action{Add: &moved})
	// v5: a DELETE of a-3 by deletion vector: the file is removed and re-added masking row 1.
	blob := dvEncodeArray([]uint64{1}, nil)
	padded := append(blob, make([]byte, (4-len(blob)%4)%4)...)
	withDV := moved
	withDV.DataChange = true
	withDV.DeletionVector = &txlog.DeletionVector{StorageType: "i", PathOrInlineDv: z85Encode(padded), SizeInBytes: int32(len(blob)), Cardinality: 1}
	commitRaw(t, b, 5, at(5), txlog.Action{Remove: tbl.RemoveOf(&moved, true)}, txlog.Action{Add: &withDV})

	want := map[int64][]string{
		1: {"a-0|click|0|insert|1", "a-1|view|1|insert|1", "a-2|click|2|insert|1", "a-3|view|3|insert|1"},
		2: {"a-1|view|100|update_postimage|2", "a-1|view|1|update_preimage|2"},
		3: {"a-0|click|0|delete|3", "a-2|click|2|delete|3"},
		5: {"a-3|view|3|delete|5"},
	}
	rows, times, err := readChanges(tbl, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	for v := range want {
		slices.Sort(want[v])
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("changes 0..latest:\n got %v\nwant %v", rows, want)
	}
	for v, ts := range times {
		if !ts.Equal(at(v)) {
			t.Errorf("version %d: commit timestamp %s, its commit file's time is %s", v, ts, at(v))
		}
	}
	// A sub-range reads just its versions.
	if rows, _, err := readChanges(tbl, 2, 3); err != nil || fmt.Sprint(rows) != fmt.Sprint(map[int64][]string{2: want[2], 3: want[3]}) {
		t.Fatalf("changes 2..3: %v %v", rows, err)
	}

	// The latest version with change rows, as the status page shows it: v4 (compaction) has none.
	for _, c := range []struct {
		at, lookBack int64
		want         int64
		found        bool
	}{{5, 10, 5, true}, {4, 10, 3, true}, {4, 1, -1, false}, {1, 5, 1, true}, {0, 5, -1, false}} {
		snap, err := tbl.Log().SnapshotAt(ctx, c.at)
		if err != nil {
			t.Fatal(err)
		}
		if v, found, err := tbl.LatestChangeVersion(ctx, snap, int(c.lookBack)); err != nil || v != c.want || found != c.found {
			t.Errorf("LatestChangeVersion at %d, %d back = %d %v %v; want %d %v", c.at, c.lookBack, v, found, err, c.want, c.found)
		}
	}

	// v6 turns the feed off: reading past it fails there, after the versions before it.
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md := snap.Metadata()
	md.Configuration = map[string]string{ChangeFeedProperty: "false"}
	commitRaw(t, b, 6, at(6), txlog.Action{MetaData: &md})
	if snap6, err := tbl.Log().Snapshot(ctx); err != nil {
		t.Fatal(err)
	} else if v, found, err := tbl.LatestChangeVersion(ctx, snap6, 10); err != nil || found {
		t.Errorf("LatestChangeVersion with the feed off = %d %v %v; want none", v, found, err)
	}
	rows, _, err = readChanges(tbl, 1, -1)
	if !errors.Is(err, ErrChangeFeedOff) || !strings.Contains(err.Error(), "version 6") || len(rows) != 4 {
		t.Fatalf("over the version that turned the feed off: %v (%d versions read first)", err, len(rows))
	}
	if _, _, err := readChanges(tbl, 6, 6); !errors.Is(err, ErrChangeFeedOff) {
		t.Fatalf("from a version with the feed off: %v", err)
	}
	if _, _, err := readChanges(tbl, 7, -1); !errors.Is(err, txlog.ErrVersionNotFound) {
		t.Fatalf("from past the latest version: %v", err)
	}

	// Vacuum deleted the change file: the read names it.
	if err := b.Delete(ctx, cdc.Path); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readChanges(tbl, 2, 2); !errors.Is(err, ErrChangeDataGone) || !strings.Contains(err.Error(), cdc.Path) {
		t.Fatalf("vacuumed change file: %v", err)
	}

	// VersionAt: the first version committed at or after a time.
	for _, c := range []struct {
		ts   time.Time
		want int64
	}{{base.Add(-time.Hour), 0}, {at(2), 2}, {at(2).Add(time.Second), 3}, {at(6), 6}} {
		if v, err := tbl.VersionAt(ctx, c.ts); err != nil || v != c.want {
			t.Errorf("VersionAt(%s) = %d, %v; want %d", c.ts, v, err, c.want)
		}
	}
	if _, err := tbl.VersionAt(ctx, at(7)); !errors.Is(err, txlog.ErrVersionNotFound) {
		t.Errorf("VersionAt after the latest commit: %v", err)
	}
}

// TestChangesGoldenGetChanges reads delta-golden's deltalog-getChanges (Spark's log; its data
// files were never written). As is, its feed is off. With the property turned on in a copy,
// version 0 plans its add as inserts, version 1 its cdc file alone (with the cdc action's
// partition values; the remove in the same commit is ignored), version 2 (protocol and txn
// only) nothing; reading version 0 names the missing data file.
func TestChangesGoldenGetChanges(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(fixtureRoot(t), "delta-golden", "deltalog-getChanges", "_delta_log")
	b := mem.New()
	for v := int64(0); v <= 2; v++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%020d.json", v)))
		if err != nil {
			t.Fatal(err)
		}
		if err := objstore.PutBytes(ctx, b, txlog.CommitKey(v), data); err != nil {
			t.Fatal(err)
		}
	}
	tbl := Open(b, Options{})
	_, err := tbl.OpenChanges(ctx, 0, -1)
	if !errors.Is(err, ErrChangeFeedOff) || !strings.Contains(err.Error(), "version 0") {
		t.Fatalf("fixture as is: %v", err)
	}
	// Turned on by a later commit: the error says where a readable range starts.
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	md := snap.Metadata()
	md.Configuration = map[string]string{ChangeFeedProperty: "true"}
	later, err := txlog.MarshalActions([]txlog.Action{{MetaData: &md}})
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, b, txlog.CommitKey(3), later); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(b, Options{}).OpenChanges(ctx, 1, -1); !errors.Is(err, ErrChangeFeedOff) || !strings.Contains(err.Error(), "on from version 3") {
		t.Fatalf("feed turned on at version 3: %v", err)
	}
	if err := b.Delete(ctx, txlog.CommitKey(3)); err != nil {
		t.Fatal(err)
	}

	data, err := objstore.ReadAll(ctx, b, txlog.CommitKey(0))
	if err != nil {
		t.Fatal(err)
	}
	on := strings.Replace(string(data), `"configuration":{}`, `"configuration":{"delta.enableChangeDataFeed":"true"}`, 1)
	if on == string(data) {
		t.Fatal("fixture's metadata has no empty configuration to turn the feed on in")
	}
	if err := objstore.PutBytes(ctx, b, txlog.CommitKey(0), []byte(on)); err != nil {
		t.Fatal(err)
	}
	tbl = Open(b, Options{})
	f, err := tbl.OpenChanges(ctx, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if from, to := f.Range(); from != 0 || to != 2 {
		t.Fatalf("range %d..%d, want 0..2", from, to)
	}
	var plans []string
	for v := int64(0); v <= 2; v++ {
		vc, err := f.Plan(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, cf := range vc.Files {
			var pv []string
			for k, p := range cf.PartitionValues {
				pv = append(pv, k+"="+*p)
			}
			plans = append(plans, fmt.Sprintf("v%d %s %q %v", v, cf.Path, cf.Type, pv))
		}
	}
	want := []string{`v0 fake/path/1 "insert" []`, `v1 fake/path/2 "" [partition_foo=partition_bar]`}
	if !slices.Equal(plans, want) {
		t.Fatalf("plans:\n got %q\nwant %q", plans, want)
	}
	_, _, err = readChanges(tbl, 0, 0)
	if !errors.Is(err, ErrChangeDataGone) || !strings.Contains(err.Error(), "fake/path/1") {
		t.Fatalf("reading the missing data file: %v", err)
	}
}

// TestConcatMatchesRowAppends: the feed's batch concatenation (Batch.AppendRange: slices for
// flat kinds, row by row for nested ones, null masks padded) gives the rows that appending them
// one at a time does, for every type, with and without nulls on either side.
func TestConcatMatchesRowAppends(t *testing.T) {
	all, _ := pqtest.AllTypesBatch(t)
	// Pieces: the whole batch, its first row alone (no nulls in most columns), the rest.
	first := all.Filter(func() []bool { k := make([]bool, all.Len()); k[0] = true; return k }())
	rest := all.Filter(func() []bool {
		k := make([]bool, all.Len())
		for i := 1; i < len(k); i++ {
			k[i] = true
		}
		return k
	}())
	for _, parts := range [][]*pq.Batch{{first, rest}, {rest, first}, {first, first, all}, {all, rest, first}} {
		want, err := pq.NewBatch(all.Schema)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			for r := 0; r < p.Len(); r++ {
				want.AppendRow(p, r)
			}
		}
		got, err := (&ChangeFeed{out: all.Schema}).concat(parts)
		if err != nil {
			t.Fatal(err)
		}
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
		if got.Len() != want.Len() {
			t.Fatalf("%d rows, want %d", got.Len(), want.Len())
		}
		for r := 0; r < want.Len(); r++ {
			if g, w := fmt.Sprint(got.Row(r)), fmt.Sprint(want.Row(r)); g != w {
				t.Fatalf("row %d:\n got %s\nwant %s", r, g, w)
			}
		}
	}
}
