package jobs

import "context"

// The scheduled jobs of the late-data loop. A nil Func leaves its job out of
// the schedule (Catalog reports it as missing) and `medallion run` says it is not built.
var (
	mergeLateFunc Func = func(ctx context.Context, env Env) (any, error) { return MergeLate(ctx, env, "") }
	replayFunc    Func = func(ctx context.Context, env Env) (any, error) { return ReplayLookback(ctx, env) }
)
