package late

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// snapHasher returns the schema of a gold snapshot and the hasher of its row tags.
func snapHasher(t *testing.T, snap *txlog.Snapshot) (*txlog.StructType, *table.RowHasher) {
	t.Helper()
	schema, err := snap.Schema()
	if err != nil {
		t.Fatal(err)
	}
	h, err := table.NewRowHasher(snap, schema, *goldRowTags())
	if err != nil {
		t.Fatal(err)
	}
	return schema, h
}

// TestMergeLateTagsMatchRows: merge-late takes the tags of the files it writes in place of
// gold's files from the old files' tags (fileTags) instead of hashing every row it keeps. The
// tag a replay then trusts to decide "unchanged" must be exactly what hashing the file's rows
// gives: every gold file after the merge, those it rewrote among them, is read back and hashed.
func TestMergeLateTagsMatchRows(t *testing.T) {
	ctx := context.Background()
	lake, cfg, _ := pipeline(t, 31, 3000, 5, slidingNumericYAML)
	rep, err := MergeLate(ctx, opts(lake, cfg))
	if err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for _, g := range rep.Gold {
		if g.Gold != nil {
			rewritten += g.Gold.FilesRemoved
		}
	}
	if rewritten == 0 {
		t.Fatal("merge-late rewrote no gold file: nothing to test")
	}
	for _, g := range cfg.Gold {
		tbl, snap := openSnapshot(t, lake, "gold/"+g.Name)
		schema, h := snapHasher(t, snap)
		fs, err := tbl.FileScan(snap, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range snap.Files() {
			tagged, ok := h.Trusted(f)
			if !ok {
				t.Errorf("%s %s: tag %q not trusted", g.Name, f.Path, f.Tags[table.RowTagKey])
				continue
			}
			batches, err := fs.ReadFile(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			hashed := table.GroupSums{}
			for _, b := range batches {
				cols, err := pq.Conform(schema, b)
				if err != nil {
					t.Fatal(err)
				}
				h.SumRows(hashed, cols, b.Len())
			}
			if len(hashed) != len(tagged) {
				t.Errorf("%s %s: %d windows tagged, %d read back", g.Name, f.Path, len(tagged), len(hashed))
			}
			for w, s := range hashed {
				if tagged[w] != s {
					t.Errorf("%s %s: window %d tagged %x, its rows hash to %x", g.Name, f.Path, w, tagged[w], s)
				}
			}
		}
	}
}
