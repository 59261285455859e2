package late

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
	"github.com/medallion-lake/medallion/txlog"
)

// setGoldProperty commits a metaData action with key=value on gold, as delta-rs's
// set_table_properties does (with the protocol raised to writer version 4 for the change data
// feed, as delta-rs raises it).
func setGoldProperty(t testing.TB, lake objstore.Bucket, path, key, value string) {
	t.Helper()
	ctx := context.Background()
	l := table.Open(objstore.WithPrefix(lake, path), table.Options{}).Log()
	snap, err := l.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := snap.Metadata()
	conf := map[string]string{}
	for k, v := range m.Configuration {
		conf[k] = v
	}
	conf[key] = value
	m.Configuration = conf
	tx := l.Begin(snap)
	tx.SetMetadata(m)
	if p := snap.Protocol(); p.MinWriterVersion < 4 {
		tx.SetProtocol(txlog.Protocol{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: 4})
	}
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "SET TBLPROPERTIES"}); err != nil {
		t.Fatal(err)
	}
}

// checkFeed checks invariant C on the table at path (the feed from version 0 applied in
// order is the table at every version) and returns the feed.
func checkFeed(t testing.TB, lake objstore.Bucket, path string) []cdftest.Version {
	t.Helper()
	vs, err := cdftest.CheckInvariantC(context.Background(), table.Open(objstore.WithPrefix(lake, path), table.Options{}))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return vs
}

