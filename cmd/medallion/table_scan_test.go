package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestTableScanJSONL(t *testing.T) {
	dir := fixtureDir(t, "delta-golden", "kernel-timestamp-TIMESTAMP_MICROS")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"table", "scan", dir, "--format", "jsonl"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	// Rows from EXPECTED.md (id, part µs, time µs), rendered by hand.
	want := []string{
		`{"id":0,"part":"2020-01-01T08:09:10.001000Z","time":"2020-02-01T08:09:10Z"}`,
		`{"id":1,"part":"2021-10-01T08:09:20Z","time":"1999-01-01T09:00:00Z"}`,
		`{"id":2,"part":"2021-10-01T08:09:20Z","time":"2000-01-01T09:00:00Z"}`,
		`{"id":3,"part":"1969-01-01T00:00:00Z","time":"1969-01-01T00:00:00Z"}`,
		`{"id":4,"part":null,"time":null}`,
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(got) != len(want) {
		t.Fatalf("got %d lines:\n%s", len(got), out.String())
	}
	seen := map[string]bool{}
	for _, l := range got {
		seen[l] = true
	}
	for _, w := range want {
		if !seen[w] {
			t.Errorf("missing %s in\n%s", w, out.String())
		}
	}
}

func TestTableScanBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"table", "scan", "x", "--format", "csv"},
		{"table", "scan", "x", "--version", "1", "--timestamp", "2024-01-01T00:00:00Z"},
		{"table", "scan", "x", "--timestamp", "yesterday"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		if code := exitCode(root.Execute()); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestHumanFloat: --format table prints floats as people write them, without binary noise or
// an exponent.
func TestHumanFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		bits int
		want string
	}{
		{24709.90000000002, 64, "24709.9"}, {0.1 + 0.2, 64, "0.3"}, {1.5e6, 64, "1500000"},
		{-2.5e-7, 64, "-0.00000025"}, {float64(float32(3.14159274)), 32, "3.14159"}, {29.68240999999998, 64, "29.68241"},
	} {
		if got := humanFloat(c.v, c.bits); got != c.want {
			t.Errorf("humanFloat(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestHistoryPlainJSON: commit parameters print "<=>" as written, not "\u003c=\u003e".
func TestHistoryPlainJSON(t *testing.T) {
	if got := plainJSON([]byte(`"[\"(target.window \u003c=\u003e source.window)\"]"`)); got != `"[\"(target.window <=> source.window)\"]"` {
		t.Errorf("plainJSON = %s", got)
	}
}
