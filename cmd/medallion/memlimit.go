package main

import (
	"bufio"
	"bytes"
	"io/fs"
	"path"
	"strconv"
	"strings"
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
