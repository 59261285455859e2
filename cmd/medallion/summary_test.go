package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestRunSummariesOneCasing runs every job and checks its one-line JSON summary: one casing
// (camelCase, as Spark's progress names that the stream summary reuses), [] or {} where a list or
// map is empty, never null, and every field name documented in the README.
func TestRunSummariesOneCasing(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--files", "3", "--seed", "5"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	checkSummaries(t, cfg)
}

// TestRunSummariesSeveralSources: the several-source summaries (sources, joins and queries
// lists) keep the same rules.
func TestRunSummariesSeveralSources(t *testing.T) {
	lake := t.TempDir()
	cfg := twoSourceConfig(t, lake)
	for _, args := range [][]string{{}, {"--source", "clicks"}} {
		if out, err := runGenCLI(t, append([]string{"gen", "--config", cfg, "--events", "2000", "--files", "2", "--seed", "5"}, args...)...); err != nil {
			t.Fatalf("gen %v: %v\n%s", args, err, out)
		}
	}
	checkSummaries(t, cfg)
}

// checkSummaries runs every job on cfg and checks each summary's field names: camelCase, never
// null, each documented in the README.
func checkSummaries(t *testing.T, cfg string) {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	camel := regexp.MustCompile(`^[a-z][a-zA-Z0-9]*$`)
	keys := map[string]string{} // key -> the job that printed it
	var walk func(job, path string, v any)
	walk = func(job, path string, v any) {
		switch v := v.(type) {
		case nil:
			t.Errorf("%s: %s is null", job, path)
		case map[string]any:
			for k, x := range v {
				if strings.HasSuffix(path, ".rejectsByReason") { // keys are reasons, not fields
					continue
				}
				if !camel.MatchString(k) {
					t.Errorf("%s: field %s.%s is not camelCase", job, path, k)
				}
				keys[k] = job
				walk(job, path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(job, path+"[]", x)
			}
		}
	}
	for _, args := range [][]string{
		{"run", "ingest"}, {"run", "ingest"}, // the second finds nothing: empty lists and maps
		{"run", "stream"}, {"run", "stream"},
		{"run", "merge-late"}, {"run", "replay", "--since", "24000h"},
		{"run", "optimize"}, {"run", "vacuum", "--dry-run"}, {"run", "checkpoint"},
	} {
		out, err := runGenCLI(t, append(args, "--config", cfg)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var v any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		walk(strings.Join(args, " "), "", v)
	}
	var missing []string
	for k := range keys {
		if !strings.Contains(string(readme), "`"+k+"`") {
			missing = append(missing, k+" ("+keys[k]+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("summary fields not documented in README.md: %s", strings.Join(missing, ", "))
	}
}
