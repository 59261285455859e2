// Package jobs owns the pipeline's jobs, each a function of (ctx, Env): ingest, stream,
// merge-late, replay, optimize, vacuum. An Env is built once from the config; the CLI's
// `medallion run JOB` and the scheduler of `medallion serve` call the same functions.
//
// It also writes the event log (eventlog.go, docs/event-log.md): a row per job run (RunLogged),
// per micro-batch and expectation (through the stream's Listener: the engines do not know it)
// and per table maintenance; a failed write never fails a job.
//
// Crash guarantees are those of the job functions' packages: every job is idempotent and may be
// killed at any instant; running it again converges to the same tables.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"path"
	"time"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/bronze/timefmt"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/bucketurl"
	"github.com/medallion-lake/medallion/txlog"
)

// Env is what every job runs with. Dependencies are passed in, never global.
type Env struct {
	Config *config.Pipeline
	// Lake is the bucket rooted at the config's lake.
	Lake   objstore.Bucket
	Clock  func() time.Time
	Logger *slog.Logger
	// Events is the event log (nil: none, as with event_log: off). NewEnv opens it.
	Events *EventLog

	// runID is the id of the job run under way (set by RunLogged), for the rows it logs.
	runID string
}

// NewEnv opens the config's lake and fills defaults (wall clock, a discarding logger).
func NewEnv(ctx context.Context, cfg *config.Pipeline, logger *slog.Logger) (Env, error) {
	lake, err := OpenLake(ctx, cfg)
	if err != nil {
		return Env{}, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	env := Env{Config: cfg, Lake: lake, Clock: time.Now, Logger: logger}
	env.Events = NewEventLog(env)
	return env, nil
}

// OpenLake opens the config's lake with its S3 settings and the environment's credentials.
func OpenLake(ctx context.Context, cfg *config.Pipeline) (objstore.Bucket, error) {
	return openLake(ctx, cfg, false)
}

// OpenLakeReadOnly opens the lake for commands that only read (lag, report): it creates
// nothing, not even a missing lake directory, and refuses writes.
func OpenLakeReadOnly(ctx context.Context, cfg *config.Pipeline) (objstore.Bucket, error) {
	return openLake(ctx, cfg, true)
}

func openLake(ctx context.Context, cfg *config.Pipeline, readOnly bool) (objstore.Bucket, error) {
	b, err := bucketurl.Open(ctx, cfg.Lake, bucketurl.Options{
		ReadOnly:        readOnly,
		Endpoint:        cfg.S3.Endpoint,
		Region:          cfg.S3.Region,
		PathStyle:       cfg.S3.PathStyle,
		AccessKeyID:     cfg.S3.Credentials.AccessKeyID,
		SecretAccessKey: cfg.S3.Credentials.SecretAccessKey,
		SessionToken:    cfg.S3.Credentials.SessionToken,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: open lake %s: %w", cfg.Lake, err)
	}
	return b, nil
}

// DeclaredSchema is the config's event schema as a Delta struct.
func DeclaredSchema(cfg *config.Pipeline) (*txlog.StructType, error) {
	return declaredColumns(cfg.Schema)
}

// timeParsers compiles the format or unit of each timestamp column that has one, keyed by column
// name (config validation has compiled them already: this does not fail on a valid config).
func timeParsers(cols []config.Column) (map[string]*timefmt.Parser, error) {
	out := map[string]*timefmt.Parser{}
	for _, c := range cols {
		p, err := timefmt.New(c.Format, c.Unit)
		if err != nil {
			return nil, fmt.Errorf("jobs: schema column %q: %w", c.Name, err)
		}
		if p != nil {
			out[c.Name] = p
		}
	}
	return out, nil
}

// declaredColumns is a source's declared columns as a Delta struct.
func declaredColumns(cols []config.Column) (*txlog.StructType, error) {
	st := &txlog.StructType{}
	for _, c := range cols {
		var t txlog.DataType
		if c.Type.Kind == "decimal" {
			t = txlog.DecimalType{Precision: c.Type.Precision, Scale: c.Type.Scale}
		} else {
			t = txlog.PrimitiveType{Name: string(c.Type.Kind)}
		}
		st.Fields = append(st.Fields, txlog.StructField{Name: c.Name, Type: t, Nullable: !c.Required})
	}
	// Round-trip through the schema JSON so that a type the config allowed but Delta does not
	// know is caught here, with its column name.
	s, err := txlog.MarshalSchema(st)
	if err != nil {
		return nil, err
	}
	if _, err := txlog.ParseSchema(s); err != nil {
		return nil, fmt.Errorf("jobs: event schema: %w", err)
	}
	return st, nil
}

// SchemaPolicy is what a changed `schema:` of cfg's source may do to its existing bronze table
// besides adding columns: widen types when schema_evolution.type_widening is on, never those of
// the columns a stateful definition keeps in its state (config.PinnedColumns).
func SchemaPolicy(cfg *config.Pipeline) bronze.SchemaPolicy {
	return bronze.SchemaPolicy{TypeWidening: cfg.SchemaEvolution.Widening(), Pinned: cfg.PinnedColumns()}
}

// IngestCheckpoint is where the ingest job keeps its batches: beside the stream's checkpoint.
func IngestCheckpoint(cfg *config.Pipeline) string {
	return path.Join(cfg.Stream.Checkpoint, "ingest")
}
