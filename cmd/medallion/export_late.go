package main

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/config"
)

// The late-data loop on Spark (issue 34): `export spark --job merge-late` prints the same
// program as the stream job with main set to merge_late (export_late.py): per aggregation over a
// source, the quarantine rows added since gold's txn(merge-late:<query id>) recorded, applied to
// the windows that had closed when they were judged, MERGEd into gold in one commit with
// txn(merge-late:<query id>, quarantine version), the txn medallion's own merge-late records, so
// either may run after the other and neither applies a row twice.

//go:embed export_late.py
var sparkLateBody string

// Export job kinds (--job).
const (
	jobStream    = "stream"
	jobMergeLate = "merge-late"
	jobReplay    = "replay"
)

// sparkMain is the program's entry point: main() runs JOB's work (run dispatches on it).
const sparkMain = "\n\nif __name__ == \"__main__\":\n    main()\n"

// writeSparkLate writes LATE (per aggregation: how gold's columns absorb a merge, or why the
// Spark merge-late leaves it to medallion) and late_<name>(rows): the late rows' aggregates per
// window that had closed when they were judged, with their count (late_rows).
func writeSparkLate(b *strings.Builder, cfg *config.Pipeline, golds []config.Gold) error {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n\n# merge-late on Spark (--job merge-late): per aggregation, gold's column <- SQL over t (gold) and\n")
	pf("# s (the late rows' aggregates), or why it stays with medallion.\n")
	pf("LATE = {")
	for i, g := range golds {
		if i > 0 {
			pf(",")
		}
		set, skip := lateMergeSet(cfg, &g)
		pf("\n    %s: {\"skip\": %s, \"set\": {", py(g.Name), skip)
		for k, kv := range set {
			if k > 0 {
				pf(", ")
			}
			pf("%s: %s", py(kv[0]), py(kv[1]))
		}
		pf("}}")
	}
	pf("}\n")
	for _, g := range golds {
		if _, skip := lateMergeSet(cfg, &g); skip != "None" {
			continue
		}
		aggs, cols, err := sparkAggs(goldView(cfg, g), &g)
		if err != nil {
			return err
		}
		keys := []string{`"window"`}
		for _, k := range g.GroupBy {
			keys = append(keys, pyCol(k))
		}
		pf("\n\ndef late_%s(rows):\n", strings.ReplaceAll(g.Name, "-", "_"))
		pf("    \"\"\"%s: the late rows' aggregates per window that had closed when they were judged.\"\"\"\n", g.Name)
		pf("    rows = rows.select(\"*\", %s.alias(\"window\")).where(F.col(\"window.end\") <= F.col(\"late_watermark\"))\n",
			sparkWindow(&g, pyCol(cfg.GoldTimeColumn(g))))
		pf("    return (rows.groupBy(%s)\n", strings.Join(keys, ", "))
		pf("            .agg(%s,\n                 F.count(F.lit(1)).alias(\"late_rows\"))\n", strings.Join(aggs, ",\n                 "))
		pf("            .select(%s, F.col(\"late_rows\")))\n", strings.Join(append(keys, cols...), ", "))
	}
	return nil
}

// lateMergeSet is how each gold column absorbs the late rows' aggregates (t: gold, s: the late
// rows'), or, as a Python string literal, why the Spark merge-late does not merge this gold
// ("None" when it does).
func lateMergeSet(cfg *config.Pipeline, g *config.Gold) (set [][2]string, skip string) {
	switch {
	case g.Window.Type == config.WindowSession:
		return nil, py("session windows re-sessionize from silver: run medallion run merge-late")
	case g.OutputMode == config.OutputComplete:
		return nil, py("complete mode has no late rows")
	}
	if _, ok := cfg.JoinByName(cfg.GoldSource(*g)); ok {
		return nil, py("over a join: medallion run merge-late merges the join and replays its aggregations")
	}
	q := func(c string) string { return "`" + strings.ReplaceAll(c, "`", "``") + "`" }
	add := func(c string) string { return fmt.Sprintf("coalesce(t.%[1]s + s.%[1]s, t.%[1]s, s.%[1]s)", q(c)) }
	for _, a := range g.Aggregates {
		c := q(a.As)
		switch a.Fn {
		case config.FnCount:
			set = append(set, [2]string{a.As, fmt.Sprintf("t.%[1]s + s.%[1]s", c)})
		case config.FnSum:
			set = append(set, [2]string{a.As, add(a.As)})
		case config.FnMin:
			set = append(set, [2]string{a.As, fmt.Sprintf("least(t.%[1]s, s.%[1]s)", c)})
		case config.FnMax:
			set = append(set, [2]string{a.As, fmt.Sprintf("greatest(t.%[1]s, s.%[1]s)", c)})
		case config.FnAvg:
			sum, n := a.As+"_sum", a.As+"_count"
			set = append(set, [2]string{sum, add(sum)}, [2]string{n, fmt.Sprintf("t.%[1]s + s.%[1]s", q(n))},
				[2]string{a.As, fmt.Sprintf("CAST(%s AS DOUBLE) / nullif(t.%[2]s + s.%[2]s, 0)", add(sum), q(n))})
		default:
			return nil, py(fmt.Sprintf("aggregate %s (%s) cannot be merged from Spark's sketches: run medallion run merge-late", a.As, a.Fn))
		}
	}
	set = append(set, [2]string{"late_rows", "t.`late_rows` + s.`late_rows`"})
	return set, "None"
}
