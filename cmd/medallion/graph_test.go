package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateGraph = flag.Bool("update-graph", false, "rewrite the graph command's golden files")

// TestGraphGolden: the text and DOT graphs of a three-level rollup and of the joins example
// match their golden files (reviewed by hand; -update-graph rewrites them).
func TestGraphGolden(t *testing.T) {
	cases := []struct{ name, config, format string }{
		{"three_levels.txt", "testdata/graph/three_levels.yaml", "text"},
		{"three_levels.dot", "testdata/graph/three_levels.yaml", "dot"},
		{"joins.txt", "../../examples/joins.yaml", "text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := runExportCLI(t, "graph", "--config", c.config, "--format", c.format)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "graph", c.name)
			if *updateGraph {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("graph --format %s differs from %s:\n%s", c.format, golden, out)
			}
		})
	}
}

func TestGraphRefuses(t *testing.T) {
	_, _, err := runExportCLI(t, "graph", "--config", "testdata/graph/three_levels.yaml", "--format", "svg")
	if usageCode(err) != 2 || !strings.Contains(err.Error(), `--format "svg": expected text or dot`) {
		t.Errorf("--format svg: %v", err)
	}
	_, _, err = runExportCLI(t, "graph", "--config", "testdata/graph/three_levels.yaml", "--set", "gold[2].source=e1d")
	if usageCode(err) != 2 || !strings.Contains(err.Error(), "gold e1d is derived from itself through e1d -> e1d") {
		t.Errorf("a cycle: %v", err)
	}
}
