package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// derivedGold adds a 1h rollup of g5 and a 1d rollup of that to writeGenConfig's pipeline.
const derivedGold = `  - name: g1h
    source: g5
    window: {type: tumbling, size: 1h}
    aggregates: [{fn: sum, column: count, as: count}]
  - name: g1d
    source: g1h
    window: {type: tumbling, size: 1d}
    aggregates: [{fn: sum, column: count, as: count}]
`

// TestRunDerivedJobs: with derived tables in the config, every job runs: stream, merge-late
// and replay keep the levels after their own work and report them under "derived"; --gold
// naming a derived table keeps the derived tables only; run refresh rebuilds a derived table
// and the one below it, and a gold over a source with both levels below; init, optimize, vacuum, checkpoint and
// report take the config.
func TestRunDerivedJobs(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, derivedGold)
	run := func(args ...string) map[string]any {
		t.Helper()
		out, err := runGenCLI(t, append(args, "--config", cfg)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		if args[0] != "run" {
			return nil
		}
		var sum map[string]any
		if err := json.Unmarshal([]byte(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]), &sum); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return sum
	}
	run("init")
	for _, tbl := range []string{"gold/g1h", "gold/g1d"} {
		if out, err := runGenCLI(t, "table", "describe", lake+"/"+tbl); err != nil {
			t.Fatalf("init did not create %s: %v\n%s", tbl, err, out)
		}
	}
	run("gen", "--events", "3000", "--files", "2", "--seed", "3", "--start", "2024-05-01T00:00:00Z", "--span", "30h")
	run("run", "ingest")
	derived := func(sum map[string]any) []any {
		t.Helper()
		res, _ := sum["result"].(map[string]any)
		d, ok := res["derived"].([]any)
		if !ok || len(d) != 2 {
			t.Fatalf("summary has no derived reports for g1h and g1d: %v", sum)
		}
		return d
	}
	d := derived(run("run", "stream"))
	if first := d[0].(map[string]any); first["name"] != "g1h" || first["windows"].(float64) == 0 {
		t.Errorf("stream's derived report: %v", d)
	}
	derived(run("run", "merge-late"))
	derived(run("run", "replay", "--from", "2024-05-01T00:00:00Z", "--to", "2024-05-01T06:00:00Z"))
	d = derived(run("run", "merge-late", "--gold", "g1h"))
	if d[0].(map[string]any)["upToDate"] != true {
		t.Errorf("a second pass found work: %v", d)
	}
	sum := run("run", "refresh", "--table", "g1h")
	if res, _ := sum["result"].(map[string]any); res == nil || len(res["refreshed"].([]any)) != 2 {
		t.Errorf("refresh of g1h did not rebuild g1h and g1d: %v", sum)
	}
	// A gold over a source is rebuilt from silver, and both levels below it from it.
	sum = run("run", "refresh", "--table", "g5")
	if res, _ := sum["result"].(map[string]any); res == nil || res["gold"] == nil || len(res["refreshed"].([]any)) != 2 {
		t.Errorf("refresh of g5 did not rebuild g5, g1h and g1d: %v", sum)
	}
	if out, err := runGenCLI(t, "run", "refresh", "--table", "nope", "--config", cfg); err == nil || !strings.Contains(out+err.Error(), "not a gold or derived table") {
		t.Errorf("refresh of an unknown table: %v\n%s", err, out)
	}
	for _, job := range []string{"optimize", "vacuum", "checkpoint"} {
		run("run", job)
	}
	run("report", "--html", lake+"/report.html")
	out, err := runGenCLI(t, "table", "scan", lake+"/gold/g1d", "--format", "jsonl")
	if err != nil || !strings.Contains(out, `"count"`) {
		t.Fatalf("scan of gold/g1d: %v\n%s", err, out)
	}
}
