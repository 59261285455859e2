package stream

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
)

// TestDedupLookupFileGoneSaysWayOut: a silver data file the log references is gone from
// storage when a resend below the watermark makes the dedup look-up read it. The run refuses
// (it cannot tell the resend from a new row without the file), naming silver and the file
// once, with the way out.
func TestDedupLookupFileGoneSaysWayOut(t *testing.T) {
	ctx := context.Background()
	lake := mem.New()
	cfg := parseConfig(t, "10m", "  dedup: [event_id]", countGold)
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:00")}})
	mustRun(t, lake, cfg, "available-now")
	appendBronze(t, lake, []ev{{ID: "z", T: hm("12:30")}})
	mustRun(t, lake, cfg, "available-now") // key a evicted: its resend is looked up in silver
	silverT := table.Open(objstore.WithPrefix(lake, cfg.Tables.Silver), table.Options{})
	snap, err := silverT.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for _, f := range snap.Files() {
		if err := silverT.Bucket().Delete(ctx, f.Path); err != nil {
			t.Fatal(err)
		}
		gone = append(gone, f.Path)
	}
	appendBronze(t, lake, []ev{{ID: "a", T: hm("12:00")}})
	_, err = runStream(t, lake, cfg, "available-now")
	if err == nil {
		t.Fatal("the stream ran with a silver file gone from under its dedup look-up")
	}
	msg := err.Error()
	t.Log(msg)
	if !strings.Contains(msg, "gone from storage") || !strings.Contains(msg, "silver "+cfg.Tables.Silver) ||
		!strings.Contains(msg, "restore it") || !strings.Contains(msg, "docs/recovery.md") {
		t.Errorf("error %q does not name silver, the file gone and the way out", msg)
	}
	named := 0
	for _, p := range gone {
		named += strings.Count(msg, p)
	}
	if named != 1 {
		t.Errorf("error %q names the files gone %d times, want once", msg, named)
	}
	if !errors.Is(err, table.ErrDataFileGone) || !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("error %v: want table.ErrDataFileGone and objstore.ErrNotFound", err)
	}
}
