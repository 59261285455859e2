package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportSparkTransform: a source's transform reaches the job as TRANSFORMS, the same SQL
// text for F.expr (the interop parity test runs it on Spark); a config without one exports
// no TRANSFORMS at all (the job then reads none).
func TestExportSparkTransform(t *testing.T) {
	lake := t.TempDir()
	out, err := runGenCLI(t, "export", "spark", "--config", writeExportConfig(t, lake))
	if err != nil || strings.Contains(out, "TRANSFORMS =") {
		t.Fatalf("no transform: err %v, and the job has TRANSFORMS", err)
	}
	cfg := filepath.Join(t.TempDir(), "pipeline.yaml")
	body := strings.Replace(strings.ReplaceAll(exportConfig, "%LAKE%", lake), "stream:\n", `transform:
  columns:
    - {name: id_norm, expr: "upper(trim(event_id))"}
    - {name: qty2, expr: "qty * 2"}
  filter: {name: no_test, expr: "`+"`event type`"+` <> 'test'", on_filter: drop}
stream:
`, 1)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runExportCLI(t, "export", "spark", "--config", cfg)
	want := "TRANSFORMS = {\n" +
		`    "clicks": {"columns": [{"name": "id_norm", "expr": "upper(trim(event_id))"}, {"name": "qty2", "expr": "qty * 2"}], ` +
		`"filter": {"name": "no_test", "expr": "` + "`event type`" + ` \u003c\u003e 'test'", "on_filter": "drop"}},` + "\n}\n"
	if err != nil || !strings.Contains(out, want) {
		i := strings.Index(out, "TRANSFORMS")
		t.Fatalf("err %v; want\n%s\ngot\n%s", err, want, out[max(i, 0):min(len(out), max(i, 0)+400)])
	}
	for _, call := range []string{`df = with_computed(df, transform_of("clicks"))`, `df = df.where(filter_keeps(transform_of("clicks")))`} {
		if !strings.Contains(out, call) {
			t.Errorf("the --plain events() lacks %s", call)
		}
	}
	checkPython(t, out)
}

// TestCheckRefusesBadTransform: `medallion check` validates a transform's expressions at load
// and names the file, the source, the column and the position; nothing is read.
func TestCheckRefusesBadTransform(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, `sources:
  - name: clicks
    schema:
      - {name: click_id, type: string}
      - {name: ref, type: string}
      - {name: click_time, type: timestamp}
    transform:
      columns: [{name: ref_norm, expr: "upper(trim(reff))"}]
    stream: {event_time: click_time, watermark: 1h}
`)
	out, err := runGenCLI(t, "check", "--config", cfg)
	want := `pipeline.yaml:20: sources[0].transform.columns[0].expr: computed column "ref_norm": at position 12: column reff does not exist`
	if err == nil || !strings.Contains(out+err.Error(), want) {
		t.Fatalf("check: %v\n%s\nwant ~%s", err, out, want)
	}
}

// TestCheckBronzeComputedEventTime: check --bronze computes the transform's columns on bronze
// rows, so a computed event time judges (and ranges) the same rows as the declared one it
// copies.
func TestCheckBronzeComputedEventTime(t *testing.T) {
	lake := t.TempDir()
	plain := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", plain, "--events", "400", "--files", "2", "--seed", "3", "--start", "2024-05-01T00:00:00Z"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", plain); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	expect := "expectations:\n  - {name: cheap, expect: \"amount < 20\"}\n"
	computed := writeGenConfig(t, lake, expect+"transform:\n  columns: [{name: at, expr: \"event_time\"}]\n")
	data, err := os.ReadFile(computed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(computed, []byte(strings.Replace(string(data), "stream: {", "stream: {event_time: at, ", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	verdict := func(cfg string) string {
		t.Helper()
		out, err := runGenCLI(t, "check", "--config", cfg, "--bronze", "--from", "2024-05-01T00:10:00Z", "--to", "2024-05-01T03:00:00Z", "--json")
		if err != nil {
			t.Fatalf("check: %v\n%s", err, out)
		}
		var rep struct {
			Rows         int64
			Expectations []struct{ Passed, Failed int64 }
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if rep.Rows == 0 {
			t.Fatalf("check judged no row: %s", out)
		}
		return fmt.Sprintf("%d rows %+v", rep.Rows, rep.Expectations)
	}
	if got, want := verdict(computed), verdict(writeGenConfig(t, lake, expect)); got != want {
		t.Errorf("computed event time: %s; declared one: %s", got, want)
	}
}
