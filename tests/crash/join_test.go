package crash

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// The join kill loop: two file sources (impressions, clicks), two joins over them (always a
// left_outer one, plus one of the other types picked by the seed) and an aggregation over the
// left_outer join. The landing objects arrive in rounds; each round's ingest, then stream, is
// killed at random instants until it completes, then merge-late is. Each round's files are read
// in one micro-batch per query (no max_files_per_trigger below the defaults), so an
// uninterrupted run on a second lake cuts the same batches, judges the same rows late and is an
// exact oracle: every table must equal it as a multiset of rows.

// joinTypes are the join types the seed picks the second join's from.
var joinTypes = []string{"inner", "right_outer", "full_outer", "left_semi"}

// joinConfig is the pipeline: impressions (watermark 5m) and clicks (watermark 8m), clicks
// within 10 minutes after the impression. ad_id is optional on both sides: null keys never
// match.
func joinConfig(lake, second, extra string) string {
	return `lake: ` + lake + `
landing: {path: landing/imps/, format: json}
schema:
  - {name: impression_id, type: string, required: true}
  - {name: ad_id, type: string}
  - {name: campaign, type: string}
  - {name: impression_time, type: timestamp, required: true}
tables: {bronze: bronze/imps, rejects: bronze/rejects, silver: silver/imps}
stream: {name: imps, event_time: impression_time, watermark: 5m, dedup: [impression_id], trigger: available-now}
sources:
  - name: clicks
    landing: {path: landing/clicks/, format: json}
    schema:
      - {name: click_id, type: string, required: true}
      - {name: ad_id, type: string}
      - {name: click_time, type: timestamp, required: true}
    tables: {bronze: bronze/clicks, silver: silver/clicks}
    stream: {event_time: click_time, watermark: 8m, dedup: [click_id]}
joins:
  - name: jo
    left: imps
    right: clicks
    type: left_outer
    on: [{left: ad_id, right: ad_id}]
    time: {left: impression_time, right: click_time, lower: 0s, upper: 10m}
  - name: jx
    left: imps
    right: clicks
    type: ` + second + `
    on: [{left: ad_id, right: ad_id}]
    time: {left: impression_time, right: click_time, lower: 0s, upper: 10m}
gold:
  - name: clicks_per_ad
    source: jo
    time_column: impression_time
    window: {type: tumbling, size: 5m}
    group_by: [ad_id]
    aggregates: [{fn: count, as: impressions}, {fn: count, column: click_id, as: clicks}]
` + extra
}

// joinRound is one round of landing objects: one object per source.
type joinRound struct{ imps, clicks []byte }

// joinWorkload makes rounds of impressions and clicks, deterministic by seed: round r's
// impressions fall in [r*10m, r*10m+10m) after the base, each clicked with probability 0.4
// within 13 minutes (so some clicks fall outside the 10-minute window); clicks usually travel
// with their impression's round, sometimes one or two rounds later (late clicks, judged by the
// watermark). A few impressions of each round are delayed by 2 rounds (late impressions), a few
// rows are resent (dedup) and a few have no ad_id (null keys).
func joinWorkload(seed uint64, rounds, perRound int) []joinRound {
	rng := rand.New(rand.NewPCG(seed, 7))
	base := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC)
	imps := make([][]string, rounds)
	clicks := make([][]string, rounds)
	put := func(lines [][]string, r int, line string) {
		if r < rounds {
			lines[r] = append(lines[r], line)
		}
	}
	ts := func(t time.Time) string { return t.Format("2006-01-02T15:04:05.000Z") }
	for r := 0; r < rounds; r++ {
		for i := 0; i < perRound; i++ {
			at := base.Add(time.Duration(r)*10*time.Minute + time.Duration(rng.Int64N(int64(10*time.Minute))))
			ad := fmt.Sprintf(`"ad-%d"`, rng.IntN(12))
			if rng.IntN(40) == 0 {
				ad = "null"
			}
			line := fmt.Sprintf(`{"impression_id":"i-%d-%d","ad_id":%s,"campaign":"c%d","impression_time":"%s"}`, r, i, ad, rng.IntN(3), ts(at))
			arrive := r
			if rng.IntN(20) == 0 {
				arrive = r + 2 // late impression
			}
			put(imps, arrive, line)
			if rng.IntN(25) == 0 {
				put(imps, arrive+1, line) // a resend: dedup drops it
			}
			if rng.IntN(10) < 4 {
				cad := ad
				if rng.IntN(30) == 0 {
					cad = "null"
				}
				cat := at.Add(time.Duration(rng.Int64N(int64(13 * time.Minute))))
				c := fmt.Sprintf(`{"click_id":"c-%d-%d","ad_id":%s,"click_time":"%s"}`, r, i, cad, ts(cat))
				carrive := arrive
				switch rng.IntN(10) {
				case 0:
					carrive += 2 // late click
				case 1:
					carrive++
				}
				put(clicks, carrive, c)
			}
		}
	}
	out := make([]joinRound, rounds)
	for r := range out {
		out[r] = joinRound{[]byte(strings.Join(imps[r], "\n") + "\n"), []byte(strings.Join(clicks[r], "\n") + "\n")}
	}
	return out
}

