package main

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
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
	// With memory_limit unset and no GOMEMLIMIT the limit follows the live heap: the floor
	// for this test's small heap (the default above is its ceiling).
	t.Cleanup(func() { debug.SetMemoryLimit(math.MaxInt64) })
	debug.SetMemoryLimit(math.MaxInt64)
	h := applyMemoryLimit(0, func(string) (string, bool) { return "", false }, fstest.MapFS{"proc/meminfo": meminfo})
	if h == nil {
		t.Fatal("no headroom watch with memory_limit and GOMEMLIMIT unset")
	}
	h.stop()
	if got := debug.SetMemoryLimit(-1); got != headroomFloor || h.ceiling != 18*gib {
		t.Errorf("memory limit %d under a ceiling of %d with memory_limit unset, want the floor %d under the default %d",
			got, h.ceiling, headroomFloor, 18*gib)
	}
	if h := applyMemoryLimit(900<<20, func(string) (string, bool) { return "", false }, fstest.MapFS{}); h != nil {
		h.stop()
		t.Error("a headroom watch with memory_limit set")
	}
}

// TestHeadroomLimit: the limit is 1.25x the largest live heap, at least the floor, at most
// the ceiling, and never falls.
func TestHeadroomLimit(t *testing.T) {
	const mib = 1 << 20
	var set []int64
	h := &heapHeadroom{floor: 512 * mib, ceiling: 2048 * mib, setLimit: func(l int64) int64 { set = append(set, l); return 0 }}
	for _, tc := range []struct {
		live uint64
		want int64
	}{
		{0, 512 * mib}, {100 * mib, 512 * mib}, {400 * mib, 512 * mib}, {600 * mib, 750 * mib},
		{300 * mib, 750 * mib}, {800 * mib, 1000 * mib}, {1800 * mib, 2048 * mib}, {700 * mib, 2048 * mib},
	} {
		h.observe(tc.live)
		if got := h.current(); got != tc.want {
			t.Errorf("after a live heap of %d MiB the limit is %d MiB, want %d", tc.live/mib, got/mib, tc.want/mib)
		}
	}
	if want := []int64{512 * mib, 750 * mib, 1000 * mib, 2048 * mib}; !slices.Equal(set, want) {
		t.Errorf("limits set %v, want %v (only on a change)", set, want)
	}
}

// TestHeadroomFollowsCollections: the watch raises the limit after a collection from the live
// heap it left, and not after stop.
func TestHeadroomFollowsCollections(t *testing.T) {
	var live atomic.Uint64
	live.Store(100 << 20)
	set := make(chan int64, 100)
	h := &heapHeadroom{floor: 512 << 20, liveHeap: live.Load,
		setLimit: func(l int64) int64 { set <- l; return 0 }}
	h.watch()
	if got := <-set; got != 512<<20 {
		t.Fatalf("first limit %d for a 100 MiB heap, want the floor", got)
	}
	// Each collection's live heap, one after another: the watch re-arms itself.
	for _, gib := range []uint64{2, 4} {
		live.Store(gib << 30)
		var got int64
		for i := 0; i < 1000 && got == 0; i++ {
			runtime.GC()
			select {
			case got = <-set:
			default:
			}
		}
		if want := int64(gib<<30) / 4 * 5; got != want {
			t.Fatalf("limit after a collection left %d GiB live: %d, want %d", gib, got, want)
		}
	}
	h.stop()
	live.Store(8 << 30)
	for range 5 {
		runtime.GC()
	}
	if h.current() != 5<<30 || len(set) != 0 {
		t.Errorf("after stop the watch set the limit again (%d, %d pending)", h.current(), len(set))
	}
}
