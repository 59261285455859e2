package late

import (
	"context"
	"fmt"
	"slices"

	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// evolveGold adds to rw's gold table the internal exact-sum columns it lacks (a gold table
// created before float sums were exact, or written by Spark's export) before merge-late or
// replay writes to it: a metaData action adding nullable columns, the Delta way, committed on
// its own and idempotent (a rerun finds the columns and commits nothing). Its rows keep null
// there, which stands for the exact value of their double (gold.ReadExact). rw then works on
// the evolved snapshot, resolved again against the same input schema in.
func evolveGold(ctx context.Context, q *spec.Query, g *spec.Aggregation, rw *rewriter, in *txlog.StructType) error {
	a := rw.a
	if len(a.missingExact) == 0 {
		return nil
	}
	evolved := &txlog.StructType{Fields: append(slices.Clone(a.gold.Fields), a.missingExact...)}
	// An empty batch of the evolved schema: Append with MergeSchema commits the metaData
	// action and no file.
	b, err := pq.NewBatch(evolved)
	if err != nil {
		return fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	if _, err := rw.t.Append(ctx, []*pq.Batch{b}, table.AppendOptions{MergeSchema: true}); err != nil {
		return fmt.Errorf("late: gold %s: add the exact-sum columns: %w", g.Name, err)
	}
	snap, err := rw.t.Log().Snapshot(ctx)
	if err != nil {
		return fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	schema, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("late: gold %s: %w", g.Name, err)
	}
	na, err := resolve(q, g, in, schema)
	if err != nil {
		return err
	}
	if len(na.missingExact) > 0 {
		return fmt.Errorf("late: gold %s: the exact-sum column %s is still missing after adding it", g.Name, na.missingExact[0].Name)
	}
	rw.snap, rw.a = snap, na
	return nil
}
