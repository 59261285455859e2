//go:build unix

package testshared

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Binary builds the main package pkg of the repository (a path from its root, such as
// "./cmd/medallion") once per test process and returns the executable's path.
//
// Every test process of one checkout builds into the same folder, os.TempDir()/
// medallion-test-bin-<hash of the checkout's path>: go build leaves a binary whose build ID
// matches the sources untouched, so only the first process of a `make test` links it (about 2.7
// CPU s each; four packages start the binary), the others find it up to date in a fraction of a
// second. A file lock in that folder makes the builds of test processes running side by side
// take turns. The binary is left there for the next run, a cache like Go's own; removing the
// folder is always safe.
func Binary(t testing.TB, pkg string) string {
	t.Helper()
	bins.mu.Lock()
	b, ok := bins.m[pkg]
	if !ok {
		b = &builtBinary{}
		if bins.m == nil {
			bins.m = map[string]*builtBinary{}
		}
		bins.m[pkg] = b
	}
	bins.mu.Unlock()
	b.once.Do(func() { b.path, b.err = build(pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

type builtBinary struct {
	once sync.Once
	path string
	err  error
}

// bins are the binaries this test process built, by package: go test runs every test of a
// package in one process, and asking go build again per test would cost a process start each.
var bins struct {
	mu sync.Mutex
	m  map[string]*builtBinary
}

func build(pkg string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", fmt.Errorf("testshared: build %s: %w", pkg, err)
	}
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(os.TempDir(), "medallion-test-bin-"+hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("testshared: build %s: %w", pkg, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("testshared: build %s: %w", pkg, err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("testshared: build %s: lock %s: %w", pkg, lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	path := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", path, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testshared: go build %s in %s: %w\n%s", pkg, root, err, out)
	}
	return path, nil
}
