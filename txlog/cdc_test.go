package txlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// A table with the change data feed on takes a change with its change rows, refuses one
// without them, and takes appends and rearranges without any; the cdc actions land in the
// commit and never in a snapshot or checkpoint.
func TestCommitChangeWithoutChangeData(t *testing.T) {
	ctx := context.Background()
	b := mem.New()
	l := fastLog(b, Options{NoAutoCheckpoint: true})
	createTableWith(t, l, true, map[string]string{"delta.enableChangeDataFeed": "true"}, &Protocol{MinReaderVersion: 1, MinWriterVersion: 4})
	tx := l.Begin(mustSnapshot(t, l))
	tx.Add(fileAdd("day=1/a.parquet", "1"))
	if _, err := tx.Commit(ctx, Operation{Name: "WRITE"}); err != nil {
		t.Fatalf("append: %v", err)
	}
	change := func(cdc ...*CDC) error {
		snap := mustSnapshot(t, l)
		tx := l.Begin(snap)
		tx.Remove(&Remove{Path: snap.Files()[0].Path, DataChange: true, PartitionValues: snap.Files()[0].PartitionValues})
		tx.Add(fileAdd("day=1/b"+snap.Files()[0].Path[len("day=1/"):], "1"))
		tx.AddCDC(cdc...)
		_, err := tx.Commit(ctx, Operation{Name: "MERGE"})
		return err
	}
	err := change()
	var fe *FeatureError
	if !errors.As(err, &fe) || fe.Feature != "changeDataFeed" || !strings.Contains(err.Error(), "_change_data") {
		t.Fatalf("change without cdc: err = %v, want a changeDataFeed refusal", err)
	}
	if err := change(&CDC{Path: "_change_data/day=1/cdc-1.parquet", PartitionValues: map[string]*string{"day": sp("1")}, Size: 5, DataChange: true}); !errors.Is(err, ErrInvalidTransaction) {
		t.Fatalf("cdc with dataChange=true: err = %v", err)
	}
	if err := change(&CDC{Path: "_change_data/cdc-1.parquet", PartitionValues: map[string]*string{}, Size: 5}); !errors.Is(err, ErrInvalidTransaction) {
		t.Fatalf("cdc without the partition value: err = %v", err)
	}
	cdc := &CDC{Path: "_change_data/day=1/cdc-1.parquet", PartitionValues: map[string]*string{"day": sp("1")}, Size: 5}
	if err := change(cdc); err != nil {
		t.Fatalf("change with cdc: %v", err)
	}
	data, err := objstore.ReadAll(ctx, b, CommitKey(2))
	if err != nil {
		t.Fatal(err)
	}
	acts, err := ParseActions(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []*CDC
	for _, a := range acts {
		if a.CDC != nil {
			got = append(got, a.CDC)
		}
	}
	if len(got) != 1 || got[0].Path != cdc.Path || got[0].Size != 5 || got[0].DataChange || *got[0].PartitionValues["day"] != "1" {
		t.Fatalf("commit 2 cdc actions = %+v, want %+v", got, cdc)
	}
	// Checkpoints are built from the snapshot's state, which holds no cdc: the checkpoint
	// names the data file and nothing under _change_data/.
	snap := mustSnapshot(t, l)
	if err := l.Checkpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	cp, err := objstore.ReadAll(ctx, b, CheckpointKey(2))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cp), "_change_data") {
		t.Fatal("the checkpoint names a change data file")
	}
	if !strings.Contains(string(cp), "day=1/b") {
		t.Fatal("the checkpoint lacks the live data file (test cannot see paths in it)")
	}
	// A rearrange (dataChange=false) needs no change rows.
	snap = mustSnapshot(t, l)
	tx = l.Begin(snap)
	tx.Remove(&Remove{Path: snap.Files()[0].Path, PartitionValues: snap.Files()[0].PartitionValues})
	a := fileAdd("day=1/c.parquet", "1")
	a.DataChange = false
	tx.Add(a)
	if _, err := tx.Commit(ctx, Operation{Name: "OPTIMIZE"}); err != nil {
		t.Fatalf("rearrange: %v", err)
	}
}
