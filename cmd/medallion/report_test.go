package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportCommand runs gen, ingest and stream through the CLI, then writes the HTML report.
func TestReportCommand(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "3000", "--files", "3", "--seed", "5", "--start", "now"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, job := range []string{"ingest", "stream"} {
		if out, err := runGenCLI(t, "run", job, "--config", cfg); err != nil {
			t.Fatalf("run %s: %v\n%s", job, err, out)
		}
	}
	html := filepath.Join(t.TempDir(), "report.html")
	out, err := runGenCLI(t, "report", "--config", cfg, "--html", html, "--since", "30d")
	if err != nil || !strings.Contains(out, "wrote "+html) {
		t.Fatalf("report: %v\n%s", err, out)
	}
	data, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	for _, want := range []string{`id="lag-p95"`, `id="stream-last-batch"`, "gold g5", "Input and processing rate", "</html>"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if n := strings.Count(page, "<svg "); n != 7 {
		t.Errorf("report.html has %d charts, want 7 (lag, the pipeline graph, 5 progress charts)", n)
	}
	js, err := runGenCLI(t, "report", "--config", cfg, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var figures struct {
		Lag struct {
			Rows int64 `json:"rows"`
		} `json:"lag"`
		Batches []json.RawMessage `json:"batches"`
	}
	if err := json.Unmarshal([]byte(js), &figures); err != nil || figures.Lag.Rows == 0 || len(figures.Batches) == 0 {
		t.Errorf("report --json: %v %+v", err, figures)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(html), ".report.html.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func TestReportCommandErrors(t *testing.T) {
	cfg := writeGenConfig(t, t.TempDir(), "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "--html", "x.html"}, "--config is required"},
		{[]string{"report", "--config", cfg}, "--html FILE or --json is required"},
		{[]string{"report", "--config", cfg, "--html", "x.html", "--since", "-1h"}, "report: --since"},
	} {
		_, err := runGenCLI(t, c.args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want exit 2 with %q", c.args, err, c.want)
		}
	}
}
