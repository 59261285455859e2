// Package crash runs the real medallion binary over a generated workload and SIGKILLs it at
// random instants (seeded) in every job, restarting it, then runs every job to completion and
// checks that the lake converged: invariant A, exact dedup, quarantines inside silver, gold
// equal to a clean run of the same workload, and every version of every table readable.
//
// MEDALLION_LONG=1 runs more kills over a bigger workload; MEDALLION_CRASH_SEED picks the seed.
package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/cdftest"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// killer runs jobs of one lake as processes and kills them at seeded random instants.
type killer struct {
	t     *testing.T
	bin   string
	cfg   string
	rng   *rand.Rand
	clean map[string]time.Duration // how long each job took uninterrupted: the kill window

	kills, completed, failed int
	perJob                   map[string]int
	lastFailure              string
}

// run starts job and kills it after a random delay, unless it ends first. It reports whether
// the job ran to completion with exit 0.
func (k *killer) run(job string, extra ...string) bool {
	args := append([]string{"run", job, "--config", k.cfg}, jobArgs[job]...)
	args = append(args, extra...)
	cmd := exec.Command(k.bin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	window := k.clean[job]
	if window < 20*time.Millisecond {
		window = 20 * time.Millisecond
	}
	var delay time.Duration
	if k.rng.IntN(10) < 3 {
		delay = time.Duration(k.rng.Int64N(int64(15 * time.Millisecond))) // start-up and first reads
	} else {
		delay = time.Duration(k.rng.Int64N(int64(window + window/4)))
	}
	select {
	case err := <-done:
		if err != nil {
			k.failed++
			k.lastFailure = fmt.Sprintf("%s: %v: %s", job, err, lastLines(stderr.String(), 3))
			return false
		}
		k.completed++
		return true
	case <-time.After(delay):
		_ = cmd.Process.Kill() // SIGKILL: no defer, no flush, no cleanup
		if err := <-done; err == nil {
			k.completed++ // it finished in the same instant
			return true
		}
		k.kills++
		k.perJob[job]++
		return false
	}
}

// finish runs job to its end without a kill; a failure fails the test.
func (k *killer) finish(job string) {
	k.t.Helper()
	lakecheck.MustRun(k.t, k.bin, nil, append([]string{"run", job, "--config", k.cfg}, jobArgs[job]...)...)
	k.completed++
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// jobArgs are the flags a job needs besides the config: replay covers the whole workload.
var jobArgs = map[string][]string{"replay": {"--from", "2026-01-10T00:00:00Z", "--to", "2026-01-11T00:00:00Z"}}

// genWorkload writes the same landing objects into a lake (gen is deterministic by seed and
// start time).
func genWorkload(t *testing.T, bin, cfg string, events, files int) int {
	t.Helper()
	r := lakecheck.MustRun(t, bin, nil, "gen", "--config", cfg, "--events", strconv.Itoa(events),
		"--files", strconv.Itoa(files), "--seed", "11", "--outage-rate", "0.0003",
		"--start", "2026-01-10T12:00:00Z", "--late-resends", "0.3")
	var s struct {
		Lines int `json:"lines"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &s); err != nil || s.Lines != events {
		t.Fatalf("gen summary %q: %v", r.Stdout, err)
	}
	return s.Lines
}

// crashSeed is MEDALLION_CRASH_SEED or a fixed default, logged so a failure can be replayed.
func crashSeed(t *testing.T) uint64 {
	seed := uint64(20261130)
	if s := os.Getenv("MEDALLION_CRASH_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MEDALLION_CRASH_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (MEDALLION_CRASH_SEED reproduces it)", seed)
	return seed
}

// crashRun runs every job once on the clean lake (their durations size the kill windows), then
// kills jobs on the crash lake in phases until kills SIGKILLs landed, then runs every job there
// to completion and a vacuum that retains nothing.
func crashRun(t *testing.T, bin, cleanCfg, crashCfg string, kills int, seed uint64, beforeVacuum func()) *killer {
	t.Helper()
	// The clean run: every job once, uninterrupted. Its durations size the kill windows.
	clean := map[string]time.Duration{}
	for _, job := range []string{"ingest", "stream", "checkpoint", "optimize", "vacuum"} {
		clean[job] = timed(t, bin, "run", job, "--config", cleanCfg)
	}
	late := []string{"merge-late", "replay"}
	for _, job := range late {
		clean[job] = timed(t, bin, append([]string{"run", job, "--config", cleanCfg}, jobArgs[job]...)...)
	}
	t.Logf("clean run: %v", clean)

	k := &killer{t: t, bin: bin, cfg: crashCfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), clean: clean, perJob: map[string]int{}}
	pick := func(pool []string) string { return pool[k.rng.IntN(len(pool))] }

	// A phase runs its main job, with maintenance in between, until the kill quota is reached
	// and the main job finished once. Ingest completes before the stream runs: a stream batch
	// planned while bronze is half-ingested ends earlier than the clean run's, which moves the
	// watermark differently (valid, but not comparable).
	phase := func(quota int, main string, pool []string, extraPool func() []string) {
		finished := false
		atQuota := -1 // runs so far when the quota landed
		for k.kills < quota || !finished {
			if runs := k.kills + k.completed + k.failed; k.kills >= quota {
				if atQuota < 0 {
					atQuota = runs
				}
				if runs-atQuota >= 20 {
					// Twenty runs past the quota and the main job has not finished: it runs to
					// its end once, unkilled. Its kill window is sized by the clean run, and a
					// machine busier now than then (CI at load 40) can make every attempt
					// outlast it: the phase would never end, with nothing wrong in the lake.
					k.finish(main)
					finished = true
					continue
				}
			}
			job := main
			if k.rng.IntN(10) < 4 {
				p := pool
				if extraPool != nil {
					p = append(append([]string{}, pool...), extraPool()...)
				}
				job = pick(p)
			}
			if k.run(job) && job == main {
				finished = true
			}
			if k.kills+k.completed+k.failed > 20*quota {
				t.Fatalf("phase %s does not finish: %d kills, %d completed, %d failed; last failure: %s", main, k.kills, k.completed, k.failed, k.lastFailure)
			}
		}
	}
	maint := []string{"checkpoint", "vacuum", "optimize"}
	phase(kills*35/100, "ingest", maint, nil)
	phase(kills*80/100, "stream", maint, nil)
	// The late-data jobs are short: they get twice the share of the last phase.
	final := append(append([]string{"checkpoint", "vacuum", "optimize"}, late...), late...)
	for k.kills < kills {
		k.run(pick(final))
	}

	// Everything to completion, then a vacuum that retains nothing: it must not delete a file
	// the latest versions reference.
	for _, job := range append([]string{"ingest", "stream"}, late...) {
		lakecheck.MustRun(t, bin, nil, append([]string{"run", job, "--config", crashCfg}, jobArgs[job]...)...)
	}
	lakecheck.MustRun(t, bin, nil, "run", "checkpoint", "--config", crashCfg)
	lakecheck.MustRun(t, bin, nil, "run", "optimize", "--config", crashCfg)
	// Before a vacuum that retains nothing deletes the change files of every version.
	beforeVacuum()
	lakecheck.MustRun(t, bin, nil, "run", "vacuum", "--config", crashCfg, "--set", "jobs.vacuum.retain=0s")
	return k
}

// checkChangeFeeds checks invariant C on the crashed lake's gold tables (created with the
// change data feed on): killed merge-late and replay runs left change files no version names,
// which a reader never sees, and the feed of the commits that landed, applied from version 0,
// is the table at every version; medallion's reader agrees row for row.
func checkChangeFeeds(t *testing.T, open func(table string) objstore.Bucket) {
	t.Helper()
	for _, g := range []string{"gold/g5", "gold/s10"} {
		tbl := table.Open(open(g), table.Options{})
		vs, err := cdftest.CheckInvariantC(context.Background(), tbl)
		if err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		t.Logf("%s: invariant C over %d versions, change rows %v", g, len(vs), cdftest.Counts(vs))
	}
}

// startStream generates the workload and lets the stream plan its first batch on one seed
// event before the rest of the landing objects appear. A stream that starts on a table
// snapshot orders its files by modification time and then by (random) file name, as Delta
// does, so two runs would split duplicates and late rows differently; a stream that is
// already running follows the commits in order, which makes the clean run a fair oracle.
func startStream(t *testing.T, bin, lake, cfg string, events, files int) int {
	t.Helper()
	lines := genWorkload(t, bin, cfg, events, files)
	landing := filepath.Join(lake, "landing/events")
	staged := lake + "-staged"
	if err := os.Rename(landing, staged); err != nil {
		t.Fatal(err)
	}
	seed := `{"event_id":"seed-0","event_type":"seed","amount":1,"event_time":"2026-01-10T11:00:00Z","device_id":"dev-seed"}` + "\n"
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(landing, "00000000-seed.json"), []byte(seed), 0o644); err != nil {
		t.Fatal(err)
	}
	lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", cfg)
	lakecheck.MustRun(t, bin, nil, "run", "stream", "--config", cfg)
	entries, err := os.ReadDir(staged)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(staged, e.Name()), filepath.Join(landing, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return lines + 1
}

func timed(t *testing.T, bin string, args ...string) time.Duration {
	t.Helper()
	start := time.Now()
	lakecheck.MustRun(t, bin, nil, args...)
	return time.Since(start)
}

func TestCrashKillLoop(t *testing.T) {
	// 6000 events under -race (12000 without) in the same 16 files: the batches, the jobs'
	// steps and so the instants a kill can land on follow the files; the rows only fill them.
	kills, events, files := 200, testshared.Sized(12000, 6000), 16
	if os.Getenv("MEDALLION_LONG") == "1" {
		kills, events, files = 1000, 200000, 120
	}
	seed := crashSeed(t)
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	// Vacuum keeps removed files for an hour while jobs are being killed (the stream may still
	// need bronze files that optimize replaced); the final vacuum then retains nothing.
	extra := "jobs: {vacuum: {retain: 1h, allow_short_retention: true}}\n"
	cleanLake, crashLake := filepath.Join(dir, "clean"), filepath.Join(dir, "crash")
	cleanCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "cfg-clean"), cleanLake, extra)
	crashCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "cfg-crash"), crashLake, extra)
	lines := 0
	for _, c := range []struct{ lake, cfg string }{{cleanLake, cleanCfg}, {crashLake, crashCfg}} {
		lines = startStream(t, bin, c.lake, c.cfg, events, files)
	}

	k := crashRun(t, bin, cleanCfg, crashCfg, kills, seed, func() {
		checkChangeFeeds(t, func(tbl string) objstore.Bucket { return open(t, crashLake, tbl) })
	})
	checks := lakecheck.Verify(t, func(lake, tbl string) objstore.Bucket { return open(t, lake, tbl) }, cleanLake, crashLake, lines)
	checks += deltaRS(t, crashLake)
	checks += checkEventLog(t, crashCfg, k.completed)
	t.Logf("SUMMARY crash: seed %d, %d kills %v, %d runs completed, %d runs failed (retryable, exit 1), %d invariant checks passed",
		seed, k.kills, k.perJob, k.completed, k.failed, checks)
	if k.failed > 0 {
		t.Logf("last failed run (each was retried to convergence): %s", k.lastFailure)
	}
}

func mkdir(t *testing.T, parent, name string) string {
	p := filepath.Join(parent, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func open(t *testing.T, lake, table string) objstore.Bucket {
	t.Helper()
	b, err := file.New(filepath.Join(lake, table))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// deltaRS has delta-rs replay every version of every table of the crashed lake and count the
// latest rows, which must match our reader. It runs when a Python with deltalake is around
// (the interop suite's virtualenv); the interop suite itself is the place that requires it.
func deltaRS(t *testing.T, lake string) int {
	t.Helper()
	python := lakecheck.DeltaRSPython()
	if python == "" {
		t.Log("delta-rs not found (scripts/interop.sh setup, or MEDALLION_DELTARS_PYTHON): tables not replayed by delta-rs")
		return 0
	}
	var paths []string
	for _, tbl := range lakecheck.Tables {
		if _, err := os.Stat(filepath.Join(lake, tbl, "_delta_log")); err == nil {
			paths = append(paths, filepath.Join(lake, tbl))
		}
	}
	counts, err := lakecheck.DeltaRSCounts(python, paths)
	if err != nil {
		t.Errorf("delta-rs cannot read the crashed lake: %v", err)
		return 0
	}
	checks := 0
	for _, p := range paths {
		ours, err := lakecheck.Rows(context.Background(), open(t, p, ""))
		if err != nil {
			t.Fatal(err)
		}
		if counts[p] != len(ours) {
			t.Errorf("%s: delta-rs reads %d rows, medallion %d", p, counts[p], len(ours))
			continue
		}
		checks++
	}
	return checks
}

// TestCrashKillLoopS3 is the kill loop on a MinIO lake, where a commit is a conditional PUT
// over HTTP and a killed process leaves requests half sent.
func TestCrashKillLoopS3(t *testing.T) {
	bucket, cfg, openS3 := lakecheck.TestBucket(t)
	// 4000 events under -race (8000 without) in the same 8 files, as in TestCrashKillLoop.
	kills, events, files := 60, testshared.Sized(8000, 4000), 8
	if os.Getenv("MEDALLION_LONG") == "1" {
		kills, events, files = 400, 100000, 60
	}
	seed := crashSeed(t)
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	extra := fmt.Sprintf("s3: {endpoint: %q, region: us-east-1, path_style: true}\njobs: {vacuum: {retain: 1h, allow_short_retention: true}}\n", cfg.Endpoint)
	cleanCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "cfg-clean"), "s3://"+bucket+"/clean", extra)
	crashCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "cfg-crash"), "s3://"+bucket+"/crash", extra)
	lines := genWorkload(t, bin, cleanCfg, events, files)
	genWorkload(t, bin, crashCfg, events, files)
	k := crashRun(t, bin, cleanCfg, crashCfg, kills, seed, func() {
		checkChangeFeeds(t, func(tbl string) objstore.Bucket { return openS3("crash", tbl) })
	})
	checks := lakecheck.Verify(t, openS3, "clean", "crash", lines)
	t.Logf("SUMMARY crash on MinIO: seed %d, %d kills %v, %d runs completed, %d runs failed (retryable, exit 1), %d invariant checks passed",
		seed, k.kills, k.perJob, k.completed, k.failed, checks)
	if k.failed > 0 {
		t.Logf("last failed run (each was retried to convergence): %s", k.lastFailure)
	}
}
