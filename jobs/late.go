package jobs

import (
	"context"
	"time"

	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
)

// MergeLate folds each gold aggregation's new quarantine rows into its gold table (only
// goldName's when set), exactly once per quarantine version.
func MergeLate(ctx context.Context, env Env, goldName string) (late.MergeReport, error) {
	return late.MergeLate(ctx, lateOptions(env, goldName))
}

// Replay recomputes the whole windows of r from silver (or bronze) and replaces them in gold.
func Replay(ctx context.Context, env Env, goldName string, r late.Range) (late.ReplayReport, error) {
	return ReplayProgress(ctx, env, goldName, r, nil)
}

// ReplayProgress is Replay, calling progress (when not nil) as it reads the source and
// finishes each aggregation (see late.ReplayProgress).
func ReplayProgress(ctx context.Context, env Env, goldName string, r late.Range, progress func(late.ReplayProgress)) (late.ReplayReport, error) {
	opts := lateOptions(env, goldName)
	opts.Progress = progress
	return late.Replay(ctx, opts, r)
}

// ReplayLookback is the scheduled replay: the configured lookback (jobs.replay.lookback),
// ending now, from silver.
func ReplayLookback(ctx context.Context, env Env) (late.ReplayReport, error) {
	now := env.clock()
	return Replay(ctx, env, "", late.Range{From: now.Add(-env.Config.Jobs.Replay.Lookback.Duration), To: now})
}

func lateOptions(env Env, goldName string) late.Options {
	return late.Options{Lake: env.Lake, Query: specs.Query(env.Config), Gold: goldName, Clock: env.clock, Logger: env.Logger}
}

func (e Env) clock() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock()
}
