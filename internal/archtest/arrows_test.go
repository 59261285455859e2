package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/medallion-lake/medallion"

// ranks is the table of DESIGN.md §1, top to bottom: data flows down the list, and a package
// imports only packages in its own row or above it. A package belongs to the row of its longest
// matching folder prefix; a package in no row fails the test, so that each new one is placed.
// Keep this the one copy of the table: when §1 changes, change it here.
//
// Two deliberate differences from the order in which §1 lists the rows:
//   - `config/`, `report/`, `gen/` come before `jobs/`: jobs builds the engines' typed specs from
//     the config and serves the report (§1 says so), so jobs imports them; §1 lists that row
//     after jobs, which no code can follow.
//   - rows for what §1 does not list: internal/testshared, internal/archtest, internal/backoff,
//     internal/hashtab, internal/textdist and internal/dtpattern (they import nothing of ours), internal/testutil (test helpers that build pipeline configs
//     and tables, so below config), and bench/ under cmd/.
var ranks = []struct {
	row     string
	folders []string
}{
	{"internal", []string{"internal/testshared", "internal/archtest", "internal/backoff", "internal/hashtab", "internal/textdist", "internal/dtpattern"}},
	{"objstore", []string{"objstore"}},
	{"txlog", []string{"txlog"}},
	{"pq", []string{"pq"}}, // pq/pqtest too: test batches and schemas, built on pq alone
	// sqlexpr evaluates over pq's batches, so it comes after pq; pq knows nothing of it.
	{"sqlexpr", []string{"sqlexpr"}},
	{"table", []string{"table"}}, // table/source too: a Delta table read as a stream
	{"merge", []string{"merge"}},
	{"kafka", []string{"kafka"}}, // the Kafka client side: bronze, gen, report and jobs use it
	{"bronze", []string{"bronze"}},
	{"silver", []string{"silver"}},
	{"gold", []string{"gold"}},
	{"join", []string{"join"}},
	{"stream", []string{"stream"}},
	{"late", []string{"late"}},
	// sink publishes a table's change feed through kafka's transactional producer; jobs runs it.
	{"sink", []string{"sink"}},
	{"config, report, gen", []string{"config", "report", "gen"}},
	{"internal/testutil", []string{"internal/testutil"}}, // test helpers: pipeline configs, tables
	{"jobs", []string{"jobs"}},
	{"cmd", []string{"cmd"}},
	{"bench", []string{"bench"}},
}

// knownUpward are arrows that point up the table today, by row, each with the work that removes
// it. The test fails when one is no longer needed, so this list only shrinks: delete the line.
var knownUpward = map[[2]string]string{}

// rankOf returns the row index and name of a package path relative to the module, or -1.
func rankOf(rel string) (int, string) {
	best, bestLen := -1, -1
	for i, r := range ranks {
		for _, f := range r.folders {
			if (rel == f || strings.HasPrefix(rel, f+"/")) && len(f) > bestLen {
				best, bestLen = i, len(f)
			}
		}
	}
	if best < 0 {
		return -1, ""
	}
	return best, ranks[best].row
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string // every package it needs to build, transitively (not its tests)
}

// modulePackages lists the module's packages with their non-test imports and dependencies, as
// `go list` sees them.
func modulePackages(t *testing.T) []listed {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("go is not on PATH: %v", err)
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v\n%s", cmd.Dir, err, stderr.Bytes())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages in %s", len(pkgs), cmd.Dir)
	}
	return pkgs
}

// TestImportArrows fails when a package imports one below it in DESIGN.md §1 (see ranks).
func TestImportArrows(t *testing.T) {
	used := map[[2]string]bool{}
	var bad []string
	for _, p := range modulePackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		from, fromRow := rankOf(rel)
		if from < 0 {
			bad = append(bad, rel+": in no row of DESIGN.md §1; add its folder to ranks in internal/archtest")
			continue
		}
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			irel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			to, toRow := rankOf(irel)
			if to <= from {
				continue // in no row: reported for that package itself
			}
			key := [2]string{fromRow, toRow}
			if _, ok := knownUpward[key]; ok {
				used[key] = true
				continue
			}
			bad = append(bad, rel+" ("+fromRow+") imports "+irel+" ("+toRow+"), which is below it in DESIGN.md §1")
		}
	}
	for key, why := range knownUpward {
		if !used[key] {
			bad = append(bad, "knownUpward "+key[0]+" -> "+key[1]+" ("+why+") is no longer needed: delete it")
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

// lateMayImportFromStream are the stream packages late/ may import, each with why it is not the
// runner: DESIGN.md §1 says late/ never imports the stream runner (one late-data reconciler
// that reads what the engine wrote, never runs it).
var lateMayImportFromStream = map[string]string{
	"stream/checkpoint": "the one reader of a query's checkpoint (offsets, commits, state) that late/ and report/ use",
	"stream/spec":       "the typed query specs (pure data built by jobs/), which late/ plans its recompute from",
}

// TestLateImportsNoStreamRunner fails when a package of late/ needs the stream runner (package
// stream), directly or through another package, or imports a stream package that is not in
// lateMayImportFromStream. Tests of late/ may drive the runner to build their inputs.
func TestLateImportsNoStreamRunner(t *testing.T) {
	const runner = module + "/stream"
	seen := 0
	for _, p := range modulePackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if rel != "late" && !strings.HasPrefix(rel, "late/") {
			continue
		}
		seen++
		for _, dep := range p.Deps {
			if dep == runner {
				t.Errorf("%s needs the stream runner (%s); DESIGN.md §1: late/ never imports it (go list -deps shows the path)", rel, runner)
			}
		}
		for _, imp := range p.Imports {
			if irel, ok := strings.CutPrefix(imp, module+"/"); ok && (irel == "stream" || strings.HasPrefix(irel, "stream/")) {
				if _, allowed := lateMayImportFromStream[irel]; !allowed {
					t.Errorf("%s imports %s, which is not among the stream packages late/ may use (lateMayImportFromStream in internal/archtest)", rel, irel)
				}
			}
		}
	}
	if seen == 0 {
		t.Fatal("no package late/ found: the rule checks nothing")
	}
}

// TestRankOf pins the mapping of today's and the target layout's folders to rows.
func TestRankOf(t *testing.T) {
	for rel, want := range map[string]string{
		"objstore/s3/s3test": "objstore",
		"table/source":       "table",
		"pq":                 "pq",
		"pq/pqtest":          "pq",
		"sqlexpr":            "sqlexpr",
		"gold":               "gold",
		"gold/windows":       "gold",
		"internal/testutil":  "internal/testutil",
		"stream/checkpoint":  "stream",
		"late":               "late",
		"report":             "config, report, gen",
		"cmd/medallion":      "cmd",
		"goldfish":           "",
	} {
		if _, got := rankOf(rel); got != want {
			t.Errorf("rankOf(%q) = %q, want %q", rel, got, want)
		}
	}
}
