package late

import (
	"fmt"

	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// checkGoldWritable refuses, before anything is read or written, a merge-late or replay into a
// gold table whose writer features forbid changing its rows as this package does (an
// append-only table, row tracking, ...), naming the table, the feature and the way out. A change
// data feed is honoured: the rewrite writes its change rows (rewrite.go, changefeed.go).
func checkGoldWritable(snap *txlog.Snapshot, schema *txlog.StructType, g *spec.Aggregation) error {
	if _, err := table.CheckWritable(snap, schema, txlog.WriteChange); err != nil {
		return fmt.Errorf("late: gold %s (table %s): %w", g.Name, g.Table, err)
	}
	return nil
}
