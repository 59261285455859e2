package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// ownPipelineBlock is the README's "pipeline of your own" shell block, one command a line.
func ownPipelineBlock(t *testing.T, readme string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "<!-- own-pipeline:")
	if !ok {
		t.Fatal("README.md lost its own-pipeline marker")
	}
	_, rest, _ = strings.Cut(rest, "```sh\n")
	block, _, _ := strings.Cut(rest, "```")
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestREADMEOwnPipelinePath runs the README's "pipeline of your own" commands exactly as written
// (with the binary on PATH, in a directory that has the checkout's examples/), except serve,
// which runs until stopped: the stream quarantines late rows and merge-late folds them back.
func TestREADMEOwnPipelinePath(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(repoRoot(t), "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	results := map[string]map[string]any{} // job -> result of its run summary
	ran := 0
	var genFirstKey string // the first landing object gen wrote: its name is its arrival time
	var genEnd time.Time   // when gen finished: its last line arrived then (--start now)
	for _, line := range ownPipelineBlock(t, string(readme)) {
		if strings.HasPrefix(line, "medallion serve") {
			continue
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("%s: %v\n%s%s", line, err, out, stderr)
		}
		ran++
		var s struct {
			Job      string         `json:"job"`
			Result   map[string]any `json:"result"`
			FirstKey string         `json:"first_key"`
		}
		if strings.HasPrefix(line, "medallion gen") {
			genEnd = time.Now()
			if json.Unmarshal(out, &s) != nil || s.FirstKey == "" {
				t.Fatalf("%s: no first_key in its summary: %s", line, out)
			}
			genFirstKey = s.FirstKey
		}
		if ls := strings.Split(strings.TrimSpace(string(out)), "\n"); json.Unmarshal([]byte(ls[len(ls)-1]), &s) == nil && s.Job != "" {
			results[s.Job] = s.Result
		}
	}
	if ran < 6 {
		t.Fatalf("ran %d commands of the README block", ran)
	}
	quarantined := 0.0
	golds, _ := results["stream"]["gold"].([]any)
	for _, g := range golds {
		n, _ := g.(map[string]any)["numLateRowsQuarantined"].(float64)
		quarantined += n
	}
	merged, _ := results["merge-late"]["lateRows"].(float64)
	if quarantined == 0 || merged != quarantined {
		t.Fatalf("the README path quarantined %v late rows and merged %v back; stream %v, merge-late %v",
			quarantined, merged, results["stream"], results["merge-late"])
	}
	t.Logf("%v late rows quarantined and merged back", merged)

	// Gold shows windows: gen spreads its arrivals over time, so with the example's 10m
	// watermark the stream closes the 5-minute windows of most of the span (with every event
	// in the last 4 minutes, none closed and gold held a handful of late windows).
	firstArrival, err := time.Parse("20060102T150405.000000Z", strings.SplitN(filepath.Base(genFirstKey), "-", 2)[0])
	if err != nil {
		t.Fatalf("gen's first object %q: %v", genFirstKey, err)
	}
	slots := map[time.Time]bool{} // 5-minute windows of the arrival span
	for w := firstArrival.Truncate(5 * time.Minute); w.Before(genEnd); w = w.Add(5 * time.Minute) {
		slots[w] = false
	}
	scan := exec.Command(bin, "table", "scan", "lake/gold/events_5m", "--format", "jsonl")
	scan.Dir = dir
	rows, err := scan.Output()
	if err != nil {
		t.Fatalf("table scan gold: %v", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(rows)), "\n") {
		var r struct {
			Window struct {
				Start time.Time `json:"start"`
			} `json:"window"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("gold row %q: %v", l, err)
		}
		if _, ok := slots[r.Window.Start.UTC()]; ok {
			slots[r.Window.Start.UTC()] = true
		}
	}
	filled := 0
	for _, has := range slots {
		if has {
			filled++
		}
	}
	if len(slots) < 6 || filled*10 < len(slots)*7 {
		t.Fatalf("gold has %d of the %d 5-minute windows of gen's arrivals (%v to %v): want most of them",
			filled, len(slots), firstArrival, genEnd)
	}
	t.Logf("gold has %d of the %d windows of gen's arrivals", filled, len(slots))
}
