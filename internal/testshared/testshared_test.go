package testshared

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookupFollowsEnv(t *testing.T) {
	abs := t.TempDir()
	t.Setenv(Env, abs)
	if got, err := Lookup(); err != nil || got != abs {
		t.Fatalf("absolute %s: got %q, %v", Env, got, err)
	}
	// A relative value is relative to the repository root (../.. from this package).
	t.Setenv(Env, "internal")
	got, err := Lookup()
	want, _ := filepath.Abs(filepath.Join("..", "..", "internal"))
	if err != nil || got != want {
		t.Fatalf("relative %s: got %q, %v; want %q", Env, got, err, want)
	}
}

func TestMissingSkipsOutsideCI(t *testing.T) {
	t.Setenv(Env, filepath.Join(t.TempDir(), "absent"))
	t.Setenv("CI", "")
	var ran bool
	t.Run("needs shared", func(t *testing.T) {
		Dir(t)
		ran = true
	})
	if ran {
		t.Fatal("Dir returned for a missing folder")
	}
	dir := t.TempDir()
	t.Setenv(Env, dir)
	t.Run("needs a file", func(t *testing.T) {
		Path(t, "fixtures", "delta")
		ran = true
	})
	if ran {
		t.Fatal("Path returned for a missing file")
	}
	if got := Path(t); got != dir {
		t.Fatalf("Path() = %q, want %q", got, dir)
	}
}

// TestMissingFailsInCI runs TestHelperNeedsShared in a child process with CI=true.
func TestMissingFailsInCI(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperNeedsShared$", "-test.v")
	cmd.Env = append(os.Environ(), "CI=true", Env+"="+filepath.Join(t.TempDir(), "absent"), "TESTSHARED_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CI=true: the shared fixtures are required") {
		t.Fatalf("want a failure under CI=true, got %v:\n%s", err, out)
	}
}

func TestHelperNeedsShared(t *testing.T) {
	if os.Getenv("TESTSHARED_CHILD") != "1" {
		t.Skip("run by TestMissingFailsInCI")
	}
	Dir(t)
}

func TestSizedFollowsRaceAndLong(t *testing.T) {
	t.Setenv("MEDALLION_LONG", "")
	want := 10
	if Race {
		want = 3
	}
	if got := Sized(10, 3); got != want {
		t.Fatalf("Sized(10, 3) = %d with Race=%v, want %d", got, Race, want)
	}
	t.Setenv("MEDALLION_LONG", "1")
	if got := Sized(10, 3); got != 10 {
		t.Fatalf("Sized(10, 3) = %d with MEDALLION_LONG=1, want the full 10", got)
	}
}
