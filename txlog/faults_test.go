package txlog

import (
	"context"
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
			l := fastLog(base, WithAutoCheckpoint(false))
			createTable(t, l, false, nil)
			fb := objstore.WithFaults(base, objstore.FaultPlan{Faults: []objstore.Fault{{Nth: i, After: after}}})
			write := func(b objstore.Bucket) error {
				fl := fastLog(b, WithAutoCheckpoint(false))
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
			snap := mustSnapshot(t, New(base))
			if v, ok := snap.TxnVersion("job"); snap.Version() != 1 || len(snap.Files()) != 1 || !ok || v != 1 {
				t.Fatalf("after=%v fault %d: v%d, %d files, txn %d (first err: %v)", after, i, snap.Version(), len(snap.Files()), v, firstErr)
			}
		}
	}
}
