package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
			Job    string         `json:"job"`
			Result map[string]any `json:"result"`
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
}
