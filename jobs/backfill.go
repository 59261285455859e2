package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/silver"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/txlog"
)

// SourceBackfillReport is what backfill-columns did to one source's tables.
type SourceBackfillReport struct {
	Source string                  `json:"source"`
	Tables []bronze.BackfillResult `json:"tables"`
}

// BackfillColumns moves values that rows of bronze, silver and the quarantines keep in
// _rescued_data into the declared columns that now exist for them (a column added to
// `schema:` after those rows were ingested), for every source or the one named only: bronze
// first (evolved to the declared columns as ingest would), then silver and each quarantine of
// the source's aggregations (evolved as the stream would), each with one idempotent
// copy-on-write commit (bronze.BackfillTable). Silver is rewritten the same way as bronze, so
// that it holds what a replay from the backfilled bronze would give: the transform's computed
// columns are recomputed in silver and the quarantines (silver.Transformer.Recompute), after
// refusing an expression changed since silver was written (stream.CheckSilverDefinition).
// Tables that do not exist yet are skipped. See docs/schema-evolution.md.
func BackfillColumns(ctx context.Context, env Env, only string) ([]SourceBackfillReport, error) {
	if err := CheckSource(env.Config, only, false); err != nil {
		return nil, err
	}
	out := []SourceBackfillReport{}
	err := eachSource(env, only, func(name string, se Env) error {
		rep, err := backfillSource(ctx, se)
		out = append(out, SourceBackfillReport{Source: name, Tables: rep})
		return err
	})
	return out, err
}

func backfillSource(ctx context.Context, env Env) ([]bronze.BackfillResult, error) {
	cfg := env.Config
	rep := []bronze.BackfillResult{}
	declared, err := DeclaredSchema(cfg)
	if err != nil {
		return rep, err
	}
	format := bronze.FormatJSON
	if cfg.Landing.Format == bronze.FormatCSV {
		format = bronze.FormatCSV
	}
	times, err := timeParsers(cfg.Schema)
	if err != nil {
		return rep, err
	}
	p, err := bronze.NewPromoter(declared, format, times)
	if err != nil {
		return rep, err
	}
	open := func(path string) *table.Table {
		return table.Open(objstore.WithPrefix(env.Lake, path), table.Options{Clock: env.clock})
	}
	bt := open(cfg.Tables.Bronze)
	if _, err := bt.Latest(ctx); errors.Is(err, txlog.ErrTableNotFound) {
		return rep, nil
	}
	want := bronze.BronzeSchema(declared)
	if cfg.Landing.Kind == config.LandingKafka {
		want = bronze.KafkaBronzeSchema(declared)
	}
	if err := bronze.EnsureBronzeTable(ctx, bt, cfg.Tables.Bronze, want, declared, SchemaPolicy(cfg), specs.SourceTables(cfg).TableProps(nil)); err != nil {
		return rep, err
	}
	snap, err := bt.Latest(ctx)
	if err != nil {
		return rep, err
	}
	bschema, err := snap.Schema()
	if err != nil {
		return rep, err
	}
	r, err := bronze.BackfillTable(ctx, bt, cfg.Tables.Bronze, p)
	rep = append(rep, r)
	if err != nil {
		return rep, err
	}
	// Silver holds the computed columns too: they are recomputed from the backfilled columns
	// (and filled in rows written before a computed column was added), as the stream would
	// compute them from the backfilled bronze.
	silverSchema := silver.Schema(bschema)
	q := specs.Query(cfg)
	var derive bronze.Derive
	if len(q.Rules.Transform.Columns) > 0 {
		x, err := silver.NewTransformer(ctx, q.Rules.Transform, silverSchema)
		if err != nil {
			return rep, fmt.Errorf("jobs: backfill-columns: %w", err)
		}
		silverSchema, derive = x.Schema(), x.Recompute
		// An expression changed since silver was written is refused, as the stream refuses it.
		if err := stream.CheckSilverDefinition(ctx, &q, open(cfg.Tables.Silver)); err != nil {
			return rep, fmt.Errorf("jobs: backfill-columns: %w", err)
		}
	}
	followers := []struct {
		path   string
		schema *txlog.StructType
	}{{cfg.Tables.Silver, silverSchema}}
	for _, g := range q.Gold {
		followers = append(followers, struct {
			path   string
			schema *txlog.StructType
		}{g.Quarantine, silver.QuarantineSchema(silverSchema)})
	}
	for _, f := range followers {
		t := open(f.path)
		if _, err := t.Latest(ctx); errors.Is(err, txlog.ErrTableNotFound) {
			continue
		} else if err != nil {
			return rep, fmt.Errorf("jobs: backfill-columns: %s: %w", f.path, err)
		}
		if err := followsPinned(ctx, t, f.path, f.schema, cfg.PinnedColumns()); err != nil {
			return rep, err
		}
		// Silver and the quarantines follow bronze's widened columns as the stream would.
		// A computed column removed from the config stays, as the stream keeps it.
		if _, err := t.EvolveWith(ctx, f.schema, nil, table.EvolveOptions{TypeWidening: true, KeepMissing: true}); err != nil {
			return rep, fmt.Errorf("jobs: backfill-columns: table %s cannot take the columns of bronze: %w", f.path, err)
		}
		r, err := bronze.BackfillTableWith(ctx, t, f.path, p, bronze.BackfillOptions{Derive: derive})
		rep = append(rep, r)
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// followsPinned refuses to let the table at path follow a type of want (bronze's) for a column
// that a query's state keeps (pinned): the stream refuses the same (see stream's
// checkPinnedTypes), and a backfill must not widen silver behind its back.
func followsPinned(ctx context.Context, t *table.Table, path string, want *txlog.StructType, pinned map[string]string) error {
	snap, err := t.Latest(ctx)
	if err != nil {
		return fmt.Errorf("jobs: backfill-columns: %s: %w", path, err)
	}
	have, err := snap.Schema()
	if err != nil {
		return fmt.Errorf("jobs: backfill-columns: %s: %w", path, err)
	}
	for _, f := range want.Fields {
		old := have.Field(f.Name)
		if what, ok := pinned[f.Name]; ok && old != nil && !table.TypeEqual(old.Type, f.Type) {
			return fmt.Errorf("jobs: backfill-columns: %w: column %s is %s in bronze and %s in %s, and it is %s: the query's state "+
				"holds its values at the old type, so it cannot follow the widening in place (see docs/schema-evolution.md)",
				table.ErrIncompatibleSchema, f.Name, table.FieldString(f), table.FieldString(*old), path, what)
		}
	}
	return nil
}
