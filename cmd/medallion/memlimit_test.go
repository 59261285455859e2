package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"testing/fstest"
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
	applyMemoryLimit(1<<30, func(k string) (string, bool) { return "2GiB", k == "GOMEMLIMIT" }, fstest.MapFS{})
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

// TestDefaultMemoryLimit: without memory_limit the soft limit is 3/4 of the least of the
// cgroup's limit (v2 or v1, the process's own cgroup or the hierarchy's root) and the
// machine's memory; none when neither is known.
func TestDefaultMemoryLimit(t *testing.T) {
	const gib = int64(1) << 30
	meminfo := &fstest.MapFile{Data: []byte("MemTotal:       25165824 kB\nMemFree:         1000 kB\n")} // 24 GiB
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"nothing readable", fstest.MapFS{}, 0},
		{"machine only", fstest.MapFS{"proc/meminfo": meminfo}, 18 * gib},
		{"v2 own cgroup", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("0::/job/a\n"),
			"sys/fs/cgroup/job/a/memory.max": file("2147483648\n")}, 3 * gib / 2},
		{"v2 namespaced root", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("4294967296\n")}, 3 * gib},
		{"v2 max", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("0::/job\n"),
			"sys/fs/cgroup/job/memory.max": file("max\n")}, 18 * gib},
		{"v1", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("5:cpu,cpuacct:/\n4:memory:/job/b\n0::/\n"),
			"sys/fs/cgroup/memory/job/b/memory.limit_in_bytes": file("1073741824\n")}, 3 * gib / 4},
		{"v1 unlimited", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("4:memory:/job/b\n"),
			"sys/fs/cgroup/memory/job/b/memory.limit_in_bytes": file("9223372036854771712\n")}, 18 * gib},
		{"cgroup above the machine", fstest.MapFS{"proc/meminfo": meminfo, "proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("68719476736\n")}, 18 * gib},
		{"cgroup without meminfo", fstest.MapFS{"proc/self/cgroup": file("0::/\n"),
			"sys/fs/cgroup/memory.max": file("2147483648\n")}, 3 * gib / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := defaultMemoryLimit(tc.fs); got != tc.want {
				t.Errorf("defaultMemoryLimit = %d, want %d", got, tc.want)
			}
		})
	}
	// With memory_limit unset and no GOMEMLIMIT the default is what the process gets.
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	debug.SetMemoryLimit(math.MaxInt64)
	applyMemoryLimit(0, func(string) (string, bool) { return "", false }, fstest.MapFS{"proc/meminfo": meminfo})
	if got := debug.SetMemoryLimit(-1); got != 18*gib {
		t.Errorf("memory limit %d with memory_limit unset, want the default %d", got, 18*gib)
	}
}
