package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTypoLakeRefused: a job on a lake that holds none of the pipeline's tables and no landing
// object (a typo in lake:) exits 2 with the path and "run init", and creates nothing there;
// init makes it a lake the jobs accept; a lake with only landing objects (gen before the first
// ingest) is accepted as before.
func TestTypoLakeRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		exist bool
	}{{"missing directory", false}, {"empty directory", true}} {
		t.Run(c.name, func(t *testing.T) {
			lake := filepath.Join(t.TempDir(), "lakee")
			if c.exist {
				if err := os.Mkdir(lake, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cfg := writeGenConfig(t, lake, "")
			for _, args := range [][]string{
				{"run", "ingest"}, {"run", "stream"}, {"run", "merge-late"}, {"run", "optimize"}, {"recover", "rollback"},
				{"lag"}, {"report", "--json"}, {"check"},
			} {
				out, err := runGenCLI(t, append(args, "--config", cfg)...)
				if err == nil || exitCode(err) != 2 || !errors.Is(err, errNoLake) ||
					!strings.Contains(err.Error(), "lake "+lake) || !strings.Contains(err.Error(), "medallion init --config "+cfg) {
					t.Fatalf("%v on a lake with nothing: %v (exit %d)\n%s", args, err, exitCode(err), out)
				}
			}
			entries, err := os.ReadDir(lake)
			if c.exist && (err != nil || len(entries) != 0) {
				t.Fatalf("the refused lake got %d entries (%v)", len(entries), err)
			}
			if !c.exist && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the refused lake was created: %v", err)
			}
			if out, err := runGenCLI(t, "init", "--config", cfg); err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			if out, err := runGenCLI(t, "run", "stream", "--config", cfg); err != nil {
				t.Fatalf("stream after init: %v\n%s", err, out)
			}
		})
	}
	// gen, then ingest without init: the landing objects make it a lake.
	lake := filepath.Join(t.TempDir(), "lake")
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "200", "--files", "1"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", cfg); err != nil || !strings.Contains(out, `"rows":`) {
		t.Fatalf("ingest after gen: %v\n%s", err, out)
	}
}

// TestTypoLandingWarns: on an initialized lake, ingest with a landing prefix that never had an
// object (a typo in landing.path) succeeds with nothing read but warns, and check fails; the
// right prefix neither warns nor fails, and neither does an empty prefix once bronze has rows.
func TestTypoLandingWarns(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, `expectations:
  - {name: positive, expect: "amount >= 0", on_violation: warn}
`)
	if out, err := runGenCLI(t, "init", "--config", cfg); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	typo := []string{"--set", "landing.path=landing/evnts/"}
	const warning = "the landing prefix holds no object and bronze has no rows yet: is landing.path right?"
	out, err := runGenCLI(t, append([]string{"run", "ingest", "--config", cfg}, typo...)...)
	if err != nil || !strings.Contains(out, `"files":0`) || !strings.Contains(out, warning) || !strings.Contains(out, "landing/evnts/") {
		t.Fatalf("ingest from a typo'd landing.path: %v\n%s", err, out)
	}
	_, err = runGenCLI(t, append([]string{"check", "--config", cfg}, typo...)...)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "landing/evnts/") || !strings.Contains(err.Error(), "landing.path") {
		t.Fatalf("check of a typo'd landing.path: %v (exit %d)", err, exitCode(err))
	}

	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "300", "--files", "1"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	out, err = runGenCLI(t, "run", "ingest", "--config", cfg)
	if err != nil || strings.Contains(out, warning) {
		t.Fatalf("ingest from the right prefix: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "check", "--config", cfg); err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	// Landing emptied (retention) after bronze has rows: nothing to warn about.
	if err := os.RemoveAll(filepath.Join(lake, "landing")); err != nil {
		t.Fatal(err)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", cfg); err != nil || strings.Contains(out, warning) {
		t.Fatalf("ingest after landing was emptied: %v\n%s", err, out)
	}
}
