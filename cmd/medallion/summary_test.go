package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestRunSummariesOneCasing runs every job and checks its one-line JSON summary: one casing
// (camelCase, as Spark's progress names that the stream summary reuses), [] or {} where a list or
// map is empty, never null, and every field name documented in docs/commands.md.
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
// null, each documented in docs/commands.md ("The run summary", linked from the README).
func checkSummaries(t *testing.T, cfg string) {
	t.Helper()
	readme, err := os.ReadFile("../../docs/commands.md")
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
		t.Errorf("summary fields not documented in docs/commands.md: %s", strings.Join(missing, ", "))
	}
}

// TestRunSummariesOnFailureNoNull: a job that fails prints the same summary rules as one that
// succeeds: a list is [] and a map {} when empty, never null (a failed replay printed
// "gold":null). Every table of the lake gets an unreadable next commit, so each job fails after
// it has made its summary.
func TestRunSummariesOnFailureNoNull(t *testing.T) {
	for _, several := range []bool{false, true} {
		lake := t.TempDir()
		var cfg string
		if several {
			cfg = twoSourceConfig(t, lake)
		} else {
			cfg = writeGenConfig(t, lake, "")
		}
		if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "2000", "--files", "2", "--seed", "5"); err != nil {
			t.Fatalf("gen: %v\n%s", err, out)
		}
		for _, job := range []string{"ingest", "stream"} {
			if out, err := runGenCLI(t, "run", job, "--config", cfg); err != nil {
				t.Fatalf("run %s: %v\n%s", job, err, out)
			}
		}
		corruptEveryTable(t, lake)
		printed := 0
		for _, args := range [][]string{
			{"run", "ingest"}, {"run", "stream"}, {"run", "merge-late"},
			{"run", "replay", "--since", "24000h"},
			{"run", "optimize"}, {"run", "vacuum", "--dry-run"}, {"run", "checkpoint"},
		} {
			name := fmt.Sprintf("%v (several sources: %v)", args, several)
			out, err := runGenCLI(t, append(args, "--config", cfg)...)
			if err == nil {
				t.Fatalf("%s succeeded on a lake whose tables cannot be read:\n%s", name, out)
			}
			v := summaryLine(t, name, out)
			if v["ok"] != false {
				t.Errorf("%s: summary %v does not say ok false", name, v)
			}
			if _, ok := v["result"]; ok {
				printed++
			}
			walkNoNull(t, name, "", v)
		}
		if printed == 0 {
			t.Errorf("several sources %v: no failed job printed a result: the test checks nothing", several)
		}
	}
}

// corruptEveryTable gives each Delta table under lake a next commit that is not JSON.
func corruptEveryTable(t *testing.T, lake string) {
	t.Helper()
	tables := 0
	err := filepath.WalkDir(lake, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || d.Name() != "_delta_log" {
			return err
		}
		commits, err := filepath.Glob(filepath.Join(path, "*.json"))
		if err != nil || len(commits) == 0 {
			return err
		}
		sort.Strings(commits)
		var last int
		if _, err := fmt.Sscanf(filepath.Base(commits[len(commits)-1]), "%020d.json", &last); err != nil {
			return err
		}
		tables++
		return os.WriteFile(filepath.Join(path, fmt.Sprintf("%020d.json", last+1)), []byte("not a commit\n"), 0o644)
	})
	if err != nil || tables == 0 {
		t.Fatalf("corrupting the tables under %s: %v (%d tables)", lake, err, tables)
	}
}

// summaryLine decodes the last line of a run's output: its JSON summary.
func summaryLine(t *testing.T, name, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var v map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &v); err != nil {
		t.Fatalf("%s: the last line is not a JSON summary: %v\n%s", name, err, out)
	}
	return v
}

// walkNoNull fails the test for every null in v, naming its path.
func walkNoNull(t *testing.T, job, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil:
		t.Errorf("%s: %s is null", job, path)
	case map[string]any:
		for k, x := range v {
			walkNoNull(t, job, path+"."+k, x)
		}
	case []any:
		for _, x := range v {
			walkNoNull(t, job, path+"[]", x)
		}
	}
}

// TestEmptyNotNull: nil lists and maps at any depth print as [] and {}; what marshals itself,
// byte slices, nil pointers inside a report and unexported fields print as before.
func TestEmptyNotNull(t *testing.T) {
	type inner struct {
		Names []string         `json:"names"`
		Byes  map[string]int64 `json:"byes"`
		Skip  []int            `json:"skip,omitempty"`
		Raw   []byte           `json:"raw"`
		Opt   *inner           `json:"opt"`
		hid   []string
	}
	type outer struct {
		Items []inner           `json:"items"`
		Any   any               `json:"any"`
		When  time.Time         `json:"when"`
		ByKey map[string]*inner `json:"byKey"`
	}
	when := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, "null"},
		{"nil pointer", (*outer)(nil), "null"},
		{"empty struct", outer{When: when}, `{"items":[],"any":null,"when":"2024-05-01T00:00:00Z","byKey":{}}`},
		{"pointer, nested", &outer{Items: []inner{{}}, Any: inner{hid: nil}, When: when, ByKey: map[string]*inner{"k": {Names: []string{"a"}}}},
			`{"items":[{"names":[],"byes":{},"raw":null,"opt":null}],"any":{"names":[],"byes":{},"raw":null,"opt":null},"when":"2024-05-01T00:00:00Z","byKey":{"k":{"names":["a"],"byes":{},"raw":null,"opt":null}}}`},
		{"bytes kept", inner{Raw: []byte("hi")}, `{"names":[],"byes":{},"raw":"aGk=","opt":null}`},
	} {
		got, err := json.Marshal(emptyNotNull(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
