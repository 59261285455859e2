package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/internal/testshared"
)

// binary is the real medallion binary, for tests that need a process: signals, exit codes,
// stdout and stderr as a scheduler sees them. It is built once per test process and linked once
// per checkout and run (testshared.Binary: the reliability tests of tests/ run the same one).
func binary(t *testing.T) string {
	t.Helper()
	return testshared.Binary(t, "./cmd/medallion")
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestRunIngestProcess(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "")
	bin := binary(t)
	if out, err := exec.Command(bin, "gen", "--config", cfg, "--events", "2000", "--files", "2").CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "run", "ingest", "--config", cfg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run ingest: %v\n%s", err, stderr.String())
	}
	var summary struct {
		Job    string `json:"job"`
		OK     bool   `json:"ok"`
		Result struct {
			Lines    int64 `json:"lines"`
			Rows     int64 `json:"rows"`
			Rejected int64 `json:"rejected"`
		} `json:"result"`
	}
	if strings.Count(stdout.String(), "\n") != 1 || json.Unmarshal(stdout.Bytes(), &summary) != nil {
		t.Fatalf("want one JSON line on stdout, got %q", stdout.String())
	}
	if !summary.OK || summary.Job != "ingest" || summary.Result.Lines != 2000 || summary.Result.Rows+summary.Result.Rejected != 2000 {
		t.Fatalf("summary %+v, want 2000 lines accounted", summary)
	}
}

func TestBadConfigExitCode2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(path, []byte("lake: /tmp/x\nwatermrk: 10m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"run", "ingest", "--config", path},
		{"serve", "--config", path},
		{"run", "ingest"},
	} {
		cmd := exec.Command(binary(t), args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%v: got %v, want exit code 2\n%s", args, err, stderr.String())
		}
		if len(args) > 2 && !strings.Contains(stderr.String(), `"watermrk"`) {
			t.Fatalf("%v: the error must name the unknown key:\n%s", args, stderr.String())
		}
	}
}

// TestServeStopsOnSIGTERM starts the real binary, waits for /healthz, sends SIGTERM and expects
// a clean exit within 10 s.
func TestServeStopsOnSIGTERM(t *testing.T) {
	lake := t.TempDir()
	cfg := writeGenConfig(t, lake, "jobs: {ingest: {schedule: \"@every 1s\"}}\n")
	addr := freeAddr(t)
	cmd := exec.Command(binary(t), "serve", "--config", cfg, "--set", "serve.listen="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never answered: %v\n%s", err, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not stop within 10 s of SIGTERM\n%s", stderr.String())
	}
}
