package late

import (
	"context"
	"errors"

	"github.com/medallion-lake/medallion/stream/spec"
)

// JoinMergeReport is one join's merge-late.
type JoinMergeReport struct {
	Name string `json:"name"`
	// FromVersion (exclusive) and ToVersion (inclusive) are the join quarantine versions merged.
	FromVersion int64 `json:"fromQuarantineVersion"`
	ToVersion   int64 `json:"toQuarantineVersion"`
	// LateRows is the number of quarantined input rows this run joined.
	LateRows int64 `json:"lateRows"`
	// PairsAdded are joined rows appended; NullRowsAdded null-extended rows appended for late
	// rows whose match window has closed; NullRowsReplaced null-extended rows that now have a
	// match and were replaced.
	PairsAdded       int64 `json:"pairsAdded"`
	NullRowsAdded    int64 `json:"nullRowsAdded"`
	NullRowsReplaced int64 `json:"nullRowsReplaced"`
	// Note says why nothing was committed, when nothing was.
	Note string `json:"note,omitempty"`
}

// ErrJoinMergeNotImplemented is returned until merge-late for joins lands.
var ErrJoinMergeNotImplemented = errors.New("late: merge-late for joins is not implemented yet")

// MergeLateJoin joins the join's new quarantined rows against the other side's silver and
// fixes the joined table in one idempotent commit (invariant J, DESIGN.md §4). opts.Query is
// not used; opts.Lake, Clock, Logger and WriteOptions are.
func MergeLateJoin(ctx context.Context, opts Options, j spec.Join) (JoinMergeReport, error) {
	return JoinMergeReport{Name: j.Name}, ErrJoinMergeNotImplemented
}
