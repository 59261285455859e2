package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// TestTwoSchedulersOneLake runs two `medallion serve` processes on one MinIO lake with
// second-level schedules for ingest, stream, merge-late, optimize and vacuum (short retention)
// while gen keeps landing data, SIGKILLing one scheduler halfway and starting another; then every job runs to completion once more and the lake is
// compared with a clean lake fed the same objects: no lost or doubled rows, no window twice in
// gold, every table readable at every version.
func TestTwoSchedulersOneLake(t *testing.T) {
	bucket, cfg, open := lakecheck.TestBucket(t)
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	duration, gens := 25*time.Second, 6
	if long() {
		duration, gens = 5*time.Minute, 60
	}
	schedules := `jobs:
  ingest:     {schedule: "@every 2s"}
  stream:     {schedule: "@every 2s"}
  merge_late: {schedule: "@every 3s"}
  optimize:   {schedule: "*/5 * * * * *"}
  vacuum:     {schedule: "*/7 * * * * *", retain: 20s, allow_short_retention: true}
serve: {lease_ttl: 20s, shutdown_timeout: 60s}
`
	raceCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "race"), "s3://"+bucket+"/race", s3Extra(cfg.Endpoint, schedules))
	cleanCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "clean"), "s3://"+bucket+"/clean", s3Extra(cfg.Endpoint, ""))

	var servers []*server
	for i := 0; i < 2; i++ {
		servers = append(servers, startServer(t, bin, raceCfg))
	}
	lines := 0
	genArgs := func(i int) []string {
		start := time.Date(2026, 1, 10, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * 4 * time.Minute)
		return []string{"--events", "3000", "--files", "3", "--seed", fmt.Sprint(100 + i), "--outage-rate", "0.0005",
			"--start", start.Format(time.RFC3339), "--rate", "50"}
	}
	deadline := time.Now().Add(duration)
	var logs []string
	for i := 0; i < gens; i++ {
		lakecheck.MustRun(t, bin, nil, append([]string{"gen", "--config", raceCfg}, genArgs(i)...)...)
		lines += 3000
		if i == gens/2 {
			// A scheduler dies mid-job (SIGKILL: its leases stay behind until they expire) and a
			// new one takes its place.
			logs = append(logs, servers[0].kill())
			servers[0] = startServer(t, bin, raceCfg)
		}
		time.Sleep(time.Until(deadline) / time.Duration(gens-i))
	}
	time.Sleep(time.Until(deadline))
	for _, s := range servers {
		logs = append(logs, s.stop(t))
	}
	finished := map[string]int{}
	errors, vacuumed := 0, 0
	type span struct {
		server     int
		start, end time.Time
	}
	runs := map[string][]span{}
	for server, l := range logs {
		for _, line := range strings.Split(l, "\n") {
			var rec struct {
				Time            time.Time
				Msg, Job, Level string
				Seconds         float64 // the run's duration
				Summary         json.RawMessage
			}
			if json.Unmarshal([]byte(line), &rec) != nil {
				continue
			}
			if rec.Msg == "run finished" {
				finished[rec.Job]++
				runs[rec.Job] = append(runs[rec.Job], span{server, rec.Time.Add(-time.Duration(rec.Seconds * float64(time.Second))), rec.Time})
				var tables []struct {
					FilesDeleted int `json:"filesDeleted"`
				}
				if rec.Job == "vacuum" && json.Unmarshal(rec.Summary, &tables) == nil {
					for _, tb := range tables {
						vacuumed += tb.FilesDeleted
					}
				}
			}
			if rec.Level == "ERROR" {
				errors++
				if errors <= 3 {
					t.Logf("serve error: %.400s", line)
				}
			}
		}
	}

	// Leases: the runs of one job, across the schedulers, never overlap in time.
	for job, spans := range runs {
		for i, a := range spans {
			for _, b := range spans[i+1:] {
				if a.server != b.server && a.start.Before(b.end) && b.start.Before(a.end) {
					t.Errorf("%s ran on two schedulers at once: %v-%v and %v-%v", job, a.start, a.end, b.start, b.end)
				}
			}
		}
	}
	for _, job := range []string{"ingest", "stream", "merge-late"} {
		lakecheck.MustRun(t, bin, nil, "run", job, "--config", raceCfg)
	}
	for i := 0; i < gens; i++ {
		lakecheck.MustRun(t, bin, nil, append([]string{"gen", "--config", cleanCfg}, genArgs(i)...)...)
	}
	for _, job := range []string{"ingest", "stream", "merge-late"} {
		lakecheck.MustRun(t, bin, nil, "run", job, "--config", cleanCfg)
	}
	checks := lakecheck.Verify(t, open, "clean", "race", lines)
	ctx := context.Background()
	for tbl, aggs := range map[string][]string{"gold/g5": {"count", "sum_amount", "late_rows"}, "gold/s10": {"count", "max_amount", "late_rows"}} {
		keys, err := lakecheck.Rows(ctx, open("race", tbl), aggs...)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("%s holds window %s twice", tbl, k)
			}
			seen[k] = true
		}
		checks++
	}
	t.Logf("SUMMARY concurrency: 2 schedulers (one SIGKILLed and replaced) for %v, %d gen rounds (%d lines); runs finished by job %v; vacuum deleted %d files; %d error log lines (retried); %d invariant checks passed",
		duration, gens, lines, finished, vacuumed, errors, checks)
	if finished["ingest"] == 0 || finished["stream"] == 0 || finished["optimize"] == 0 || finished["vacuum"] == 0 {
		t.Errorf("some scheduled job never finished a run: %v", finished)
	}
}

type server struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	addr string
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startServer(t *testing.T, bin, cfg string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &server{out: &lockedBuffer{}, addr: addr}
	s.cmd = exec.Command(bin, "serve", "--config", cfg, "--set", "serve.listen="+addr)
	s.cmd.Env = os.Environ()
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	for i := 0; i < 200; i++ {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve did not come up on %s:\n%s", addr, s.out.String())
	return nil
}

// kill SIGKILLs the server and returns its logs.
func (s *server) kill() string {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	return s.out.String()
}

// stop sends SIGTERM and waits for a graceful exit (exit 0), returning the logs.
func (s *server) stop(t *testing.T) string {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve on %s did not exit cleanly on SIGTERM: %v\n%.2000s", s.addr, err, s.out.String())
		}
	case <-time.After(90 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		t.Errorf("serve on %s did not stop within 90 s of SIGTERM", s.addr)
	}
	return s.out.String()
}
