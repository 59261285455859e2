package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/internal/testshared"
)

// fixtureDir is a table in the shared Delta fixtures (see testshared: skipped when missing,
// failed under CI=true).
func fixtureDir(t testing.TB, parts ...string) string {
	t.Helper()
	return testshared.Path(t, append([]string{"fixtures", "delta"}, parts...)...)
}

func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestTableDescribe(t *testing.T) {
	out, err := runCLI(t, "table", "describe", fixtureDir(t, "delta-golden", "v2-checkpoint-json"))
	if err != nil {
		t.Fatal(err)
	}
	// EXPECTED.md: v2, 4 live files, protocol (3,7) with v2Checkpoint, id:long.
	for _, want := range []string{"version:           2", "reader 3, writer 7", "reader features:   v2Checkpoint", "files:             4", "  id: long", "delta.checkpointInterval = 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	out, err = runCLI(t, "table", "describe", "--format", "json", "--version", "1", fixtureDir(t, "delta-rs", "delta-0.8.0-partitioned"))
	if err == nil || !strings.Contains(err.Error(), "version 1 is after the latest version 0") {
		t.Errorf("describe --version 1: %v\n%s", err, out)
	}
	out, err = runCLI(t, "table", "describe", "--format", "json", fixtureDir(t, "delta-rs", "delta-0.8.0-partitioned"))
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d["version"] != 0.0 || strings.Join(toStrings(d["partitionColumns"]), ",") != "year,month,day" {
		t.Errorf("describe json = %v", d)
	}
}

func toStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

func TestTableDescribeRefusesUnsupported(t *testing.T) {
	_, err := runCLI(t, "table", "describe", fixtureDir(t, "delta-golden", "deltalog-invalid-protocol-version"))
	if err == nil || !strings.Contains(err.Error(), "reader version 99") {
		t.Fatalf("err = %v", err)
	}
}

func TestTableHistory(t *testing.T) {
	out, err := runCLI(t, "table", "history", "--format", "jsonl", "--limit", "2", fixtureDir(t, "delta-rs", "simple_table"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	// simple_table: WRITE, MERGE, WRITE, UPDATE, DELETE (EXPECTED.md); newest first.
	if len(lines) != 2 || !strings.Contains(lines[0], `"version":4`) || !strings.Contains(lines[0], `"operation":"DELETE"`) || !strings.Contains(lines[1], `"operation":"UPDATE"`) {
		t.Errorf("history:\n%s", out)
	}
	out, err = runCLI(t, "table", "history", fixtureDir(t, "delta-rs", "simple_table"))
	if err != nil || !strings.Contains(out, "VERSION") || strings.Count(out, "\n") != 6 {
		t.Errorf("history table (%v):\n%s", err, out)
	}
}

func TestTableCheckpoint(t *testing.T) {
	dir := t.TempDir()
	src := fixtureDir(t, "delta-golden", "snapshot-data3", "_delta_log")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "_delta_log", e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runCLI(t, "table", "checkpoint", dir)
	if err != nil || !strings.Contains(out, "checkpoint written at version 3 (4 live files)") {
		t.Fatalf("checkpoint (%v): %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000003.checkpoint.parquet")); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, "table", "describe", "--format", "json", dir)
	if err != nil || !strings.Contains(out, `"checkpointVersion": 3`) || !strings.Contains(out, `"numFiles": 4`) {
		t.Errorf("describe after checkpoint (%v): %s", err, out)
	}
}
