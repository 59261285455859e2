package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// TestTableScanAbsoluteDVsElsewhere: a table whose deletion vectors are stored by absolute
// path in another location, as a shallow clone's are (they stay with the source table), scans
// with those DVs applied: the CLI reaches the other location read-only. Built from the golden
// table dv-partitioned-with-checkpoint: its data files copied into a new table, its DV files
// into another directory, and the DV descriptors rewritten as storage type "p".
func TestTableScanAbsoluteDVsElsewhere(t *testing.T) {
	ctx := context.Background()
	src, err := file.OpenReadOnly(fixtureDir(t, "delta-golden", "dv-partitioned-with-checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	snap, err := txlog.New(src, txlog.Options{}).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cloneDir, extDir := t.TempDir(), t.TempDir()
	clone, err := file.New(cloneDir)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := file.New(extDir)
	if err != nil {
		t.Fatal(err)
	}
	copyObj := func(from, to objstore.Bucket, fromKey, toKey string) {
		data, err := objstore.ReadAll(ctx, from, fromKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := objstore.PutBytes(ctx, to, toKey, data); err != nil {
			t.Fatal(err)
		}
	}
	var adds []*txlog.Add
	dvs := 0
	for _, a := range snap.Files() {
		a := *a
		copyObj(src, clone, a.Path, a.Path)
		if dv := a.DeletionVector; dv != nil {
			key, err := table.DeletionVectorPath(dv)
			if err != nil {
				t.Fatal(err)
			}
			copyObj(src, ext, key, filepath.Base(key))
			moved := *dv
			moved.StorageType = "p"
			moved.PathOrInlineDv = "file://" + filepath.ToSlash(filepath.Join(extDir, filepath.Base(key)))
			a.DeletionVector = &moved
			dvs++
		}
		adds = append(adds, &a)
	}
	if dvs == 0 {
		t.Fatal("the fixture has no deletion vectors: the test would prove nothing")
	}
	tx := txlog.New(clone, txlog.Options{}).Begin(nil)
	tx.SetProtocol(snap.Protocol())
	tx.SetMetadata(snap.Metadata())
	tx.Add(adds...)
	if _, err := tx.Commit(ctx, txlog.Operation{Name: "SHALLOW CLONE"}); err != nil {
		t.Fatal(err)
	}
	clone.Close()
	ext.Close()

	out, err := runCLI(t, "table", "scan", cloneDir, "--format", "jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// EXPECTED.md: (part, col1, col2) = (x%10, x, "foo<x%5>") for x in 0..49, except even x < 30.
	var want []int
	for x := range 50 {
		if x%2 != 0 || x >= 30 {
			want = append(want, x)
		}
	}
	var got []int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var row struct {
			Part int    `json:"part"`
			Col1 int    `json:"col1"`
			Col2 string `json:"col2"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if row.Part != row.Col1%10 || row.Col2 != fmt.Sprintf("foo%d", row.Col1%5) {
			t.Errorf("row %s does not follow the fixture's pattern", line)
		}
		got = append(got, row.Col1)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("col1 = %v\nwant %v", got, want)
	}
}
