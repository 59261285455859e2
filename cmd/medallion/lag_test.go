package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLagCommand runs gen, ingest and lag through the CLI on a file lake.
func TestLagCommand(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "4000", "--files", "2", "--seed", "9", "--start", "now", "--future", "0"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if out, err := runGenCLI(t, "run", "ingest", "--config", cfg); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	svg := filepath.Join(t.TempDir(), "lag.svg")
	out, err := runGenCLI(t, "lag", "--config", cfg, "--json", "--svg", svg)
	if err != nil {
		t.Fatalf("lag: %v\n%s", err, out)
	}
	var rep struct {
		Rows        int64   `json:"rows"`
		P50         float64 `json:"p50_s"`
		P99         float64 `json:"p99_s"`
		Recommended string  `json:"recommended_watermark"`
		Candidates  []struct {
			Name string `json:"name"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("lag --json: %v\n%s", err, out)
	}
	if rep.Rows < 3900 || rep.P50 <= 0 || rep.P99 < rep.P50 || rep.Recommended == "" || len(rep.Candidates) != 5 {
		t.Errorf("lag --json: %+v", rep)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(strings.NewReader(string(data)))
	markers := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("lag.svg: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "line" {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == "marker" {
					markers++
				}
			}
		}
	}
	if markers != 5 {
		t.Errorf("lag.svg has %d markers, want p50 p95 p99 current recommended", markers)
	}

	text, err := runGenCLI(t, "lag", "--config", cfg, "--since", "7d")
	if err != nil {
		t.Fatalf("lag --since: %v", err)
	}
	for _, want := range []string{"p95", "Histogram", "Recommended watermark:", "current: 10m", "g5"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

func TestLagCommandErrors(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lag"}, 2, "--config is required"},
		{[]string{"lag", "--config", cfg, "--since", "1h", "--from", "2024-05-01"}, 2, "--since excludes"},
		{[]string{"lag", "--config", cfg, "--since", "soon"}, 2, `--since "soon"`},
		{[]string{"lag", "--config", cfg, "--from", "May 1st"}, 2, `--from "May 1st"`},
		{[]string{"lag", "--config", cfg, "--from", "2024-05-02", "--to", "2024-05-01 00:00:00"}, 2, "is not after"},
		{[]string{"lag", "--config", cfg}, 2, "no medallion lake there"}, // nothing in the lake: a typo'd lake:?
	} {
		_, err := runGenCLI(t, c.args...)
		code := 0
		if err != nil {
			code = 1
		}
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if code != c.code || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: exit %d, %v; want exit %d with %q", c.args, code, err, c.code, c.want)
		}
	}
	// Landing objects but no ingest yet: a lake, without bronze.
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "10", "--files", "1"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	if _, err := runGenCLI(t, "lag", "--config", cfg); err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "no bronze table yet") {
		t.Errorf("lag before the first ingest: %v (exit %d), want exit 1 and no bronze table yet", err, exitCode(err))
	}
}
