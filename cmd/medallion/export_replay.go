package main

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/late"
	"github.com/medallion-lake/medallion/stream/spec"
)

// The rest of the late-data loop on Spark (issue 34): `export spark --job replay` and
// `--job derive` print the same program as the stream job with main set to replay or derive
// (export_replay.py).
//
//   - replay: per aggregation over a source, merge-late first (the txn medallion's merge-late
//     records, so that the quarantine rows the replay recounts from silver are never folded in
//     again, by either engine), then the whole windows of the range the stream has emitted,
//     recomputed from silver as of the stream's last committed batch and written with
//     replaceWhere on window.start, keeping the late_rows of the rows they replace: what
//     `medallion run replay` does (late.Replay), the same windows, the same rows.
//   - derive: each derived table (a gold over another gold), in level order, its closed windows
//     recomputed from the upstream table and MERGEd (changed rows updated, new rows inserted,
//     closed windows the upstream no longer has deleted), with the two positions medallion's
//     derived pass records as txn (late.DerivedApp, late.DerivedWatermarkApp), so medallion's
//     next pass finds the table up to date and either may run after the other. The merge-late
//     and replay jobs run it after their own work, as medallion does.

//go:embed export_replay.py
var sparkReplayBody string

// jobDerive is the derived tables' batch job (--job derive).
const jobDerive = "derive"

// replayBronzeNotice is what the Spark replay does not do: medallion's replay --source bronze
// re-validates and deduplicates bronze in commit order, first arrival winning.
const replayBronzeNotice = "replay --source bronze is not exported (the job replays from silver): for a range silver " +
	"lost, run medallion run replay --source bronze on the job's tables"

// writeSparkReplay writes REPLAY: per aggregation, why the Spark replay leaves it to medallion
// (None when it replays it).
func writeSparkReplay(b *strings.Builder, cfg *config.Pipeline, golds []config.Gold) {
	fmt.Fprintf(b, "\n\n# replay on Spark (--job replay): per aggregation, why it stays with medallion (None: replayed here).\n")
	b.WriteString("REPLAY = {")
	for i, g := range golds {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, "\n    %s: %s", py(g.Name), replaySkip(cfg, &g))
	}
	b.WriteString("}\n")
}

// replaySkip is, as a Python literal, why the Spark replay does not replay g ("None" when it
// does): what late.Replay does there cannot be said as one replaceWhere of windows recomputed
// from silver with Spark's own aggregates.
func replaySkip(cfg *config.Pipeline, g *config.Gold) string {
	switch {
	case g.Window.Type == config.WindowSession:
		return py("session windows re-sessionize the range from silver: run medallion run replay")
	case g.OutputMode == config.OutputComplete:
		return py("complete mode rewrites the whole table every batch: nothing to replay")
	}
	if _, ok := cfg.JoinByName(cfg.GoldSource(*g)); ok {
		return py("over a join: medallion run replay recomputes it from the joined table")
	}
	for _, a := range g.Aggregates {
		if a.Fn == config.FnApproxCountDistinct || a.Fn == config.FnApproxPercentile {
			return py(fmt.Sprintf("aggregate %s (%s): Spark's sketches are not medallion's: run medallion run replay", a.As, a.Fn))
		}
	}
	return "None"
}

// derivedSkip is why the Spark derive job leaves derived table d to medallion ("" when it
// keeps it): a graph whose first gold is over a join takes its watermark from the join's
// output watermark, which the exported join query does not record.
func derivedSkip(d *config.Gold, root string, overJoin bool) string {
	if overJoin {
		return fmt.Sprintf("derived table %s: its graph starts at gold %s over a join: keep it on medallion "+
			"(medallion run merge-late derives it on the job's tables)", d.Name, root)
	}
	return ""
}

// derivedNotices say where each derived table runs: on Spark, a batch job after the stream (the
// stream job itself does not carry it), or on medallion.
func derivedNotices(cfg *config.Pipeline) []string {
	var out []string
	for _, d := range sparkDerived(cfg) {
		if d.skip != "" {
			out = append(out, d.skip)
			continue
		}
		out = append(out, fmt.Sprintf("derived table %s (from gold %s): not kept by the stream job; the merge-late, "+
			"replay and derive jobs (--job derive) recompute its closed windows from %s and MERGE them, batch, after "+
			"the stream (medallion keeps it in the same run; docs/past-one-machine.md)", d.spec.Name, d.spec.Upstream, d.spec.Upstream))
	}
	return out
}

// derivedExport is one derived table as the job carries it: its resolved definition (jobs/specs),
// the query whose checkpoint's watermark says which windows the graph's first gold has emitted,
// and why the job leaves it to medallion ("" when it keeps it).
type derivedExport struct {
	spec   spec.Derived
	source string
	skip   string
}

// sparkDerived resolves the config's derived tables in level order.
func sparkDerived(cfg *config.Pipeline) []derivedExport {
	var out []derivedExport
	for _, s := range specs.Derived(cfg) {
		g, _ := cfg.GoldByName(s.Name)
		root := *g
		for {
			up, ok := cfg.UpstreamGold(root)
			if !ok {
				break
			}
			root = *up
		}
		src := cfg.GoldSource(root)
		_, overJoin := cfg.JoinByName(src)
		out = append(out, derivedExport{spec: s, source: src, skip: derivedSkip(g, root.Name, overJoin)})
	}
	return out
}

// writeSparkDerived writes DERIVED (the derived tables the job keeps, in level order) and the
// txn app id prefixes medallion's derived pass records.
func writeSparkDerived(b *strings.Builder, cfg *config.Pipeline) {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n\n# Derived tables (--job derive, and after merge-late and replay), each after its upstream: the\n")
	pf("# positions medallion's derived pass records as txn, and per table how its columns fold the upstream's.\n")
	pf("DERIVED_APP = %s\nDERIVED_WM_APP = %s\n", py(late.DerivedApp), py(late.DerivedWatermarkApp))
	pf("DERIVED = [")
	for _, e := range sparkDerived(cfg) {
		if e.skip != "" {
			continue
		}
		s := e.spec
		feed := !s.NoChangeDataFeed
		pf("\n    {\"name\": %s, \"table\": %s, \"upstream\": %s, \"upstream_table\": %s, \"upstream_derived\": %s,\n",
			py(s.Name), py(s.Table), py(s.Upstream), py(s.UpstreamTable), pyBool(&s.UpstreamDerived))
		pf("     \"source\": %s, \"size_us\": %d, \"start_us\": %d, \"keys\": [%s], \"change_feed\": %s,\n",
			py(e.source), s.Size.Microseconds(), s.Start.Microseconds(), joinPy(s.GroupBy), pyBool(&feed))
		pf("     \"aggs\": [")
		for i, a := range s.Aggregates {
			if i > 0 {
				pf(", ")
			}
			pf("{\"fn\": %s, \"column\": %s, \"as\": %s}", py(a.Fn), py(a.Column), py(a.As))
		}
		pf("]},")
	}
	pf("]\n")
}
