package late

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/table"
)

// TestDataFileGoneSaysWayOut: a data file the log references is gone from storage (deleted by
// hand, a lifecycle rule). Merge-late and replay refuse naming the table and the file once
// (not under each caller's prefix again) and the way out for that table.
func TestDataFileGoneSaysWayOut(t *testing.T) {
	ctx := context.Background()
	everything := Range{From: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}
	for _, tc := range []struct {
		table, what, wayOut string
		merge               bool // merge-late reads the table (replay always does)
	}{
		{"gold/t5", "late: gold t5: ", "medallion run refresh --table t5", true},
		{"silver/late_t5", "late: quarantine t5: ", "medallion run refresh --table t5", true},
		{"silver/events", "late: silver silver/events: ", "--source bronze", false},
	} {
		t.Run(tc.table, func(t *testing.T) {
			lake, cfg, _ := pipeline(t, 11, 5000, 6, "")
			tb, snap := openSnapshot(t, lake, tc.table)
			var gone []string
			for _, f := range snap.Files() {
				if err := tb.Bucket().Delete(ctx, f.Path); err != nil {
					t.Fatal(err)
				}
				gone = append(gone, f.Path)
			}
			if len(gone) == 0 {
				t.Fatalf("%s has no files", tc.table)
			}
			o := opts(lake, cfg)
			check := func(job string, err error) {
				t.Helper()
				if err == nil {
					t.Fatalf("%s ran with the files of %s gone", job, tc.table)
				}
				msg := err.Error()
				named := 0
				for _, p := range gone {
					named += strings.Count(msg, p)
				}
				if !strings.HasPrefix(msg, tc.what+"data file ") || strings.Count(msg, tc.what) != 1 || named != 1 ||
					!strings.Contains(msg, "gone from storage") || !strings.Contains(msg, tc.wayOut) {
					t.Errorf("%s: %q, want %q once, a file gone named once and %q", job, msg, tc.what, tc.wayOut)
				}
				if !errors.Is(err, table.ErrDataFileGone) || !errors.Is(err, objstore.ErrNotFound) {
					t.Errorf("%s: %v: want table.ErrDataFileGone and objstore.ErrNotFound", job, err)
				}
			}
			_, err := MergeLate(ctx, o)
			if tc.merge {
				check("merge-late", err)
			} else if err != nil {
				t.Fatalf("merge-late: %v", err)
			}
			_, err = Replay(ctx, o, everything)
			check("replay", err)
		})
	}
}
