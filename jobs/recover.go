package jobs

import (
	"context"
	"fmt"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/stream"
)

// Recovery of a checkpoint that a job refused at start (DESIGN §5, docs/recovery.md): the
// query is a source's streaming query (its name), a join (its name), or, with ingest, a
// source's ingest. Neither command writes a table; both refuse when the evidence does not
// support a safe answer.

// RecoverIDReport is what `medallion recover query-id` prints.
type RecoverIDReport struct {
	Query      string   `json:"query"`
	Checkpoint string   `json:"checkpoint"`
	QueryID    string   `json:"queryId"`
	Written    bool     `json:"written"`
	Evidence   []string `json:"evidence"`
}

// RollbackReport is what `medallion recover rollback` prints.
type RollbackReport struct {
	Query      string `json:"query"`
	Checkpoint string `json:"checkpoint"`
	// FromBatch is the last committed batch before, ToBatch after: the next run of the job
	// re-runs ToBatch+1..FromBatch.
	FromBatch int64            `json:"fromBatch"`
	ToBatch   int64            `json:"toBatch"`
	Behind    map[string]int64 `json:"behind"`
}

// queryCheckpoint resolves a streaming query or join name (empty: the top-level stream) to
// its checkpoint folder and the tables it writes.
func queryCheckpoint(cfg *config.Pipeline, name string) (string, string, []string, error) {
	if name == "" {
		name = cfg.Stream.Name
	}
	if j, ok := specs.Join(cfg, name); ok {
		tables := []string{j.Table, j.Quarantine}
		for _, g := range j.Gold {
			tables = append(tables, g.Table, g.Quarantine)
		}
		return name, j.Checkpoint, tables, nil
	}
	if err := CheckSource(cfg, name, true); err != nil {
		return "", "", nil, err
	}
	v, _ := cfg.ForSource(name)
	q := specs.Query(v)
	tables := []string{q.Tables.Silver, q.Tables.Rejects}
	for _, g := range q.Gold {
		tables = append(tables, g.Table, g.Quarantine)
	}
	return name, q.Tables.Checkpoint, tables, nil
}

// ingestRecoverer is the ingest of the source named name (empty: the top-level one).
type ingestRecoverer interface {
	Rollback(context.Context) (bronze.IngestRollback, error)
	RecoverID(context.Context) (string, error)
}

func sourceIngest(env Env, name string) (string, string, ingestRecoverer, error) {
	if name == "" {
		name = env.Config.Stream.Name
	}
	if err := CheckSource(env.Config, name, false); err != nil {
		return "", "", nil, err
	}
	se, _ := env.ForSource(name)
	if se.Config.Landing.Kind == config.LandingKafka {
		src := topLevelKafkaSource(se.Config)
		x, err := NewKafkaIngester(se, src)
		return name, src.CheckpointPath, x, err
	}
	x, err := newIngester(se, nil)
	return name, IngestCheckpoint(se.Config), x, err
}

// RecoverID puts the lost query id of a checkpoint back (stream.RecoverQueryID, or for an
// ingest bronze.Ingester.RecoverID).
func RecoverID(ctx context.Context, env Env, query string, ingest bool) (RecoverIDReport, error) {
	if ingest {
		name, ckpt, x, err := sourceIngest(env, query)
		rep := RecoverIDReport{Query: name, Checkpoint: ckpt, Evidence: []string{}}
		if err != nil {
			return rep, err
		}
		id, err := x.RecoverID(ctx)
		if err != nil {
			return rep, err
		}
		rep.QueryID, rep.Written, rep.Evidence = id, true, []string{env.Config.Tables.Bronze, env.Config.Tables.Rejects}
		if se, ok := env.ForSource(name); ok {
			rep.Evidence = []string{se.Config.Tables.Bronze, se.Config.Tables.Rejects}
		}
		return rep, nil
	}
	name, ckpt, tables, err := queryCheckpoint(env.Config, query)
	rep := RecoverIDReport{Query: name, Checkpoint: ckpt, Evidence: []string{}}
	if err != nil {
		return rep, err
	}
	got, err := stream.RecoverQueryID(ctx, env.Lake, ckpt, tables)
	if err != nil {
		return rep, err
	}
	rep.QueryID, rep.Written = got.QueryID, got.Written
	if got.Evidence != nil {
		rep.Evidence = got.Evidence
	}
	return rep, nil
}

// Rollback rolls a checkpoint back to the last batch every table it writes holds
// (stream.Rollback, or for an ingest bronze.Ingester.Rollback): the next run of the job
// re-runs the lost batches exactly as recorded.
func Rollback(ctx context.Context, env Env, query string, ingest bool) (RollbackReport, error) {
	if ingest {
		name, ckpt, x, err := sourceIngest(env, query)
		rep := RollbackReport{Query: name, Checkpoint: ckpt, Behind: map[string]int64{}}
		if err != nil {
			return rep, err
		}
		rb, err := x.Rollback(ctx)
		rep.FromBatch, rep.ToBatch = rb.From, rb.To
		if rb.Behind != nil {
			rep.Behind = rb.Behind
		}
		return rep, err
	}
	name, ckpt, _, err := queryCheckpoint(env.Config, query)
	rep := RollbackReport{Query: name, Checkpoint: ckpt, Behind: map[string]int64{}}
	if err != nil {
		return rep, err
	}
	rb, err := stream.Rollback(ctx, env.Lake, ckpt)
	rep.FromBatch, rep.ToBatch = rb.From, rb.To
	if rb.Behind != nil {
		rep.Behind = rb.Behind
	}
	if err != nil {
		return rep, fmt.Errorf("%s: %w", name, err)
	}
	return rep, nil
}
