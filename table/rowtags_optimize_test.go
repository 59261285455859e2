package table

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/pq"
)

// TestOptimizeKeepsRowTags: optimize's output file carries the row tag its inputs' tags add up
// to, which equals the hashes of the rows read back from it; a bin with one untagged input
// gets no tag (its rows are unknown to the tags), and the rest of the output is as before.
func TestOptimizeKeepsRowTags(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		untagged bool // the last append writes no tag
	}{{"all tagged", false}, {"one input untagged", true}} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, _ := newTable(t, nil, Options{})
			for i, from := range []int{0, 4, 2} { // overlapping hours: groups spread over files
				opts := AppendOptions{RowTags: &eventTags}
				if tc.untagged && i == 2 {
					opts.RowTags = nil
				}
				if _, err := tbl.Append(ctx, []*pq.Batch{events(t, string(rune('a'+i)), from, 5)}, opts); err != nil {
					t.Fatal(err)
				}
			}
			res, err := tbl.Optimize(ctx, OptimizeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.FilesRemoved != 3 || res.FilesAdded != 1 {
				t.Fatalf("optimize removed %d files and added %d, want 3 and 1", res.FilesRemoved, res.FilesAdded)
			}
			snap, _, h := eventHasher(t, tbl)
			out := snap.Files()[0]
			if out.Tags[OptimizeTargetSizeTag] == "" {
				t.Errorf("optimize's own tags are gone: %v", out.Tags)
			}
			got, ok := h.Trusted(out)
			if tc.untagged {
				if _, has := out.Tags[RowTagKey]; has {
					t.Errorf("a bin with an untagged input got tag %q", out.Tags[RowTagKey])
				}
				return
			}
			if !ok {
				t.Fatalf("the output's tag %q is not trusted", out.Tags[RowTagKey])
			}
			matchScan(t, tbl, h, got, 15, 9)
		})
	}
}
