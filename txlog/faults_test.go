package txlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
)

// TestIdempotentWriteUnderEveryFault fails the i-th storage call of an idempotent write
// (i = 1, 2, ... until a run injects nothing), with the write happening before or not at all,
// then lets the writer retry from scratch, as a restarted job would. Whatever failed, the table
// ends with the batch applied exactly once and contiguous versions.
func TestIdempotentWriteUnderEveryFault(t *testing.T) {
	ctx := context.Background()
	for _, after := range []bool{false, true} {
		for i := 1; ; i++ {
			base := mem.New()
			l := fastLog(base, Options{NoAutoCheckpoint: true})
			createTable(t, l, false, nil)
			fb := objstore.WithFaults(base, objstore.FaultPlan{Faults: []objstore.Fault{{Nth: i, After: after}}})
			write := func(b objstore.Bucket) error {
				fl := fastLog(b, Options{NoAutoCheckpoint: true})
				snap, err := fl.Snapshot(ctx)
				if err != nil {
					return err
				}
				if v, ok := snap.TxnVersion("job"); ok && v >= 1 {
					return nil
				}
				tx := fl.Begin(snap)
				tx.SetTxn("job", 1)
				tx.Add(fileAdd("batch-1.parquet", "x"))
				_, err = tx.Commit(ctx, Operation{Name: "STREAMING UPDATE"})
				return err
			}
			firstErr := write(fb)
			if fb.Fired() == 0 {
				if firstErr != nil {
					t.Fatalf("after=%v: clean run failed: %v", after, firstErr)
				}
				if i < 3 {
					t.Fatalf("after=%v: only %d storage calls per write?", after, i-1)
				}
				t.Logf("after=%v: each of %d storage calls failed once, all converged", after, i-1)
				break
			}
			if err := write(fb); err != nil {
				t.Fatalf("after=%v fault %d: retry failed: %v (first: %v)", after, i, err, firstErr)
			}
			snap := mustSnapshot(t, New(base, Options{}))
			if v, ok := snap.TxnVersion("job"); snap.Version() != 1 || len(snap.Files()) != 1 || !ok || v != 1 {
				t.Fatalf("after=%v fault %d: v%d, %d files, txn %d (first err: %v)", after, i, snap.Version(), len(snap.Files()), v, firstErr)
			}
		}
	}
}

// TestCommitOnFullStoreIsNotRetried: a store that refuses a commit for lack of room (or because
// it is read-only) fails the commit at once with the store's error, which names the path; it
// was retried as if it were a lost race and reported "too many commit attempts ... after 100
// attempts". The error is injected as the file backend returns it: the objstore sentinel
// wrapping the *PathError with ENOSPC (or EDQUOT, EROFS) that os gives.
func TestCommitOnFullStoreIsNotRetried(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		sentinel error
		errno    syscall.Errno
	}{
		{"disk full", objstore.ErrStorageFull, syscall.ENOSPC},
		{"quota", objstore.ErrStorageFull, syscall.EDQUOT},
		{"read-only", objstore.ErrStoreReadOnly, syscall.EROFS},
	} {
		for _, blind := range []bool{true, false} {
			base := mem.New()
			createTable(t, fastLog(base, Options{NoAutoCheckpoint: true}), false, nil)
			const path = "/lake/bronze/_delta_log/00000000000000000001.json"
			injected := fmt.Errorf("file: put _delta_log/00000000000000000001.json: %w: writing %s: %w", tc.sentinel, path,
				&fs.PathError{Op: "write", Path: "/lake/bronze/.objstore-tmp/0a1b", Err: tc.errno})
			fb := objstore.WithFaults(base, objstore.FaultPlan{Faults: []objstore.Fault{
				{Op: objstore.OpPutIfAbsent, KeyPrefix: "_delta_log/", Rate: 1, Err: injected},
			}})
			l := fastLog(fb, Options{NoAutoCheckpoint: true})
			tx := l.Begin(mustSnapshot(t, l))
			tx.Add(fileAdd("part-1.parquet", "x"))
			if !blind {
				tx.SetTxn("job", 1)
			}
			_, err := tx.Commit(ctx, Operation{Name: "WRITE"})
			name := fmt.Sprintf("%s (blind append %v)", tc.name, blind)
			switch {
			case !errors.Is(err, tc.sentinel) || !errors.Is(err, tc.errno):
				t.Errorf("%s: commit = %v, want the store's %v", name, err, tc.sentinel)
			case errors.Is(err, ErrTooManyAttempts) || errors.Is(err, ErrCommitUnknown):
				t.Errorf("%s: commit = %v, want a plain failure", name, err)
			case !strings.Contains(err.Error(), path):
				t.Errorf("%s: commit error %q does not name %s", name, err, path)
			}
			if fb.Fired() != 1 {
				t.Errorf("%s: %d commit puts, want 1 (no retry)", name, fb.Fired())
			}
			if v := mustSnapshot(t, New(base, Options{})).Version(); v != 0 {
				t.Errorf("%s: table at version %d, want 0", name, v)
			}
		}
	}
}
