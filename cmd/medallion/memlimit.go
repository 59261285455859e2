package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
)

// defaultMemoryLimit is the soft memory limit a command takes when neither memory_limit nor
// GOMEMLIMIT sets one: 3/4 of the memory the process may use, the least of its cgroup's limit
// (cgroup v2 memory.max, v1 memory.limit_in_bytes) and the machine's memory (MemTotal in
// /proc/meminfo). Go's collector lets the heap grow to twice the live data; near this limit
// it collects more often instead, so a stream whose live data fits in the container is not
// killed for the collector's headroom (the quarter left is for what is not Go heap: stacks,
// the runtime's own structures, the page cache a cgroup counts). It is 0 (no limit) when
// neither can be read. root is the file system holding proc/ and sys/ (os.DirFS("/")).
func defaultMemoryLimit(root fs.FS) int64 {
	limit := memTotal(root)
	if c := cgroupLimit(root); c > 0 && (limit == 0 || c < limit) {
		limit = c
	}
	return limit / 4 * 3
}

// memTotal is the machine's memory in bytes, 0 when unknown.
func memTotal(root fs.FS) int64 {
	for _, line := range readLines(root, "proc/meminfo") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// readLines is the lines of file name under root; none when it cannot be read (then the
// limit it would give is unknown).
func readLines(root fs.FS, name string) []string {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return nil
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// unlimited is where a cgroup v1 limit means none (the kernel reports about 2^63 rounded
// down to a page).
const unlimited = 1 << 60

// cgroupLimit is the memory limit of the process's cgroup in bytes, 0 when it has none or it
// cannot be read. The process's own cgroup directory is tried first, then the hierarchy's
// root (inside a container the cgroup namespace mounts the container's cgroup there).
func cgroupLimit(root fs.FS) int64 {
	for _, line := range readLines(root, "proc/self/cgroup") {
		// "hierarchy-ID:controller-list:cgroup-path"; v2 is "0::/path".
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		rel := strings.TrimPrefix(parts[2], "/")
		var dirs []string
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			dirs, file = []string{path.Join("sys/fs/cgroup", rel), "sys/fs/cgroup"}, "memory.max"
		case hasController(parts[1], "memory"):
			dirs, file = []string{path.Join("sys/fs/cgroup/memory", rel), "sys/fs/cgroup/memory"}, "memory.limit_in_bytes"
		default:
			continue
		}
		for _, d := range dirs {
			v, err := fs.ReadFile(root, path.Join(d, file))
			if err != nil {
				continue
			}
			s := strings.TrimSpace(string(v))
			if s == "max" {
				break // no limit here; a v1 line may still have one
			}
			if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < unlimited {
				return n
			}
			break
		}
	}
	return 0
}

// hasController says whether a cgroup v1 controller list ("cpu,cpuacct") names c.
func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

// heapHeadroom keeps Go's soft memory limit a quarter above the largest live heap the process
// has had, from a floor up to a ceiling (defaultMemoryLimit). Go's collector lets the heap
// grow to twice the live data; a stream's live data is about the same at every phase of a
// batch (its state, the batch in flight, its emitted rows: 700-780 MB at 10M events and 100k
// keys, bench/ANALYSIS.md), so half its peak RSS was the collector's headroom. Near the limit
// the collector runs more often instead. A limit that follows the live heap the job turns out
// to have: a fixed one would be too low for a large job (a collection every few MB) or too
// high for a small one (no effect). A soft limit rather than GOGC=25: the limit counts the
// memory the runtime has not returned yet, GOGC does not (GOGC=25 held the heap goal to 972
// MB and RSS still reached 1168). Below the floor the collector keeps its default headroom:
// there memory is not the constraint and more collections would only cost CPU. The watch runs
// after every collection (a finalizer re-armed each cycle), so the limit follows the state
// as it grows, also within a batch.
type heapHeadroom struct {
	floor, ceiling int64
	setLimit       func(int64) int64 // debug.SetMemoryLimit
	liveHeap       func() uint64     // the live heap the last collection marked
	mu             sync.Mutex        // observe runs on the finalizers' goroutine
	peak           uint64
	limit          int64
	stopped        bool
}

// headroomFloor is the least limit the headroom sets: below it a process keeps the
// collector's default headroom (the heap up to twice its live data). It is the Go heap of a
// process kept within 1 GB (issue 35's aim for a stream with no setting), less about 100 MB
// for what is not heap (stacks, the runtime's own structures, memory not yet returned): a
// job whose heap fits in it pays no collection for the headroom, and one whose live data
// outgrows it keeps a quarter above that. A stream at 10M events and 1k keys (about 1.1 GB
// peak RSS with the default headroom) paid 1.22x its CPU for 625 MB under a floor of 512 MiB,
// and 1.06x for 945 MB under this one (bench/ANALYSIS.md, session 19).
const headroomFloor = 900 << 20

// limitFor is the soft limit for a process whose largest live heap so far is peak bytes:
// peak and a quarter, at least the floor, at most the ceiling (when there is one).
func (h *heapHeadroom) limitFor(peak uint64) int64 {
	limit := max(int64(peak)+int64(peak)/4, h.floor)
	if h.ceiling > 0 {
		limit = min(limit, h.ceiling)
	}
	return limit
}

// observe takes the live heap a collection left and raises the limit on a new peak. The
// limit never falls: a job whose live data shrank for a phase will grow it again.
func (h *heapHeadroom) observe(live uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped || live <= h.peak && h.limit != 0 {
		return
	}
	h.peak = max(h.peak, live)
	if limit := h.limitFor(h.peak); limit != h.limit {
		h.limit = limit
		h.setLimit(limit)
	}
}

// gcSentinel is garbage from birth: its finalizer runs once after the next collection.
type gcSentinel struct{ h *heapHeadroom }

// watch observes the live heap after every collection from now on, until stop.
func (h *heapHeadroom) watch() {
	h.observe(h.liveHeap())
	h.arm()
}

func (h *heapHeadroom) arm() {
	runtime.SetFinalizer(&gcSentinel{h: h}, func(s *gcSentinel) {
		s.h.observe(s.h.liveHeap())
		if !s.h.isStopped() {
			s.h.arm()
		}
	})
}

// stop ends the watch at the next collection and leaves the limit where it is.
func (h *heapHeadroom) stop() {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
}

func (h *heapHeadroom) isStopped() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

// current is the limit last set.
func (h *heapHeadroom) current() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.limit
}

// liveHeapBytes is the heap the last collection found live (runtime/metrics).
func liveHeapBytes() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
