package table

import (
	"context"
	"testing"
)

// TestGroupRangesPruneRowGroups scans a file of 12 row groups of 1000 rows, whose "at" and
// "seq" columns grow with the row, with ranges that meet two of them: only those two are
// read, every row of each (the ranges filter no rows), and MayContain answers for them alone.
// A column whose statistics cannot be compared as int64 (an integer) prunes nothing.
func TestGroupRangesPruneRowGroups(t *testing.T) {
	ctx := context.Background()
	tbl, _ := bloomTable(t, 12000, 1000, []string{"id"}, false)
	snap, files := latestFiles(t, tbl)
	for _, tc := range []struct {
		col           string
		ranges        [][2]int64
		read, skipped int64
		rows          int
	}{
		{"at", [][2]int64{{bloomAt(2500), bloomAt(2600)}, {bloomAt(9000), bloomAt(9000)}}, 2, 10, 2000},
		{"seq", [][2]int64{{bloomSeq(999), bloomSeq(1000)}}, 2, 10, 2000},
		{"seq", [][2]int64{{bloomSeq(12000), bloomSeq(20000)}}, 0, 12, 0},
		{"shard", [][2]int64{{0, 0}}, 12, 0, 12000},
	} {
		fs, err := tbl.FileScan(snap, []string{"id", tc.col}, nil)
		if err != nil {
			t.Fatal(err)
		}
		fs.Groups = &GroupRanges{Column: tc.col, Ranges: tc.ranges}
		if got := len(scanRows(t, fs, files)); got != tc.rows {
			t.Errorf("%s %v: %d rows, want %d", tc.col, tc.ranges, got, tc.rows)
		}
		if read, skipped := fs.Groups.Counts(); read != tc.read || skipped != tc.skipped {
			t.Errorf("%s %v: %d row groups read, %d left out; want %d and %d", tc.col, tc.ranges, read, skipped, tc.read, tc.skipped)
		}
	}
	// Key 5000 is in row group 5: present for a plain probe, ruled out when only groups 2 and
	// 9 count; key 2550 is in group 2 either way.
	keys := keyBatch(t, tbl, "id", []any{bloomID(5000), bloomID(2550)})
	fs, err := tbl.FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	may, err := fs.MayContain(ctx, files[0], keys)
	if err != nil || !may[0] || !may[1] {
		t.Fatalf("plain MayContain: %v, %v; want both true", may, err)
	}
	fs.Groups = &GroupRanges{Column: "at", Ranges: [][2]int64{{bloomAt(2500), bloomAt(2600)}, {bloomAt(9000), bloomAt(9000)}}}
	may, err = fs.MayContain(ctx, files[0], keys)
	if err != nil || may[0] || !may[1] {
		t.Fatalf("MayContain within row groups 2 and 9: %v, %v; want false, true", may, err)
	}
}