// writeRound puts round r's objects into a lake's landings.
func writeRound(t *testing.T, put func(key string, data []byte), r int, round joinRound) {
	t.Helper()
	put(fmt.Sprintf("landing/imps/r%03d.json", r), round.imps)
	put(fmt.Sprintf("landing/clicks/r%03d.json", r), round.clicks)
}

// joinTables are the tables of joinConfig compared with the clean run, with the columns that
// legitimately differ per lake (lineage paths, ingest times, the query's random id, and the batch
// id: an optimize of a silver is a new version of the join's input, so a killed run's extra
// optimize makes the join plan an extra, empty micro-batch, as Spark's Delta source does).
var joinTables = []struct {
	table string
	drop  []string
}{
	{"silver/imps", []string{"_ingest_time", "_source_file", "_source_offset"}},
	{"silver/clicks", []string{"_ingest_time", "_source_file", "_source_offset"}},
	{"silver/jo", []string{"_ingest_time", "_source_file", "_source_offset", "clicks__ingest_time", "clicks__source_file", "clicks__source_offset"}},
	{"silver/jx", []string{"_ingest_time", "_source_file", "_source_offset", "clicks__ingest_time", "clicks__source_file", "clicks__source_offset"}},
	{"silver/late_jo", []string{"_ingest_time", "_source_file", "_source_offset", "clicks__ingest_time", "clicks__source_file", "clicks__source_offset", "query_id", "batch_id"}},
	{"silver/late_jx", []string{"_ingest_time", "_source_file", "_source_offset", "clicks__ingest_time", "clicks__source_file", "clicks__source_offset", "query_id", "batch_id"}},
	{"gold/clicks_per_ad", nil},
	{"silver/late_clicks_per_ad", []string{"_ingest_time", "_source_file", "_source_offset", "clicks__ingest_time", "clicks__source_file", "clicks__source_offset", "query_id", "batch_id"}},
}

// joinKillLoop runs the rounds on the clean lake uninterrupted and on the crash lake under
// SIGKILL, then compares every table of joinTables. put writes a landing object into a lake.
func joinKillLoop(t *testing.T, cleanCfg, crashCfg string, put func(lake string) func(string, []byte), cleanLake, crashLake string,
	open func(lake, table string) objstore.Bucket, seed uint64, rounds, perRound, kills int) {
	t.Helper()
	bin := lakecheck.Binary(t)
	work := joinWorkload(seed, rounds, perRound)
	clean := map[string]time.Duration{}
	for r, round := range work {
		writeRound(t, put(cleanLake), r, round)
		for _, job := range []string{"ingest", "stream"} {
			if d := timed(t, bin, "run", job, "--config", cleanCfg); d > clean[job] {
				clean[job] = d
			}
		}
	}
	clean["merge-late"] = timed(t, bin, "run", "merge-late", "--config", cleanCfg)
	clean["checkpoint"] = timed(t, bin, "run", "checkpoint", "--config", cleanCfg)
	clean["optimize"] = timed(t, bin, "run", "optimize", "--config", cleanCfg)
	t.Logf("clean run: %v", clean)

	k := &killer{t: t, bin: bin, cfg: crashCfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), clean: clean, perJob: map[string]int{}}
	// untilDone runs job, killed at random instants, with a checkpoint or an optimize run now and then, until
	// it completed once and the kills reached killsBy (a quota spread over the rounds): runs
	// after the first completion are reruns with nothing new, which must change nothing.
	quota := func(share int) int { return kills * share / 100 }
	untilDone := func(job string, killsBy int) {
		done := false
		for attempts := 0; !done || k.kills < killsBy; attempts++ {
			if attempts > 40+20*kills {
				t.Fatalf("%s does not finish: %d kills, %d completed, %d failed; last failure: %s", job, k.kills, k.completed, k.failed, k.lastFailure)
			}
			// Maintenance in between, killed too: optimize rewrites silver under the join's
			// stream (dataChange false: the join must skip its commits).
			switch k.rng.IntN(10) {
			case 0:
				k.run("checkpoint")
			case 1:
				k.run("optimize")
			}
			if k.kills >= killsBy {
				lakecheck.MustRun(t, bin, nil, "run", job, "--config", crashCfg) // quota reached
				done = true
			} else if k.run(job) {
				done = true
			}
		}
	}
	for r, round := range work {
		writeRound(t, put(crashLake), r, round)
		// Ingest completes before the stream runs, as in the clean run: a batch planned on a
		// half-ingested round would cut the micro-batches differently (valid, not comparable).
		untilDone("ingest", quota(90*(2*r+1)/(2*rounds)))
		untilDone("stream", quota(90*(2*r+2)/(2*rounds)))
	}
	untilDone("merge-late", max(kills, k.kills+1+kills/10))                   // merge-late is killed at least once
	lakecheck.MustRun(t, bin, nil, "run", "merge-late", "--config", crashCfg) // a rerun changes nothing

	ctx := context.Background()
	checks := 0
	for _, c := range joinTables {
		want, err := lakecheck.Rows(ctx, open(cleanLake, c.table), c.drop...)
		if err != nil {
			t.Fatalf("clean %s: %v", c.table, err)
		}
		got, err := lakecheck.Rows(ctx, open(crashLake, c.table), c.drop...)
		if err != nil {
			t.Fatalf("crashed %s: %v", c.table, err)
		}
		if d := lakecheck.Diff(want, got); d != "" {
			t.Errorf("%s differs from the clean run: %s", c.table, d)
			continue
		}
		rep, err := lakecheck.CheckLog(ctx, open(crashLake, c.table))
		if err != nil {
			t.Errorf("crashed %s: %v", c.table, err)
			continue
		}
		cleanRep, err := lakecheck.CheckLog(ctx, open(cleanLake, c.table))
		if err != nil {
			t.Errorf("clean %s: %v", c.table, err)
			continue
		}
		checks++
		t.Logf("%s: %d rows as the clean run; %d versions (clean run: %d)", c.table, len(want), rep.Versions, cleanRep.Versions)
	}
	// The workload must prove something: pairs, late rows on both sides, closed windows.
	for _, tbl := range []string{"silver/jo", "silver/jx", "silver/late_jo", "gold/clicks_per_ad"} {
		rows, err := lakecheck.Rows(ctx, open(cleanLake, tbl))
		if err != nil || len(rows) == 0 {
			t.Errorf("clean %s is empty (%v): the workload proves nothing", tbl, err)
		}
	}
	t.Logf("SUMMARY join crash: seed %d, %d kills %v, %d runs completed, %d runs failed (retryable), %d tables equal to the clean run",
		seed, k.kills, k.perJob, k.completed, k.failed, checks)
	if k.failed > 0 {
		t.Logf("last failed run (each was retried to convergence): %s", k.lastFailure)
	}
}

