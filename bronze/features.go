package bronze

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// checkWritable runs the writer-feature checks of both tables before a batch writes any data
// file (an append), so that a table whose features medallion cannot honour is refused with
// nothing written, and keeps the row rules (CHECK constraints, invariants) the workers' writers
// must check.
func (x *Ingester) checkWritable(ctx context.Context) error {
	rules := map[*table.Table]*table.RowRules{}
	for _, t := range []struct {
		tbl  *table.Table
		name string
	}{{x.bronze, x.opts.BronzePath}, {x.rejects, x.opts.RejectsPath}} {
		snap, err := x.snapshot(ctx, t.tbl)
		if err != nil {
			return err
		}
		schema, err := snap.Schema()
		if err != nil {
			return fmt.Errorf("bronze: %s: %w", t.name, err)
		}
		r, err := table.CheckWritable(snap, schema, txlog.WriteAppend)
		if err != nil {
			return fmt.Errorf("bronze: table %s: %w", t.name, err)
		}
		rules[t.tbl] = r
	}
	x.snapMu.Lock()
	x.rules = rules
	x.snapMu.Unlock()
	return nil
}
