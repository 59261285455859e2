package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/medallion-lake/medallion/bench"
)

// stageSet is the harness's --stages filter: the stages whose figures (and anchors) a run is
// for. An empty set means every stage. A selected stage still needs what comes before it on its
// lake (the stream reads ingest's bronze, replay the stream's silver), so the stages it depends
// on run too and are recorded as measured (replay also needs merge-late, which a full run runs
// before it); stages after it, the other lake's stages and the
// anchors of unselected stages do not run. That lets one engineer rerun replay-24h beside
// polars, or ingest beside delta-rs, without paying for Spark.
type stageSet map[string]bool

// stageOrder is every stage --stages accepts, in the order a case runs them.
var stageOrder = []string{
	bench.StageIngest, bench.StageStream, bench.StageMergeLate, bench.StageReplay, bench.StageEndToEnd,
	bench.StageIngestBacklog, bench.StageStreamBacklog, bench.StageKafkaIngest, bench.StageJoin,
}

// stageAliases are the short names a user types for stages whose report names are longer.
var stageAliases = map[string]string{"replay": bench.StageReplay, "e2e": bench.StageEndToEnd, "kafka": bench.StageKafkaIngest}

// parseStages reads a --stages value (comma separated; empty: all stages).
func parseStages(s string) (stageSet, error) {
	set := stageSet{}
	known := map[string]bool{}
	for _, st := range stageOrder {
		known[st] = true
	}
	for _, name := range split(s) {
		if a, ok := stageAliases[name]; ok {
			name = a
		}
		if !known[name] {
			return nil, fmt.Errorf("--stages: unknown stage %q (known: %s, and the aliases %s)", name,
				strings.Join(stageOrder, ", "), aliasList())
		}
		set[name] = true
	}
	return set, nil
}

func aliasList() string {
	var as []string
	for a, st := range stageAliases {
		as = append(as, a+"="+st)
	}
	sort.Strings(as)
	return strings.Join(as, ", ")
}

// all reports whether the filter selects every stage.
func (s stageSet) all() bool { return len(s) == 0 }

// want reports whether the stage itself is selected.
func (s stageSet) want(stage string) bool { return s.all() || s[stage] }

// runs reports whether the stage must run: it is selected, or a selected stage of the same lake
// comes after it and needs its output. End-to-end is the sum of ingest, stream and merge-late.
func (s stageSet) runs(stage string) bool {
	if s.want(stage) {
		return true
	}
	e2e := s.want(bench.StageEndToEnd)
	switch stage {
	case bench.StageIngest:
		return e2e || s.want(bench.StageStream) || s.want(bench.StageMergeLate) || s.want(bench.StageReplay)
	case bench.StageStream:
		return e2e || s.want(bench.StageMergeLate) || s.want(bench.StageReplay)
	case bench.StageMergeLate:
		// Replay folds the quarantine in first when merge-late has not: without merge-late
		// before it, a replay-only run would time merge-late's work as replay's.
		return e2e || s.want(bench.StageReplay)
	case bench.StageIngestBacklog:
		return s.want(bench.StageStreamBacklog)
	}
	return false
}

// backlog reports whether the backlog lake is needed at all.
func (s stageSet) backlog() bool { return s.runs(bench.StageIngestBacklog) }

// mainLake reports whether the case's first lake has any stage to run.
func (s stageSet) mainLake() bool { return s.runs(bench.StageIngest) }

// String is the flag's value as the report's command line records it.
func (s stageSet) String() string {
	var out []string
	for _, st := range stageOrder {
		if s[st] {
			out = append(out, st)
		}
	}
	return strings.Join(out, ",")
}
