package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestMemoryLimit: memory_limit becomes Go's soft memory limit when a command loads the config,
// GOMEMLIMIT in the environment wins, and an invalid size is a bad config.
func TestMemoryLimit(t *testing.T) {
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	write := func(extra string) string {
		path := filepath.Join(t.TempDir(), "pipeline.yaml")
		cfg := "lake: " + t.TempDir() + "\n" + extra + `schema:
  - {name: event_id, type: string}
  - {name: event_time, type: timestamp}
stream: {watermark: 10m}
gold:
  - {name: g, window: {type: tumbling, size: 5m}, aggregates: [{fn: count}]}
`
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if _, err := loadPipelineConfig(t.Context(), write("memory_limit: 900MiB\n"), nil); err != nil {
		t.Fatal(err)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		if got := debug.SetMemoryLimit(-1); got != 900<<20 {
			t.Errorf("memory limit %d, want %d", got, 900<<20)
		}
	}
	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(1<<30, func(k string) (string, bool) { return "2GiB", k == "GOMEMLIMIT" })
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, memory_limit changed the limit to %d", got)
	}
	if _, err := loadPipelineConfig(t.Context(), write("memory_limit: lots\n"), nil); exitCode(err) != 2 {
		t.Errorf("memory_limit: lots: %v (exit %d), want a bad config", err, exitCode(err))
	}
	if _, err := loadPipelineConfig(t.Context(), write("memory_limit: -1GiB\n"), nil); exitCode(err) != 2 {
		t.Errorf("memory_limit: -1GiB: %v (exit %d), want a bad config", err, exitCode(err))
	}
}