// TestMergeLateWritesChangeDataFeed was reproduction 4 of issue 30 (merge-late committed a
// plain remove+add on a table with the feed on, and feed readers saw unchanged windows deleted
// and inserted; it was then refused). Merge-late now writes the change rows in its commit: an
// update_preimage/update_postimage pair for each window it updates and an insert for each new
// one, nothing for the windows it copies; a replay that finds gold right writes nothing; with
// the feed turned off again it writes no change files.
func TestMergeLateWritesChangeDataFeed(t *testing.T) {
	lake, cfg, _ := pipeline(t, 4, 3000, 5, "")
	ctx := context.Background()
	setGoldProperty(t, lake, "gold/t5", "delta.enableChangeDataFeed", "true") // already on: a no-op change
	rep, err := MergeLate(ctx, opts(lake, cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.Gold {
		if g.Gold == nil {
			continue
		}
		path := "gold/" + g.Name
		vs := checkFeed(t, lake, path)
		last := vs[len(vs)-1]
		if last.Version != g.Gold.Version || !last.CDC {
			t.Fatalf("%s: version %d has no change files (merge committed %d)", path, last.Version, g.Gold.Version)
		}
		got := cdftest.Counts([]cdftest.Version{last})
		if int64(got["update_preimage"]) != g.Gold.Updated || int64(got["update_postimage"]) != g.Gold.Updated ||
			int64(got["insert"]) != g.Gold.Inserted || got["delete"] != 0 {
			t.Errorf("%s: change rows %v for %d windows updated and %d inserted", path, got, g.Gold.Updated, g.Gold.Inserted)
		}
		if g.Gold.ChangeRows != int64(len(last.Rows)) || g.Gold.Updated+g.Gold.Inserted == 0 {
			t.Errorf("%s: report says %d change rows, the feed has %d", path, g.Gold.ChangeRows, len(last.Rows))
		}
	}
	before := versions(t, lake)
	if _, err := Replay(ctx, opts(lake, cfg), allData(t, lake)); err != nil {
		t.Fatal(err)
	}
	if after := versions(t, lake); after != before {
		t.Errorf("a replay of a gold already right committed: versions %v -> %v", before, after)
	}
}

// tamperGold changes gold/t5 behind the jobs' backs, in one rewrite (whose change rows the
// table writes by its default difference): the first row is deleted, the second's count
// raised, and the third copied into a window of its keys that has no row.
func tamperGold(t *testing.T, lake objstore.Bucket) {
	t.Helper()
	ctx := context.Background()
	tbl, snap := openSnapshot(t, lake, "gold/t5")
	have := map[string]bool{}
	key := func(b *pq.Batch, i int, start int64) string {
		return fmt.Sprint(b.Column("event_type").Value(i), b.Column("device_id").Value(i), start)
	}
	for b, err := range tbl.Scan(ctx, table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			have[key(b, i, b.Column("window").Children[0].Int64[i])] = true
		}
	}
	seen := 0
	if _, err := tbl.Rewrite(ctx, table.Rewrite{Snapshot: snap, Candidates: snap.Files(),
		File: func(_ context.Context, _ *txlog.Add, read func() ([]*pq.Batch, error)) (bool, []*pq.Batch, error) {
			bs, err := read()
			if err != nil || seen >= 3 {
				return false, nil, err
			}
			out, err := pq.NewBatch(bs[0].Schema)
			if err != nil {
				return false, nil, err
			}
			for _, b := range bs {
				for i := range b.Len() {
					seen++
					switch seen {
					case 1:
						continue
					case 2:
						out.AppendRow(b, i)
						out.Column("n").Int64[out.Len()-1] += 1000
						continue
					case 3:
						w := b.Column("window").Children
						for k := int64(1); ; k++ {
							s := w[0].Int64[i] - k*5_000_000
							if !have[key(b, i, s)] {
								out.AppendRow(b, i)
								nw := out.Column("window").Children
								nw[0].Int64[out.Len()-1], nw[1].Int64[out.Len()-1] = s, s+5_000_000
								break
							}
						}
					}
					out.AppendRow(b, i)
				}
			}
			return true, []*pq.Batch{out}, nil
		},
		Operation: func(table.RewriteResult) txlog.Operation { return txlog.Operation{Name: "TAMPER"} }}); err != nil {
		t.Fatal(err)
	}
}

// A replay writes, for each window it recomputes, an update pair where gold's row differs, a
// delete where the window has no rows any more, an insert where gold lacked it, and nothing
// where gold was right; invariant C holds across the tampering and the replay.
func TestReplayWritesChangeDataFeed(t *testing.T) {
	lake, cfg, _ := pipeline(t, 5, 2000, 4, "")
	ctx := context.Background()
	if _, err := MergeLate(ctx, opts(lake, cfg)); err != nil {
		t.Fatal(err)
	}
	tamperGold(t, lake)
	rep, err := Replay(ctx, opts(lake, cfg), allData(t, lake))
	if err != nil {
		t.Fatal(err)
	}
	vs := checkFeed(t, lake, "gold/t5")
	var commit *writeStats
	for _, g := range rep.Gold {
		if g.Name == "t5" {
			commit = g.Gold
		}
	}
	if commit == nil {
		t.Fatal("replay committed nothing to gold/t5")
	}
	got := cdftest.Counts([]cdftest.Version{vs[len(vs)-1]})
	want := map[string]int{"insert": 1, "delete": 1, "update_preimage": 1, "update_postimage": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("replay's change rows = %v, want %v (the three tampered rows)", got, want)
	}
	checkFeed(t, lake, "gold/s10")
}

// allData is a replay range holding every window of the lake's rows, an hour to spare on each
// side. A range of a century (2000 to 2100) would do as well, but replay's plan walks every
// window start of its range (at a 5 s slide, 165 million since 2000): under -race that was 8 of
// TestReplayWritesChangeDataFeed's 19 CPU s, spent on windows no row can be in.
func allData(t testing.TB, lake objstore.Bucket) Range {
	t.Helper()
	ts := silverTimes(t, lake)
	return Range{From: time.UnixMicro(ts[0]).UTC().Add(-time.Hour), To: time.UnixMicro(ts[len(ts)-1]).UTC().Add(time.Hour)}
}

func versions(t testing.TB, lake objstore.Bucket) [2]int64 {
	t.Helper()
	var out [2]int64
	for i, p := range []string{"gold/t5", "gold/s10"} {
		_, snap := openSnapshot(t, lake, p)
		out[i] = snap.Version()
	}
	return out
}
