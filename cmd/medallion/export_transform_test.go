package main

import (
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
