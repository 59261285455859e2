package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
)

// TestStoreFailureIsNotABadFile: a network failure on any read of a data file (the footer, a
// column chunk, a bloom filter) is reported as the store's failure, with the store's error
// still errors.Is-able, and never as a bad data file.
func TestStoreFailureIsNotABadFile(t *testing.T) {
	ctx := context.Background()
	// Three row groups and bloom filters, so the reads fall on footer, pages and filters.
	tbl, b := bloomTable(t, 3000, 1000, []string{"id"}, false)
	_, files := latestFiles(t, tbl)
	if len(files) != 1 {
		t.Fatalf("%d files, want 1", len(files))
	}
	path := files[0].Path
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrStoreRead) || !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, pq.ErrBadDataFile) {
			t.Fatalf("%s: %v\nwant ErrStoreRead wrapping ECONNREFUSED, not ErrBadDataFile", what, err)
		}
		if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "object store") || strings.Contains(msg, "bad data file") {
			t.Fatalf("%s: the message must name the file and the store, not a bad file: %s", what, msg)
		}
	}
	for _, op := range []string{objstore.OpGetRange} {
		for nth := 1; ; nth++ {
			fb := objstore.WithFaults(b, objstore.FaultPlan{Faults: []objstore.Fault{{Op: op, KeyPrefix: path, Nth: nth, Err: syscall.ECONNREFUSED}}})
			ft := Open(fb, Options{})
			rows := 0
			var err error
			for batch, e := range ft.Scan(ctx, ScanOptions{}) {
				if e != nil {
					err = e
					break
				}
				rows += batch.Len()
			}
			if fb.Fired() == 0 {
				if err != nil || rows != 3000 {
					t.Fatalf("no fault: %d rows, %v", rows, err)
				}
				if nth < 2 {
					t.Fatalf("the scan read the file in %d ranged reads: the test covers too little", nth-1)
				}
				break
			}
			check(t, fmt.Sprintf("scan, ranged read %d failing", nth), err)
		}
	}
	snap, _ := latestFiles(t, tbl)
	keys := keyBatch(t, tbl, "id", []any{bloomID(1), bloomAbsent(1)})
	for nth := 1; ; nth++ {
		fb := objstore.WithFaults(b, objstore.FaultPlan{Faults: []objstore.Fault{{Op: objstore.OpGetRange, KeyPrefix: path, Nth: nth, Err: syscall.ECONNREFUSED}}})
		fs, err := Open(fb, Options{}).FileScan(snap, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fs.MayContain(ctx, files[0], keys)
		if fb.Fired() == 0 {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
		check(t, "bloom look-up", err)
	}
}
