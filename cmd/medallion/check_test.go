package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/internal/testutil"
	"github.com/medallion-lake/medallion/objstore/file"
)

// TestCheckCommand: check judges silver (or bronze) with the config's expectations, prints
// what would fail and changes no table.
func TestCheckCommand(t *testing.T) {
	lake := t.TempDir()
	plain := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", plain, "--events", "3000", "--files", "2", "--seed", "5", "--start", "now", "--future", "0"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, job := range []string{"ingest", "stream"} {
		if out, err := runGenCLI(t, "run", job, "--config", plain); err != nil {
			t.Fatalf("%s: %v\n%s", job, err, out)
		}
	}
	cfg := writeGenConfig(t, lake, `expectations:
  - {name: cheap, expect: "amount < 20", on_violation: drop}
  - {name: any_amount, expect: "amount IS NOT NULL OR amount IS NULL", on_violation: fail}
  - {name: never, expect: "event_type = 'no such type'", on_violation: fail}
`)
	fl, err := file.New(lake)
	if err != nil {
		t.Fatal(err)
	}
	versions := func() [2]int64 {
		return [2]int64{testutil.TableVersion(t, fl, "silver/events"), testutil.TableVersion(t, fl, "bronze/events")}
	}
	before := versions()
	out, err := runGenCLI(t, "check", "--config", cfg, "--since", "30d", "--json", "--samples", "2")
	if err != nil {
		t.Fatalf("check: %v\n%s", err, out)
	}
	var rep struct {
		Table        string `json:"table"`
		Rows         int64  `json:"rows"`
		WouldFail    bool   `json:"wouldFail"`
		Expectations []struct {
			Name           string
			Passed, Failed int64
			Samples        []string
		} `json:"expectations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if rep.Table != "silver/events" || rep.Rows < 2000 || !rep.WouldFail || len(rep.Expectations) != 3 {
		t.Fatalf("check: %+v", rep)
	}
	cheap, always, never := rep.Expectations[0], rep.Expectations[1], rep.Expectations[2]
	if cheap.Failed == 0 || cheap.Passed == 0 || cheap.Passed+cheap.Failed != rep.Rows || len(cheap.Samples) != 2 {
		t.Errorf("cheap: %+v", cheap)
	}
	for _, s := range cheap.Samples {
		var row map[string]any
		if err := json.Unmarshal([]byte(s), &row); err != nil {
			t.Fatal(err)
		}
		if a, ok := row["amount"].(float64); ok && a < 20 {
			t.Errorf("sample %s does not violate amount < 20", s)
		}
	}
	if always.Failed != 0 || always.Passed != rep.Rows || never.Passed != 0 || never.Failed != rep.Rows {
		t.Errorf("always %+v, never %+v over %d rows", always, never, rep.Rows)
	}
	text, err := runGenCLI(t, "check", "--config", cfg, "--bronze")
	if err != nil {
		t.Fatalf("check --bronze: %v", err)
	}
	for _, want := range []string{"of bronze/events (all event times)", "cheap", "drop ", "FAIL the batch", "never (event_type = 'no such type') is false or NULL for:"} {
		if !strings.Contains(text, want) {
			t.Errorf("check --bronze text lacks %q:\n%s", want, text)
		}
	}
	if after := versions(); after != before || before[0] < 0 {
		t.Errorf("check changed table versions: %v -> %v", before, after)
	}
	if _, err := runGenCLI(t, "check", "--config", plain); err == nil || !strings.Contains(err.Error(), "declares no expectations") {
		t.Errorf("check without expectations: %v", err)
	}
}
