package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestExitCodes runs the real binary as a scheduler would and checks the README's contract:
// 0 ok, 1 the job failed, 2 a bad command line or config, with "did you mean" for a typo.
func TestExitCodes(t *testing.T) {
	bin := binary(t)
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, c := range []struct {
		args   []string
		code   int
		stderr string // a substring of stderr; "" when it need not say anything
	}{
		{[]string{"--version"}, 0, ""},
		{[]string{}, 0, ""},
		{[]string{"run", "--help"}, 0, ""},
		{[]string{"inget"}, 2, `unknown command "inget" for "medallion"`},
		{[]string{"rnu", "ingest"}, 2, "did you mean run?"},
		{[]string{"inget", "--config", cfg}, 2, `unknown command "inget" for "medallion"; did you mean init or run ingest?`},
		{[]string{"ingest", "--config", cfg}, 2, `did you mean run ingest?`},
		{[]string{"merge-late"}, 2, "did you mean run merge-late?"},
		{[]string{"run", "ingets", "--config", cfg}, 2, `unknown command "ingets" for "medallion run"; did you mean ingest?`},
		{[]string{"run", "ingets"}, 2, "did you mean ingest?"},
		{[]string{"run"}, 2, "missing subcommand"},
		{[]string{"table", "scn", lake}, 2, `unknown command "scn" for "medallion table"; did you mean scan?`},
		{[]string{"table"}, 2, "missing subcommand"},
		{[]string{"export", "sprak"}, 2, "did you mean spark?"},
		{[]string{"table", "scan"}, 2, "table scan: accepts 1 arg(s)"},
		{[]string{"run", "ingest", "--config", cfg, "extra"}, 2, `unknown command "extra"`},
		{[]string{"run", "ingest", "--config", cfg, "--bogus"}, 2, "run ingest: unknown flag: --bogus"},
		{[]string{"--bogus"}, 2, "unknown flag: --bogus"},
		{[]string{"run", "ingest", "--config", missing}, 2, "nope.yaml"},
		{[]string{"lag", "--config", missing}, 2, "nope.yaml"},
		{[]string{"run", "ingest", "--config", cfg, "--gold", "g5"}, 2, "unknown flag: --gold"},
		{[]string{"run", "stream", "--config", cfg, "--gold", "g5"}, 2, "unknown flag: --gold"},
		{[]string{"run", "merge-late", "--config", cfg, "--gold", "g6"}, 2, `--gold "g6" is not a gold aggregation`},
		{[]string{"run", "replay", "--config", cfg, "--since", "1h", "--gold", "g6"}, 2, "(it has g5)"},
		{[]string{"run", "stream", "--config", cfg, "--trigger", "sometimes"}, 2, "--trigger"},
		{[]string{"run", "refresh", "--config", cfg, "--table", "g6"}, 2, `--table "g6" is not a gold or derived table`},
	} {
		cmd := exec.Command(bin, c.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			code = xe.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(stderr.String(), c.stderr) || strings.Contains(stderr.String(), "medallion: medallion") {
			t.Errorf("medallion %s: exit %d, stderr %q; want exit %d with %q",
				strings.Join(c.args, " "), code, stderr.String(), c.code, c.stderr)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	out, err := exec.Command(binary(t), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^medallion (v\S+|devel(-[0-9a-f]+(-dirty)?)?)\n$`).Match(out) {
		t.Errorf("--version printed %q", out)
	}
}
