package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/medallion-lake/medallion/bench"
)

// joinSummary is the part of joinbench run's and spark_join.py's one-line summaries the report
// uses.
type joinSummary struct {
	Events           int64   `json:"events"`
	Batches          int     `json:"batches"`
	Dropped          int64   `json:"dropped"`
	OutRows          int64   `json:"out_rows"`
	StateRowsPeak    int64   `json:"state_rows_peak"`
	StateBytesPerRow float64 `json:"state_bytes_per_row"`
}

// joinCase is the join stage's case: its events count both sides; half are impressions, each
// with its own key.
func joinCase(events int64) bench.Case {
	return bench.Case{Events: events, Keys: int(events / 2), Backend: "file"}
}

// joinStage measures issue 18's join: `joinbench gen` writes the micro-batch files once, then
// `joinbench run` (our join operator) and bench/spark_join.py (Spark's stream-stream join)
// each read all of them, one micro-batch a file.
func joinStage(ctx context.Context, o options) ([]bench.Run, []string) {
	c := joinCase(o.joinEvents)
	base := bench.Run{Engine: bench.EngineOurs, Backend: c.Backend, Events: c.Events, Keys: c.Keys}
	failed := func(status string) ([]bench.Run, []string) {
		r := base
		r.Stage, r.Status = bench.StageJoin, status
		logf("%s: join stage %s", c, status)
		return []bench.Run{r}, nil
	}
	dir := filepath.Join(o.work, "join-"+bench.Count(c.Events))
	if err := os.RemoveAll(dir); err != nil {
		return failed("failed: " + err.Error())
	}
	batches := filepath.Join(dir, "batches")
	logf("%s: joinbench gen (%d micro-batches)", c, o.joinBatches)
	g, _ := measure(ctx, base, bench.StageGen, nil, []string{batches}, o.joinbench, "gen", "--dir", batches,
		"--events", fmt.Sprint(c.Events), "--batches", fmt.Sprint(o.joinBatches))
	if !g.OK() {
		return failed("skipped: joinbench gen " + g.Status)
	}
	base.InputBytes = g.Bytes // the files gen wrote: what both engines read

	logf("%s: medallion join", c)
	r, out := measure(ctx, base, bench.StageJoin, nil, nil, o.joinbench, "run", "--dir", batches)
	var ours joinSummary
	if r.OK() {
		if err := json.Unmarshal(lastLine(out), &ours); err != nil {
			r.Status = "failed: summary: " + err.Error()
		}
		r.StateBytesPerRow = ours.StateBytesPerRow
		r.Detail = string(bytes.TrimSpace(lastLine(out)))
	}
	runs := []bench.Run{r}
	var notes []string
	if !o.anchors {
		return runs, append(notes, fmt.Sprintf("%s: no Spark join anchor (needs the interop venv)", c))
	}
	logf("%s: spark join", c)
	anchor := base
	anchor.Engine = bench.EngineSpark
	ck := filepath.Join(dir, "spark-checkpoint")
	sr, sout := measure(ctx, anchor, bench.StageJoin, nil, []string{ck}, o.python,
		filepath.Join(o.repo, "bench", "spark_join.py"), "--dir", batches, "--checkpoint", ck)
	if sr.OK() {
		sr.Detail = string(bytes.TrimSpace(lastLine(sout)))
		var theirs joinSummary
		if err := json.Unmarshal(lastLine(sout), &theirs); err == nil && r.OK() {
			notes = append(notes, joinCrossCheck(c, ours, theirs))
		}
	}
	return append(runs, sr), notes
}

// joinCrossCheck compares what the two engines say they did on the same files: batches run,
// rows dropped as late, rows emitted (the noop sink's count) and the peak of state rows must
// all be equal.
func joinCrossCheck(c bench.Case, ours, theirs joinSummary) string {
	verdict := "agree"
	if ours.Dropped != theirs.Dropped || ours.Batches != theirs.Batches || ours.StateRowsPeak != theirs.StateRowsPeak ||
		(theirs.OutRows > 0 && ours.OutRows != theirs.OutRows) {
		verdict = "DISAGREE"
	}
	return fmt.Sprintf("%s: join cross-check %s: rows dropped as late ours %d, Spark %d; output rows ours %d, Spark %d (0: not reported); "+
		"peak state rows ours %d, Spark %d; batches ours %d, Spark %d", c, verdict, ours.Dropped, theirs.Dropped,
		ours.OutRows, theirs.OutRows, ours.StateRowsPeak, theirs.StateRowsPeak, ours.Batches, theirs.Batches)
}

// joinLine is the workload bullet about the join stage.
func joinLine(o options) string {
	return fmt.Sprintf("join (`%s`, issue 18): `joinbench gen` writes %s events as %d micro-batch JSON files, half impressions "+
		"(fresh ids), half clicks (80%% on an impression of the last hour, 19%% on no impression, 1%% half an hour late); a left outer "+
		"join on the id with `click.t BETWEEN impression.t AND impression.t + 1 hour`, watermark delays 10 and 20 minutes, "+
		"one no-data batch after the last file as AvailableNow runs them over a backlog, output discarded. Ours: `joinbench run` parses the files and drives the join "+
		"operator as the stream host does (bench/cmd/joinbench; the operator only, not a join query's Delta reads and writes); Spark: "+
		"bench/spark_join.py, JSON file source (maxFilesPerTrigger 1), withWatermark per side, the same join, noop sink, "+
		"Trigger.AvailableNow, local[2]. Events/s counts both sides; the state's bytes per buffered row (ours, at its peak) is in "+
		"the targets", bench.StageJoin, bench.Count(o.joinEvents), o.joinBatches)
}
