package stream

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream/spec"
	"github.com/medallion-lake/medallion/table"
)

// JoinOptions configure a JoinRunner.
type JoinOptions struct {
	// Lake is the bucket every path of Join is relative to.
	Lake objstore.Bucket
	Join spec.Join
	// Trigger overrides Join.Trigger when its Kind is set.
	Trigger spec.Trigger
	// Clock gives batch timestamps and progress times (default time.Now).
	Clock    func() time.Time
	Logger   *slog.Logger
	Listener Listener
	// WriteOptions tune the data files of the joined table, the quarantine and gold.
	WriteOptions table.WriteOptions
}

// JoinReport sums up one JoinRunner.Run.
type JoinReport struct {
	Name    string `json:"name"`
	QueryID string `json:"queryId"`
	// Batches, LastBatch and WatermarkMs mean what they mean in Report.
	Batches     int   `json:"batches"`
	LastBatch   int64 `json:"lastBatchId"`
	WatermarkMs int64 `json:"watermarkMs"`
	// LeftRows and RightRows are the input rows read from each side's silver table.
	LeftRows  int64 `json:"numLeftRows"`
	RightRows int64 `json:"numRightRows"`
	// OutputRows are the rows appended to the joined table (pairs and null-extended rows).
	OutputRows int64 `json:"numOutputRows"`
	// LateLeftRows and LateRightRows are the input rows quarantined as late (Spark drops
	// them; their sum is its numRowsDroppedByWatermark).
	LateLeftRows  int64        `json:"numLateLeftRows"`
	LateRightRows int64        `json:"numLateRightRows"`
	Gold          []GoldReport `json:"gold"`
}

// ErrJoinNotImplemented is returned until the join host lands.
var ErrJoinNotImplemented = errors.New("stream: joins are not implemented yet")

// JoinRunner is one stream-stream join query over the lake.
type JoinRunner struct {
	opts JoinOptions
}

// NewJoin checks opts and returns a runner; the tables and the checkpoint are read by Run.
func NewJoin(opts JoinOptions) (*JoinRunner, error) {
	return &JoinRunner{opts: opts}, nil
}

// Run runs the join's micro-batches as its trigger says.
func (r *JoinRunner) Run(ctx context.Context) (JoinReport, error) {
	return JoinReport{Name: r.opts.Join.Name}, ErrJoinNotImplemented
}
