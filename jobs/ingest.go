package jobs

import (
	"context"
	"errors"
	"fmt"

	"github.com/medallion-lake/medallion/bronze"
	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
)

// Ingest moves new landing objects (or, for landing.kind kafka, the topics' records) into
// bronze (and rejects) exactly once, until none is left.
func Ingest(ctx context.Context, env Env) (bronze.Report, error) {
	return IngestProgress(ctx, env, nil)
}

// IngestProgress is Ingest, calling onBatch (when not nil) after each batch it commits (a
// Kafka landing reports its run once, at the end).
func IngestProgress(ctx context.Context, env Env, onBatch func(bronze.Report)) (bronze.Report, error) {
	if env.Config.Landing.Kind == config.LandingKafka {
		x, err := NewKafkaIngester(env, topLevelKafkaSource(env.Config))
		if err != nil {
			return bronze.Report{}, err
		}
		rep, err := x.Run(ctx)
		return withEmptyLists(rep), err
	}
	x, err := newIngester(env, onBatch)
	if err != nil {
		return bronze.Report{}, err
	}
	rep, err := x.Run(ctx)
	return withEmptyLists(rep), err
}

// withEmptyLists makes the summary say {} where it means "none", not null.
func withEmptyLists(rep bronze.Report) bronze.Report {
	if rep.RejectsBy == nil {
		rep.RejectsBy = map[string]int64{}
	}
	return rep
}

// IngestKeys ingests the named landing objects only (event-driven ingestion), exactly once.
func IngestKeys(ctx context.Context, env Env, keys []string) (bronze.Report, error) {
	if env.Config.MultiSource() {
		return ingestKeysBySource(ctx, env, keys)
	}
	if env.Config.Landing.Kind == config.LandingKafka {
		return bronze.Report{}, errors.New("jobs: event-driven ingestion of object keys needs a files landing; this pipeline's landing is kafka")
	}
	x, err := newIngester(env, nil)
	if err != nil {
		return bronze.Report{}, err
	}
	rep, err := x.IngestKeys(ctx, keys)
	return withEmptyLists(rep), err
}

func newIngester(env Env, onBatch func(bronze.Report)) (*bronze.Ingester, error) {
	cfg := env.Config
	declared, err := DeclaredSchema(cfg)
	if err != nil {
		return nil, err
	}
	times, err := timeParsers(cfg.Schema)
	if err != nil {
		return nil, err
	}
	return bronze.NewIngester(env.Lake, bronze.IngestOptions{
		LandingPrefix:      cfg.Landing.Path,
		Format:             cfg.Landing.Format,
		MaxFilesPerTrigger: cfg.Landing.MaxFilesPerTrigger,
		Declared:           declared,
		Schema:             SchemaPolicy(cfg),
		BronzePath:         cfg.Tables.Bronze,
		RejectsPath:        cfg.Tables.Rejects,
		TableProps:         specs.SourceTables(cfg).TableProps(nil),
		CheckpointPath:     IngestCheckpoint(cfg),
		Limits: bronze.Limits{
			MaxLineBytes:         int(cfg.Landing.MaxLineBytes.Bytes),
			MaxDecompressedBytes: cfg.Landing.MaxDecompressedBytes.Bytes,
			Times:                times,
		},
		Logger:  env.Logger,
		Clock:   env.Clock,
		OnBatch: onBatch,
	})
}

// ingestKeysBySource routes each key to the files source whose landing prefix holds it and
// ingests each source's keys into its own bronze; the report sums them. Keys under no source's
// prefix are left to the reconciling listing (which would not find them either: they are not
// landing objects).
func ingestKeysBySource(ctx context.Context, env Env, keys []string) (bronze.Report, error) {
	bySource := map[string][]string{}
	for _, k := range keys {
		if name, ok := LandingSourceOf(env.Config, k); ok {
			bySource[name] = append(bySource[name], k)
		}
	}
	var sum bronze.Report
	for _, s := range env.Config.AllSources() {
		ks := bySource[s.Name]
		if len(ks) == 0 {
			continue
		}
		se, _ := env.ForSource(s.Name)
		rep, err := IngestKeys(ctx, se, ks)
		sum.Add(rep)
		if err != nil {
			return withEmptyLists(sum), fmt.Errorf("source %s: %w", s.Name, err)
		}
	}
	return withEmptyLists(sum), nil
}
