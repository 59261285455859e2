package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBlock returns the commands of the first ```sh block after marker in the repository's
// README.md, one a line, without their # comments.
func readmeBlock(t *testing.T, marker string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), marker)
	if !ok {
		t.Fatalf("README.md lost its %q marker", marker)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatalf("README.md: no ```sh block after %q", marker)
	}
	block, _, _ := strings.Cut(rest, "```")
	var cmds []string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if line = strings.TrimSpace(line); line != "" {
			cmds = append(cmds, line)
		}
	}
	return cmds
}

// TestQuickStartAsWritten runs the README's quick start as a new user would on a fresh clone:
// with only Go on the PATH (no medallion installed), from the checkout's root. The first command
// runs the demo (smaller, and in a temporary lake, by flags appended to it); the second is
// `make test`, which must be a target of the Makefile (running the whole suite from inside a
// test would recurse).
func TestQuickStartAsWritten(t *testing.T) {
	cmds := readmeBlock(t, "<!-- quick-start:")
	if len(cmds) != 2 {
		t.Fatalf("the quick start is %d commands, want 2 (the demo, the tests): %q", len(cmds), cmds)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on the PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// Only Go and the system's tools: a medallion installed earlier must not make it pass.
	path := filepath.Dir(goBin) + string(os.PathListSeparator) + "/usr/bin" + string(os.PathListSeparator) + "/bin"
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	env = append(env, "PATH="+path)

	demo := strings.Fields(cmds[0])
	lake := t.TempDir()
	args := append(demo[1:], "--lake", lake, "--events", "20000")
	c := exec.Command(lookPathIn(t, demo[0], path), args...)
	c.Dir, c.Env = root, env
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmds[0], err, out)
	}
	for _, want := range []string{"[4/4] merge-late", "gold/events_5m", "Explore:"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("%s: the output lacks %q:\n%s", cmds[0], want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(lake, "gold", "events_5m", "_delta_log")); err != nil {
		t.Fatalf("%s wrote no gold table: %v", cmds[0], err)
	}

	if cmds[1] != "make test" {
		t.Fatalf("the quick start's second command is %q, want make test", cmds[1])
	}
	mk, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer mk.Close()
	target := regexp.MustCompile(`^test:`)
	found := false
	for sc := bufio.NewScanner(mk); sc.Scan(); {
		found = found || target.MatchString(sc.Text())
	}
	if !found {
		t.Fatal("the Makefile has no test target")
	}
}

// lookPathIn finds name in the PATH list path (not the test process's PATH).
func lookPathIn(t *testing.T, name, path string) string {
	t.Helper()
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	t.Fatalf("%s is not on a fresh machine's PATH (%s): the quick start must not need it installed", name, path)
	return ""
}
