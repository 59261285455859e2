package stream

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/silver"
)

// CreateTables creates, from the bronze table's schema, the tables the query writes (silver,
// rejects, each quarantine and gold table) that do not exist yet, without running a batch or
// touching the checkpoint: what `medallion init` does so that readers find every table before
// the first event arrives. Bronze must exist.
func CreateTables(ctx context.Context, opts Options) error {
	r, err := New(opts)
	if err != nil {
		return err
	}
	snap, err := r.t.bronze.Log().Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("stream: bronze table: %w", err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("stream: bronze schema: %w", err)
	}
	if r.ops.plan, err = newPlan(r.q, silver.Schema(schema)); err != nil {
		return err
	}
	return r.ensureTables(ctx)
}
