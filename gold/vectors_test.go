package gold

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestSemanticsVectors runs the window and session vectors of testdata/vectors, which copies
// them from spec/streaming-semantics.md: a new vector is a text edit. The session oracle is the
// batch semantics built from ProtoSession and MergeSessions, counted by brute force.
func TestSemanticsVectors(t *testing.T) {
	datadriven.RunTest(t, "testdata/vectors", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "window":
			return runWindowVector(t, d)
		case "sessions":
			return runSessionVector(t, d)
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func vectorDuration(t *testing.T, d *datadriven.TestData, key string, def int64) int64 {
	if !d.HasArg(key) {
		return def
	}
	var s string
	d.ScanArgs(t, key, &s)
	v, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "%s: %v", key, err)
	}
	return v.Microseconds()
}

func vectorTime(t *testing.T, d *datadriven.TestData, s string) int64 {
	ts, err := time.Parse(time.RFC3339, s)
	if err != nil {
		d.Fatalf(t, "time %q: %v", s, err)
	}
	return ts.UnixMicro()
}

func fmtMicros(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339) }

func fmtWindow(w Window) string { return "[" + fmtMicros(w.Start) + ", " + fmtMicros(w.End) + ")" }

func runWindowVector(t *testing.T, d *datadriven.TestData) string {
	size := vectorDuration(t, d, "size", 0)
	slide := vectorDuration(t, d, "slide", size)
	spec, err := NewWindowSpec(size, slide, vectorDuration(t, d, "start", 0))
	if err != nil {
		if !errors.Is(err, ErrInvalidWindow) {
			d.Fatalf(t, "error %v is not ErrInvalidWindow", err)
		}
		return "error: " + err.Error() + "\n"
	}
	var out strings.Builder
	for _, line := range strings.Fields(d.Input) {
		for _, w := range spec.Assign(nil, vectorTime(t, d, line)) {
			out.WriteString(fmtWindow(w) + "\n")
		}
	}
	return out.String()
}

func runSessionVector(t *testing.T, d *datadriven.TestData) string {
	gap := vectorDuration(t, d, "gap", 0)
	var keys []string
	var times, gaps []int64
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			d.Fatalf(t, "want \"key time [gap]\", got %q", line)
		}
		g := gap
		if len(f) > 2 {
			v, err := time.ParseDuration(f[2])
			if err != nil {
				d.Fatalf(t, "gap %q: %v", f[2], err)
			}
			g = v.Microseconds()
		}
		keys, times, gaps = append(keys, f[0]), append(times, vectorTime(t, d, f[1])), append(gaps, g)
	}
	per := map[string][]Window{}
	for i, k := range keys {
		if w, ok := ProtoSession(times[i], gaps[i]); ok {
			per[k] = append(per[k], w)
		}
	}
	var out strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range per {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, w := range MergeSessions(per[k]) {
			n := 0
			for i, tt := range times {
				if keys[i] == k && gaps[i] > 0 && w.Start <= tt && tt < w.End {
					n++
				}
			}
			fmt.Fprintf(&out, "%s %s %d\n", k, fmtWindow(w), n)
		}
	}
	return out.String()
}
