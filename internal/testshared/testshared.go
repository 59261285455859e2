// Package testshared finds the shared checkout that some tests read: DESIGN.md, spec/ and the
// Delta fixtures in fixtures/delta, kept beside the repository rather than in it. It is the one
// place that knows where that folder is and what a test does when it is missing.
//
// The folder is $MEDALLION_SHARED when set (an absolute path, or a path relative to the
// repository root), else ../shared relative to the repository root. When it is missing, a test
// that needs it is skipped with a message saying so, or fails when CI=true: CI always has it, so
// there a missing folder is a broken setup, not a reason to pass.
//
// It also builds the medallion binary that the process tests run (Binary), once per checkout
// and run. It imports nothing of medallion's; what survives a test run is that binary, in a
// folder under os.TempDir() that is always safe to remove.
package testshared

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the variable that overrides where the shared folder is.
const Env = "MEDALLION_SHARED"

// modulePath is the main module's path: its go.mod marks the repository root.
const modulePath = "github.com/medallion-lake/medallion"

// Dir returns the shared folder, or skips t (fails it when CI=true) when the folder is missing.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := Lookup()
	if err != nil {
		missing(t, err)
	}
	return dir
}

// Path returns the path parts inside the shared folder, or skips t (fails it when
// CI=true) when the folder or that path in it is missing.
func Path(t testing.TB, parts ...string) string {
	t.Helper()
	dir := Dir(t)
	p := filepath.Join(append([]string{dir}, parts...)...)
	if _, err := os.Stat(p); err != nil {
		missing(t, fmt.Errorf("%s is not in the shared folder %s (set %s to another): %w", filepath.Join(parts...), dir, Env, err))
	}
	return p
}

// Lookup returns the shared folder, or an error saying where it looked and how to point it
// elsewhere. It does not consult CI: callers outside tests decide themselves.
func Lookup() (string, error) {
	dir := os.Getenv(Env)
	if dir == "" || !filepath.IsAbs(dir) {
		root, err := repoRoot()
		if err != nil {
			return "", err
		}
		if dir == "" {
			dir = filepath.Join(root, "..", "shared")
		} else {
			dir = filepath.Join(root, dir)
		}
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a folder", dir)
	}
	if err != nil {
		return "", fmt.Errorf("shared folder not found (set %s, default ../shared beside the repository): %w", Env, err)
	}
	return dir, nil
}

// missing skips t, or fails it under CI=true.
func missing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true: the shared fixtures are required)", err)
	}
	t.Skipf("skipped: %v", err)
}

// repoRoot walks up from the working directory (a test runs in its package's folder) to the
// folder whose go.mod declares the main module; the tests/ module's go.mod is passed over.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if declaresMain(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above %s", modulePath, wd)
		}
		dir = parent
	}
}

// declaresMain reports whether the go.mod at path declares the main module.
func declaresMain(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "module ") {
			return strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "module")), `"`) == modulePath
		}
	}
	return false
}
