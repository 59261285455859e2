package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestStreamRefusesAGoldTableItMayNotWriteBeforeWritingAnyTable: another engine turns row
// tracking on for gold (every new file then needs row ids, which medallion does not assign);
// the next micro-batch is refused before silver or gold gets a commit, naming the gold table
// and the feature.
func TestStreamRefusesAGoldTableItMayNotWriteBeforeWritingAnyTable(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	appendBronze(t, lake, []ev{{ID: "a", Type: "click", Amount: 1, T: hm("00:00:01")}})
	cfg := parseConfig(t, "2s", "  dedup: [event_id]", `
  - name: g5
    table: gold/g5
    quarantine: silver/late_g5
    window: {type: tumbling, size: 5s}
    group_by: [event_type]
    aggregates: [{fn: count, as: count}]
`)
	mustRun(t, lake, cfg, "available-now")

	gold := table.Open(objstore.WithPrefix(lake, "gold/g5"), table.Options{})
	snap, err := gold.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := gold.Log().Begin(snap)
	tx.SetProtocol(txlog.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{"rowTracking", "domainMetadata"}})
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "SET TBLPROPERTIES"}); err != nil {
		t.Fatal(err)
	}
	versions := func() map[string]int64 {
		out := map[string]int64{}
		for _, p := range []string{"silver/events", "gold/g5", "silver/late_g5"} {
			s, err := table.Open(objstore.WithPrefix(lake, p), table.Options{}).Log().Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out[p] = s.Version()
		}
		return out
	}
	before := versions()
	appendBronze(t, lake, []ev{{ID: "b", Type: "click", Amount: 1, T: hm("00:00:20")}})
	_, err = runStream(t, lake, cfg, "available-now")
	if !errors.Is(err, txlog.ErrUnsupportedFeature) || !strings.Contains(err.Error(), "rowTracking") || !strings.Contains(err.Error(), "gold/g5") {
		t.Fatalf("err = %v, want a refusal naming rowTracking and gold/g5", err)
	}
	after := versions()
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s went from version %d to %d: the refused batch wrote it", p, v, after[p])
		}
	}
}
