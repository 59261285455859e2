package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

func s3Extra(endpoint, more string) string {
	return fmt.Sprintf("s3: {endpoint: %q, region: us-east-1, path_style: true}\n", endpoint) + more
}

func long() bool { return os.Getenv("MEDALLION_LONG") == "1" }

// TestFaultProxyConverges runs ingest, stream, merge-late, replay, optimize and checkpoint on a MinIO lake through the fault
// proxy, then without faults, and compares with a fault-free lake of the same workload.
func TestFaultProxyConverges(t *testing.T) {
	bucket, cfg, open := lakecheck.TestBucket(t)
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	isCommit := func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/_delta_log/")
	}
	isPut := func(r *http.Request) bool { return r.Method == http.MethodPut }
	isGet := func(r *http.Request) bool { return r.Method == http.MethodGet }
	seed := uint64(7)
	if s := os.Getenv("MEDALLION_FAULT_SEED"); s != "" {
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("MEDALLION_FAULT_SEED: %v", err)
		}
	}
	proxy := newProxy(t, cfg.Endpoint, seed, []Rule{
		{Kind: LostAnswer, Prob: 0.15, Match: isCommit},
		{Kind: LostAnswer, Prob: 0.03, Match: isPut},
		{Kind: Truncate, Prob: 0.03, Match: isGet},
		{Kind: Status500, Prob: 0.02},
		{Kind: SlowDown, Prob: 0.02},
		{Kind: Reset, Prob: 0.02},
		{Kind: Latency, Prob: 0.03},
	})
	// 5000 events under -race (10000 without): the requests, and so the faults the seed
	// draws for them, follow the files and batches; the rows only fill them, and every byte
	// of them goes through the proxy, which is this race-built binary.
	events, files, rounds := testshared.Sized(10000, 5000), 8, 3
	if long() {
		events, files, rounds = 100000, 40, 10
	}
	extra := "jobs: {vacuum: {retain: 1h, allow_short_retention: true}}\n"
	cleanCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "clean"), "s3://"+bucket+"/clean", s3Extra(cfg.Endpoint, extra))
	faultCfg := lakecheck.WriteConfig(t, mkdir(t, dir, "fault"), "s3://"+bucket+"/fault", s3Extra(proxy.URL, extra))
	gen := []string{"--events", fmt.Sprint(events), "--files", fmt.Sprint(files), "--seed", "5", "--outage-rate", "0.0003", "--start", "2026-01-10T12:00:00Z"}
	lakecheck.MustRun(t, bin, nil, append([]string{"gen", "--config", cleanCfg}, gen...)...)
	lakecheck.MustRun(t, bin, nil, append([]string{"gen", "--config", faultCfg, "--set", "s3.endpoint=" + cfg.Endpoint}, gen...)...)

	jobs := []string{"ingest", "stream", "merge-late", "replay"}
	args := func(job, cfg string) []string {
		a := []string{"run", job, "--config", cfg}
		if job == "replay" {
			a = append(a, "--from", "2026-01-10T00:00:00Z", "--to", "2026-01-11T00:00:00Z")
		}
		return a
	}
	for _, job := range jobs {
		lakecheck.MustRun(t, bin, nil, args(job, cleanCfg)...)
	}
	ok, failed, lastFailure := 0, 0, ""
	for round := 0; round < rounds; round++ {
		for _, job := range append(jobs, "optimize", "checkpoint") {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			r, err := lakecheck.Run(ctx, bin, nil, args(job, faultCfg)...)
			cancel()
			if err != nil {
				t.Fatalf("round %d %s: %v", round, job, err)
			}
			if strings.Contains(r.Stderr, "panic:") || strings.Contains(r.Stderr, "goroutine ") {
				t.Fatalf("round %d %s panicked:\n%s", round, job, r.Stderr)
			}
			switch r.Code {
			case 0:
				ok++
			case 1:
				failed++
				lastFailure = job + ": " + lastLine(r.Stderr)
				if !strings.Contains(r.Stderr, job) && !strings.Contains(r.Stdout, `"ok":false`) {
					t.Errorf("round %d %s failed without saying what failed:\nstdout %s\nstderr %s", round, job, r.Stdout, r.Stderr)
				}
			default:
				t.Fatalf("round %d %s: exit %d (want 0, or 1 for a retryable failure)\n%s", round, job, r.Code, r.Stderr)
			}
		}
	}
	faulty := proxy.Summary()
	proxy.SetEnabled(false)
	for _, job := range jobs {
		lakecheck.MustRun(t, bin, nil, args(job, faultCfg)...)
	}
	checks := lakecheck.Verify(t, open, "clean", "fault", events)
	t.Logf("SUMMARY faults: seed %d, %s; %d runs finished, %d failed cleanly (exit 1); %d invariant checks passed", seed, faulty, ok, failed, checks)
	if lastFailure != "" {
		t.Logf("last clean failure: %s", lastFailure)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func mkdir(t *testing.T, parent, name string) string {
	p := filepath.Join(parent, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
