package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestNoCredentialsOneLine: without AWS credentials, on a machine whose instance-metadata
// address answers 404 (not an EC2 instance, or IMDSv2 tokens refused), a command on an S3 lake
// prints its one-line error and no SDK "falling back to IMDSv1" WARN line beside it.
func TestNoCredentialsOneLine(t *testing.T) {
	var asked atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		http.NotFound(w, nil)
	}))
	defer imds.Close()
	store := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no store here", http.StatusForbidden)
	}))
	defer store.Close()

	dir := t.TempDir()
	cfg := writeGenConfig(t, "s3://lake", "s3: {endpoint: "+store.URL+", path_style: true, region: us-east-1}\n")
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+dir, "AWS_CONFIG_FILE="+filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.URL)
	cmd := exec.Command(binary(t), "run", "ingest", "--config", cfg)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		t.Fatalf("ingest without credentials succeeded:\n%s", stderr.String())
	}
	if asked.Load() == 0 {
		t.Fatalf("the SDK never asked the instance metadata: the test proves nothing\n%s", stderr.String())
	}
	if strings.Contains(stderr.String(), "IMDSv1") || strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
		t.Fatalf("want the one-line error alone on stderr, got:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "credentials") {
		t.Fatalf("the error does not say credentials are missing:\n%s", stderr.String())
	}
}
