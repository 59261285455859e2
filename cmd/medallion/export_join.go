package main

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/jobs/specs"
	"github.com/medallion-lake/medallion/join"
)

// The joins of an exported job (issue 34): each join of joins: is one more streaming query of
// the job, Spark's own stream-stream join over the two silver tables the job's source queries
// write, with the config's watermarks and BETWEEN bounds, and medallion's quarantine of the
// input rows Spark drops as late (export_join.py says how they are found). The aggregations
// over a join run in the join's query, on its joined rows, with the watermark the join
// propagates (spec/stream-joins.md §3.4).

// sparkJoinBody is the join query's Python (JoinJob), after sparkJobBody (it extends Job).
//
//go:embed export_join.py
var sparkJoinBody string

// joinNotices are what the exported join query does not do as medallion does, per join: said
// at export time and by the job when it starts.
func joinNotices(cfg *config.Pipeline, j config.Join) []string {
	out := []string{fmt.Sprintf("join %s: Spark's per-source watermarks live in the query's memory: a restarted "+
		"job starts each source's from the rows it sees next (medallion keeps them in the checkpoint, "+
		"spec/stream-joins.md §2.6), so after a restart rows medallion would quarantine may be joined; "+
		"run it without restarts, or keep it on medallion, where that matters", j.Name)}
	if j.Type == config.JoinFullOuter {
		out = append(out, fmt.Sprintf("join %s: full_outer: a null-key row comes out null-extended in the "+
			"batch it arrives in (Spark 3.5 would pair two null keys, so the job tests the keys in the join "+
			"condition), medallion's at its eviction: the same rows, in another batch", j.Name))
	}
	for _, g := range cfg.GoldOf(j.Name) {
		if g.Window.Type == config.WindowSession {
			out = append(out, fmt.Sprintf("gold %s: session windows over a join are not carried: keep gold %s on medallion",
				g.Name, g.Name))
		}
	}
	return out
}

// joinView is a config view for an aggregation over join j: its schema is the joined table's
// columns, which writeSparkGold resolves aggregate columns against.
func joinView(cfg *config.Pipeline, j config.Join) *config.Pipeline {
	v := *cfg
	v.Schema, _ = cfg.JoinColumns(j)
	return &v
}

// goldView is the config view an aggregation's columns resolve against: its source's
// single-source view, or its join's joined columns.
func goldView(cfg *config.Pipeline, g config.Gold) *config.Pipeline {
	name := cfg.GoldSource(g)
	if j, ok := cfg.JoinByName(name); ok {
		return joinView(cfg, *j)
	}
	v, _ := cfg.ForSource(name)
	return v
}

// writeSparkJoins writes JOINS: every join's settings, the bounds of its state watermarks in
// Spark's algebra (which side is evicted, from the join operator's own spec), and the joined
// column names of the right side.
func writeSparkJoins(b *strings.Builder, cfg *config.Pipeline) error {
	pf := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	pf("\n\n# Every join's query (docs/joins.md): right.time BETWEEN left.time + lower AND left.time + upper,\n")
	pf("# lower/upper in µs; evicts_left/right: whether Spark bounds that side's state (spec §3).\n")
	pf("JOINS = {")
	for i, j := range cfg.Joins {
		sp, err := specs.JoinOperatorSpec(cfg, j)
		if err != nil {
			return fmt.Errorf("export spark: join %s: %w", j.Name, err)
		}
		l, _ := cfg.SourceByName(j.Left)
		r, _ := cfg.SourceByName(j.Right)
		if i > 0 {
			pf(",")
		}
		lk, rk := make([]string, len(j.On)), make([]string, len(j.On))
		for k, on := range j.On {
			lk[k], rk[k] = on.Left, on.Right
		}
		pf("\n    %s: {\"left\": %s, \"right\": %s, \"type\": %s, \"left_keys\": [%s], \"right_keys\": [%s],\n",
			py(j.Name), py(j.Left), py(j.Right), py(j.Type), joinPy(lk), joinPy(rk))
		pf("        \"left_time\": %s, \"right_time\": %s, \"lower_us\": %d, \"upper_us\": %d,\n", py(l.Stream.EventTime),
			py(r.Stream.EventTime), j.Time.Lower.Microseconds(), j.Time.Upper.Microseconds())
		pf("        \"left_watermark\": %s, \"right_watermark\": %s,\n", pyWatermark(l), pyWatermark(r))
		pf("        \"evicts_left\": %s, \"evicts_right\": %s,\n", pyBoolV(sp.Evicts(join.Left)), pyBoolV(sp.Evicts(join.Right)))
		pf("        \"table\": %s, \"quarantine\": %s, \"checkpoint\": %s}", py(j.Table), py(j.Quarantine), py(j.Checkpoint))
	}
	pf("}\n")
	inputs := map[string]bool{}
	var names []string
	for _, j := range cfg.Joins {
		for _, s := range []string{j.Left, j.Right} {
			if !inputs[s] {
				inputs[s] = true
				names = append(names, s)
			}
		}
	}
	set := "set()"
	if len(names) > 0 {
		set = "{" + joinPy(names) + "}"
	}
	pf("JOIN_INPUTS = %s  # the sources a join reads\n", set)
	return nil
}

// pyWatermark is a source's watermark delay as a Spark interval, None without one.
func pyWatermark(s config.Source) string {
	if !s.Stream.Watermark.IsSet() || s.Stream.Watermark.Duration <= 0 {
		return "None"
	}
	return py(sparkInterval(s.Stream.Watermark.Duration))
}

func pyBoolV(b bool) string {
	if b {
		return "True"
	}
	return "False"
}
