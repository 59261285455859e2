package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// listTree is every path under dir, with its mode, sorted.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, p+" "+info.Mode().String()+" "+info.ModTime().String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestReadOnlyCommandsWriteNothing runs every read-only command on a write-protected copy of a
// lake the CLI made, and on a path that does not exist, and finds nothing created or changed.
func TestReadOnlyCommandsWriteNothing(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	if out, err := runGenCLI(t, "gen", "--config", cfg, "--events", "2000", "--files", "2", "--seed", "3", "--start", "now"); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	for _, job := range []string{"ingest", "stream"} {
		if out, err := runGenCLI(t, "run", job, "--config", cfg); err != nil {
			t.Fatalf("run %s: %v\n%s", job, err, out)
		}
	}
	ro := filepath.Join(t.TempDir(), "lake")
	if out, err := exec.Command("cp", "-a", lake, ro).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(ro, ".objstore-tmp")); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chmod", "-R", "a-w", ro).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chmod", "-R", "u+w", ro).Run() })
	roCfg := writeGenConfig(t, ro, "")
	before := listTree(t, ro)

	var tables []string
	_ = filepath.WalkDir(ro, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "_delta_log" {
			tables = append(tables, filepath.Dir(p))
			return filepath.SkipDir
		}
		return err
	})
	if len(tables) < 3 {
		t.Fatalf("found tables %v", tables)
	}
	missing := filepath.Join(t.TempDir(), "no", "such", "table")
	html := filepath.Join(t.TempDir(), "report.html")
	var cmds [][]string
	feeds := 0
	for _, tbl := range append(tables, missing, "file://"+missing) {
		cmds = append(cmds,
			[]string{"table", "scan", tbl},
			[]string{"table", "describe", tbl},
			[]string{"table", "history", tbl})
		if strings.Contains(tbl, "gold") { // gold has the change data feed on
			cmds = append(cmds, []string{"table", "changes", tbl, "--from-version", "0"})
			feeds++
		}
	}
	if feeds == 0 {
		t.Fatalf("no gold table among %v to read the change feed of", tables)
	}
	cmds = append(cmds,
		[]string{"lag", "--config", roCfg, "--since", "30d"},
		[]string{"report", "--config", roCfg, "--html", html, "--since", "30d"},
		[]string{"report", "--config", roCfg, "--json"})
	for _, args := range cmds {
		out, err := runGenCLI(t, args...)
		if err != nil && !strings.HasPrefix(args[len(args)-1], missing) && !strings.HasSuffix(args[len(args)-1], missing) {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
	if after := listTree(t, ro); !slices.Equal(before, after) {
		t.Errorf("the read-only commands changed the lake:\nbefore %q\nafter  %q", before, after)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(filepath.Dir(missing)))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(filepath.Dir(missing))); err == nil {
		t.Errorf("a table command created %s", filepath.Dir(filepath.Dir(missing)))
	}
	if _, err := os.Stat(html); err != nil {
		t.Errorf("report --html did not write its file: %v", err)
	}
}