// TestCrashKillLoopJoin is the join kill loop on a file lake.
func TestCrashKillLoopJoin(t *testing.T) {
	kills, rounds, perRound := 8, 4, 40
	if os.Getenv("MEDALLION_LONG") == "1" {
		kills, rounds, perRound = 300, 16, 400
	}
	seed := crashSeed(t)
	second := joinTypes[seed%uint64(len(joinTypes))]
	t.Logf("joins: left_outer and %s", second)
	dir := t.TempDir()
	cleanLake, crashLake := filepath.Join(dir, "clean"), filepath.Join(dir, "crash")
	cfg := func(name, lake string) string {
		p := filepath.Join(mkdir(t, dir, name), "pipeline.yaml")
		if err := os.WriteFile(p, []byte(joinConfig(lake, second, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put := func(lake string) func(string, []byte) {
		return func(key string, data []byte) {
			p := filepath.Join(lake, key)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	joinKillLoop(t, cfg("cfg-clean", cleanLake), cfg("cfg-crash", crashLake), put, cleanLake, crashLake,
		func(lake, tbl string) objstore.Bucket { return open(t, lake, tbl) }, seed, rounds, perRound, kills)
}

// TestCrashKillLoopJoinS3 is the join kill loop on a MinIO lake.
func TestCrashKillLoopJoinS3(t *testing.T) {
	bucket, s3cfg, openS3 := lakecheck.TestBucket(t)
	kills, rounds, perRound := 6, 3, 40
	if os.Getenv("MEDALLION_LONG") == "1" {
		kills, rounds, perRound = 150, 12, 300
	}
	seed := crashSeed(t)
	second := joinTypes[(seed+1)%uint64(len(joinTypes))]
	t.Logf("joins: left_outer and %s", second)
	dir := t.TempDir()
	extra := fmt.Sprintf("s3: {endpoint: %q, region: us-east-1, path_style: true}\n", s3cfg.Endpoint)
	cfg := func(name, lake string) string {
		p := filepath.Join(mkdir(t, dir, name), "pipeline.yaml")
		if err := os.WriteFile(p, []byte(joinConfig("s3://"+bucket+"/"+lake, second, extra)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	put := func(lake string) func(string, []byte) {
		return func(key string, data []byte) {
			dir, name := filepath.Split(key)
			if err := openS3(lake, strings.TrimSuffix(dir, "/")).Put(context.Background(), name, bytes.NewReader(data), int64(len(data))); err != nil {
				t.Fatal(err)
			}
		}
	}
	joinKillLoop(t, cfg("cfg-clean", "clean"), cfg("cfg-crash", "crash"), put, "clean", "crash", openS3, seed, rounds, perRound, kills)
}
