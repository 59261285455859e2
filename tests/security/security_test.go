// Package security checks, with the real binary, what the pipeline promises about secrets,
// network exposure, TLS and the lake's boundaries: credentials come only from the environment
// (or the standard chain) and are never printed, logged or served; serve listens on loopback
// by default; S3 over TLS with a private CA works through AWS_CA_BUNDLE (and fails without it);
// nothing under a file lake can make the pipeline read or write outside its root.
package security

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// Recognisable fake credentials: any output containing them leaked a secret.
const (
	fakeSecret = "h10FAKEsecretKEYdoNotPrint0123456789abcd"
	fakeToken  = "h10FAKEsessionTOKENdoNotPrint9876543210"
)

var secretEnv = []string{
	"AWS_ACCESS_KEY_ID=AKIAH10FAKEACCESSKEY",
	"AWS_SECRET_ACCESS_KEY=" + fakeSecret,
	"AWS_SESSION_TOKEN=" + fakeToken,
}

func assertNoSecret(t *testing.T, what, text string) {
	t.Helper()
	for _, s := range []string{fakeSecret, fakeToken, fakeSecret[:16], fakeToken[:16]} {
		if strings.Contains(text, s) {
			t.Errorf("%s prints a credential (%q...):\n%s", what, s[:8], text)
		}
	}
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

// TestCredentialsNeverPrinted runs every kind of command with fake secrets in the environment,
// at debug log level, and greps everything the process emits for them.
func TestCredentialsNeverPrinted(t *testing.T) {
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	debug := "log: {level: debug}\n"
	cfg := lakecheck.WriteConfig(t, dir, lake, debug)
	lakecheck.MustRun(t, bin, secretEnv, "gen", "--config", cfg, "--events", "2000", "--files", "2")
	for _, args := range [][]string{
		{"run", "ingest", "--config", cfg},
		{"run", "stream", "--config", cfg},
		{"table", "describe", filepath.Join(lake, "bronze/events")},
		{"table", "history", filepath.Join(lake, "silver/events")},
	} {
		r := lakecheck.MustRun(t, bin, secretEnv, args...)
		assertNoSecret(t, strings.Join(args[:2], " "), r.Stdout+r.Stderr)
	}

	// A failing S3 run: the error path (signing, retries, the final message) must not echo the
	// credentials either. Nothing listens at the endpoint.
	s3dir := t.TempDir()
	s3cfg := lakecheck.WriteConfig(t, s3dir, "s3://h10-no-such-bucket/lake",
		"s3: {endpoint: \"http://"+freeAddr(t)+"\", region: us-east-1, path_style: true}\n"+debug)
	for _, job := range []string{"ingest", "stream"} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r, err := lakecheck.Run(ctx, bin, secretEnv, "run", job, "--config", s3cfg)
		cancel()
		if err != nil || r.Code != 1 {
			t.Fatalf("run %s on an unreachable S3: exit %d, %v; want exit 1\n%s", job, r.Code, err, r.Stderr)
		}
		assertNoSecret(t, "failing S3 run "+job, r.Stdout+r.Stderr)
	}
	// Against the real MinIO with a wrong secret: the store answers SignatureDoesNotMatch.
	if ep := os.Getenv("MEDALLION_TEST_S3_ENDPOINT"); ep != "" {
		cfg3 := lakecheck.WriteConfig(t, t.TempDir(), "s3://h10-any-bucket/lake",
			"s3: {endpoint: \""+ep+"\", region: us-east-1, path_style: true}\n"+debug)
		r, err := lakecheck.Run(context.Background(), bin, secretEnv, "run", "ingest", "--config", cfg3)
		if err != nil || r.Code != 1 {
			t.Fatalf("run ingest with a wrong secret: exit %d, %v; want 1\n%s", r.Code, err, r.Stderr)
		}
		assertNoSecret(t, "run ingest with a wrong secret", r.Stdout+r.Stderr)
	}

	// serve: logs, /metrics, /healthz and the status page with its API.
	addr := freeAddr(t)
	out := runServe(t, bin, cfg, secretEnv, "--set", "serve.listen="+addr, "--set", `jobs.ingest.schedule="@every 1s"`)
	waitHealthy(t, addr, out)
	time.Sleep(1500 * time.Millisecond) // one scheduled ingest
	for _, path := range []string{"/metrics", "/healthz", "/api/status", "/"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || len(body) == 0 {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, body)
		}
		assertNoSecret(t, "GET "+path, string(body))
	}
	assertNoSecret(t, "serve logs", out())
}

// runServe starts serve and returns a function that stops it (SIGTERM) and returns its output.
func runServe(t *testing.T, bin, cfg string, env []string, args ...string) func() string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--config", cfg}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var buf safeBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() string {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		return buf.String()
	}
	t.Cleanup(func() { stop() })
	return stop
}

func waitHealthy(t *testing.T, addr string, out func() string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("serve did not answer on %s:\n%s", addr, out())
}

// TestServeBindsLoopbackByDefault checks the default in the config and the socket the real
// process opens: reachable on 127.0.0.1, not on the machine's other addresses.
func TestServeBindsLoopbackByDefault(t *testing.T) {
	p, err := config.Parse([]byte(lakecheck.Config("lake", "")), "pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(p.Serve.Listen)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Fatalf("default serve.listen %q is not a loopback address", p.Serve.Listen)
	}
	if ln, err := net.Listen("tcp", p.Serve.Listen); err != nil {
		t.Fatalf("the default serve port %s is taken on this machine, cannot check the listener: %v", p.Serve.Listen, err)
	} else {
		ln.Close()
	}
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	cfg := lakecheck.WriteConfig(t, dir, filepath.Join(dir, "lake"), "")
	out := runServe(t, bin, cfg, nil)
	waitHealthy(t, p.Serve.Listen, out)
	others := 0
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() {
			continue
		}
		others++
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), port), 2*time.Second)
		if err == nil {
			c.Close()
			t.Errorf("serve answers on %s:%s; by default it must listen on loopback only", ipn.IP, port)
		}
	}
	t.Logf("serve reachable on %s, refused on %d non-loopback addresses", p.Serve.Listen, others)
}

// safeBuffer collects a child's output from two pipes at once.
type safeBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *safeBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *safeBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSecretsInConfigAreRefused: credentials belong in the environment or the standard chain;
// a config that carries one is refused (exit 2, naming the key) without echoing the value.
func TestSecretsInConfigAreRefused(t *testing.T) {
	bin := lakecheck.Binary(t)
	for _, key := range []string{"secret_access_key", "access_key_id", "session_token"} {
		dir := t.TempDir()
		cfg := lakecheck.WriteConfig(t, dir, filepath.Join(dir, "lake"),
			"s3: {endpoint: \"http://127.0.0.1:1\", "+key+": \""+fakeSecret+"\"}\n")
		r, err := lakecheck.Run(context.Background(), bin, nil, "run", "ingest", "--config", cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != 2 || !strings.Contains(r.Stderr, key) {
			t.Errorf("s3.%s in the config: exit %d, want 2 and an error naming the key:\n%s", key, r.Code, r.Stderr)
		}
		assertNoSecret(t, "config error for s3."+key, r.Stdout+r.Stderr)
	}
}
