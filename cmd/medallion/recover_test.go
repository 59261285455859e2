package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRecoverCommand: `run stream` on a checkpoint whose metadata was deleted exits 1 and names
// the recovery; `recover query-id` writes the id back (one JSON summary line, exit 0) and the
// stream runs again; `recover rollback` on an undamaged checkpoint changes nothing; a refused
// recovery exits 1; a bad flag exits 2.
func TestRecoverCommand(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	for _, args := range [][]string{
		{"gen", "--config", cfg, "--events", "2000", "--files", "2", "--seed", "4"},
		{"run", "ingest", "--config", cfg},
		{"run", "stream", "--config", cfg},
	} {
		if out, err := runGenCLI(t, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	summary := func(out string) (bool, map[string]any) {
		t.Helper()
		var s struct {
			OK     bool           `json:"ok"`
			Result map[string]any `json:"result"`
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
			t.Fatalf("summary %q: %v", out, err)
		}
		return s.OK, s.Result
	}
	code := func(err error) int {
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 0
	}
	meta := filepath.Join(lake, "_checkpoints", "events", "metadata")
	old, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(meta); err != nil {
		t.Fatal(err)
	}
	out, err := runGenCLI(t, "run", "stream", "--config", cfg)
	if code(err) != 1 || !strings.Contains(out, "recover query-id") {
		t.Fatalf("stream without metadata: exit %d, %q; want 1 naming the recovery", code(err), out)
	}
	out, err = runGenCLI(t, "recover", "query-id", "--config", cfg)
	if ok, res := summary(out); err != nil || !ok || res["written"] != true || !strings.Contains(string(old), res["queryId"].(string)) {
		t.Fatalf("recover query-id: %v, %s", err, out)
	}
	if out, err := runGenCLI(t, "run", "stream", "--config", cfg); err != nil {
		t.Fatalf("stream after recover query-id: %v\n%s", err, out)
	}
	out, err = runGenCLI(t, "recover", "rollback", "--config", cfg)
	if ok, res := summary(out); err != nil || !ok || res["fromBatch"] != res["toBatch"] {
		t.Fatalf("rollback of an undamaged checkpoint: %v, %s", err, out)
	}
	out, err = runGenCLI(t, "recover", "query-id", "--config", cfg, "--ingest")
	if ok, _ := summary(out); code(err) != 1 || ok {
		t.Fatalf("recover query-id --ingest with metadata.json present: exit %d, %s; want a refusal (1)", code(err), out)
	}
	if _, err := runGenCLI(t, "recover", "rollback", "--config", cfg, "--querry", "events"); code(err) != 2 {
		t.Fatalf("a bad flag: exit %d, want 2", code(err))
	}
}
