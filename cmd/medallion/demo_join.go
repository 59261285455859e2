package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/gen"
	"github.com/medallion-lake/medallion/jobs"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/stream"
	"github.com/medallion-lake/medallion/table"
)

// joinsUnavailable is what the demo prints while this build's join host or merge-late for joins
// is not there yet: everything else still runs.
const joinsUnavailable = "joins: not available in this build"

// demoClicks writes clicks on the demo's events: a quarter of the events clicked within the
// hour, 5% of the clicks delivered together at the end, long after their watermark passed.
func demoClicks(ctx context.Context, env jobs.Env, events []arrival, out io.Writer) ([]arrival, error) {
	src, ok := env.Config.SourceByName("clicks")
	if !ok {
		return nil, nil
	}
	keys := make([]string, len(events))
	var last time.Time
	for i, a := range events {
		keys[i] = a.key
		if a.end.After(last) {
			last = a.end
		}
	}
	st, err := gen.GenerateClicks(ctx, env.Lake, gen.ClickOptions{Seed: 43, EventKeys: keys, Prefix: src.Landing.Path,
		Files: 12, ClickRate: 0.25, ClickWindow: 55 * time.Minute, LateShare: 0.05, Until: last})
	if err != nil {
		return nil, fmt.Errorf("demo: gen clicks: %w", err)
	}
	fmt.Fprintf(out, "            clicks: %s in %s under %s (%s delivered late, in the last object)\n",
		count(st.Clicks, "click"), count(int64(len(st.Keys)), "object"), src.Landing.Path, num(st.Late))
	arrivals := make([]arrival, len(st.Keys))
	for i, k := range st.Keys {
		arrivals[i] = arrival{key: k, end: st.Arrived[i]}
	}
	return arrivals, nil
}

// demoStreamJoin streams the clicks source, then the join; false when this build has no join
// host (the demo then says so and goes on).
func demoStreamJoin(ctx context.Context, env jobs.Env, out io.Writer) (bool, error) {
	cenv, ok := env.ForSource("clicks")
	if !ok {
		return false, nil
	}
	crep, err := jobs.Logged(ctx, cenv, "stream", "clicks", func(ctx context.Context, env jobs.Env) (stream.Report, error) {
		return jobs.Stream(ctx, env, config.Trigger{}, nil)
	})
	if err != nil {
		return false, fmt.Errorf("demo: stream clicks: %w", err)
	}
	fmt.Fprintf(out, "            clicks: silver +%s, %s dropped\n", count(crep.SilverRows, "row"), count(crep.Duplicates, "duplicate"))
	jrep, err := jobs.Logged(ctx, env, "stream", demoJoin, func(ctx context.Context, env jobs.Env) (stream.JoinReport, error) {
		return jobs.StreamJoin(ctx, env, demoJoin, config.Trigger{}, nil)
	})
	if errors.Is(err, stream.ErrJoinNotImplemented) {
		fmt.Fprintf(out, "            %s\n", joinsUnavailable)
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("demo: stream join %s: %w", demoJoin, err)
	}
	fmt.Fprintf(out, "            join %s: %s read (%s events, %s clicks), +%s joined; %s quarantined (Spark would have dropped them)\n",
		demoJoin, count(int64(jrep.Batches), "micro-batch"), num(jrep.LeftRows), num(jrep.RightRows), count(jrep.OutputRows, "row"),
		count(jrep.LateLeftRows+jrep.LateRightRows, "late input row"))
	return true, nil
}

// demoMergeJoin fixes the joined table with the quarantined clicks and shows the difference.
func demoMergeJoin(ctx context.Context, env jobs.Env, out io.Writer) error {
	j, ok := specs.Join(env.Config, demoJoin)
	if !ok {
		return nil
	}
	tbl := table.Open(objstore.WithPrefix(env.Lake, j.Table), table.Options{})
	before, err := joinedCounts(ctx, tbl)
	if err != nil {
		return err
	}
	rep, err := jobs.Logged(ctx, env, "merge-late", demoJoin, func(ctx context.Context, env jobs.Env) (late.JoinMergeReport, error) {
		return late.MergeLateJoin(ctx, late.Options{Lake: env.Lake, Clock: env.Clock, Logger: env.Logger}, j)
	})
	if errors.Is(err, late.ErrJoinMergeNotImplemented) {
		fmt.Fprintf(out, "            %s\n", joinsUnavailable)
		return nil
	}
	if err != nil {
		return fmt.Errorf("demo: merge-late %s: %w", demoJoin, err)
	}
	after, err := joinedCounts(ctx, tbl)
	if err != nil {
		return err
	}
	if rep.Commit == nil {
		// LateRows counts the rows the run looked at, pending ones included: with no commit
		// nothing was merged, whatever it counted.
		line := fmt.Sprintf("join %s: nothing new to merge", demoJoin)
		if rep.PendingRows > 0 {
			line += fmt.Sprintf(" (%s still waiting for their match window to close)", count(rep.PendingRows, "late input row"))
		}
		fmt.Fprintf(out, "            %s\n", line)
	} else {
		fmt.Fprintf(out, "            join %s: %s merged: +%s, %s replaced, +%s\n", demoJoin, count(rep.LateRows, "late input row"),
			count(rep.PairsAdded, "pair"), count(rep.NullRowsReplaced, "null-extended row"), count(rep.NullRowsAdded, "null-extended row"))
	}
	fmt.Fprintf(out, "            joined table %s: %s with a click, %s without (before merge-late: %s and %s)\n",
		j.Table, num(after.pairs), num(after.unmatched), num(before.pairs), num(before.unmatched))
	return nil
}

type joinedCount struct{ pairs, unmatched int64 }

// joinedCounts counts the joined table's rows with a click and those null-extended (no click).
func joinedCounts(ctx context.Context, t *table.Table) (joinedCount, error) {
	var c joinedCount
	if _, err := t.Log().Snapshot(ctx); err != nil {
		return c, nil // not created yet
	}
	for b, err := range t.Scan(ctx, table.ScanOptions{Columns: []string{"click_id"}}) {
		if err != nil {
			return c, fmt.Errorf("demo: read joined table: %w", err)
		}
		col := b.Columns[0]
		for i := 0; i < b.Len(); i++ {
			if col.IsNull(i) {
				c.unmatched++
			} else {
				c.pairs++
			}
		}
	}
	return c, nil
}
