package stream

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/txlog"
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
	q := r.q
	if q.ops.plan, err = q.newPlan(ctx); err != nil {
		return err
	}
	return q.ensureTables(ctx)
}

// CreateJoinTables creates, from the two sources' silver schemas, the tables a join query
// writes (the joined table, the join quarantine, each aggregation's quarantine and gold table)
// that do not exist yet, without running a batch or touching the checkpoint. Both silver
// tables must exist; it fails naming the one that does not.
func CreateJoinTables(ctx context.Context, opts JoinOptions) error {
	jr, err := NewJoin(opts)
	if err != nil {
		return err
	}
	r := jr.q
	var schemas [2]*txlog.StructType
	for s, path := range []string{r.j.Left.Silver, r.j.Right.Silver} {
		snap, err := r.in[s].Log().Snapshot(ctx)
		if err != nil {
			return fmt.Errorf("stream: join %s: silver table %s: %w", r.j.Name, path, err)
		}
		if schemas[s], err = snap.Schema(); err != nil {
			return fmt.Errorf("stream: join %s: silver schema %s: %w", r.j.Name, path, err)
		}
	}
	if r.jp, err = newJoinPlan(r.j, r.spec, schemas); err != nil {
		return err
	}
	return r.ensureTables(ctx)
}
