package late

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// setGoldProperty commits a metaData action with key=value on gold, as delta-rs's
// set_table_properties does (with the protocol raised to writer version 4 for the change data
// feed, as delta-rs raises it).
func setGoldProperty(t *testing.T, lake objstore.Bucket, path, key, value string) {
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

// TestMergeLateRefusesGoldWithChangeDataFeed is reproduction 4 of issue 30: with
// delta.enableChangeDataFeed=true on gold, merge-late committed a plain remove+add, and change
// feed readers saw unchanged windows deleted and inserted. It must refuse, naming the table and
// the feature, with gold untouched; with the feed off again it merges as before.
func TestMergeLateRefusesGoldWithChangeDataFeed(t *testing.T) {
	lake, cfg, _ := pipeline(t, 4, 3000, 5, "")
	ctx := context.Background()
	setGoldProperty(t, lake, "gold/t5", "delta.enableChangeDataFeed", "true")
	before := map[string]int64{"gold/t5": testutil.TableVersion(t, lake, "gold/t5"), "gold/s10": testutil.TableVersion(t, lake, "gold/s10")}
	rows := goldState(t, lake, "gold/t5")

	_, err := MergeLate(ctx, opts(lake, cfg))
	if !errors.Is(err, txlog.ErrUnsupportedFeature) {
		t.Fatalf("merge-late into a gold table with a change data feed: err = %v, want ErrUnsupportedFeature", err)
	}
	for _, want := range []string{"changeDataFeed", "gold/t5", "delta.enableChangeDataFeed=false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if v := testutil.TableVersion(t, lake, "gold/t5"); v != before["gold/t5"] {
		t.Errorf("gold/t5 went from version %d to %d", before["gold/t5"], v)
	}
	if got := goldState(t, lake, "gold/t5"); strings.Join(got, "\n") != strings.Join(rows, "\n") {
		t.Error("gold/t5's rows changed")
	}

	// Replay rewrites gold too: refused the same way.
	if _, err := Replay(ctx, opts(lake, cfg), Range{From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}); !errors.Is(err, txlog.ErrUnsupportedFeature) {
		t.Errorf("replay: err = %v, want ErrUnsupportedFeature", err)
	}

	setGoldProperty(t, lake, "gold/t5", "delta.enableChangeDataFeed", "false")
	rep, err := MergeLate(ctx, opts(lake, cfg))
	if err != nil {
		t.Fatal(err)
	}
	if rep.LateRows == 0 {
		t.Error("no late rows merged once the feed was off")
	}
}
