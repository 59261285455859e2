package faults

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// TestRegressionRunRecoversWhenCommitAnswerStalls: the store takes a commit and then never answers
// (a half-dead connection, no reset). objstore/s3 used to set no response timeout, so the run
// waited forever. It must give up on the connection, resolve the unknown outcome, and converge.
func TestRegressionRunRecoversWhenCommitAnswerStalls(t *testing.T) {
	bucket, cfg, open := lakecheck.TestBucket(t)
	var once sync.Once
	closing := make(chan struct{})
	plain := &http.Client{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		out, _ := http.NewRequestWithContext(r.Context(), r.Method, cfg.Endpoint+r.URL.RequestURI(), bytes.NewReader(body))
		out.Header = r.Header.Clone()
		out.Host = r.Host // SigV4 signed it
		out.ContentLength = int64(len(body))
		resp, err := plain.Do(out)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		stall := false
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/bronze/events/_delta_log/") {
			once.Do(func() { stall = true })
		}
		if stall { // the write landed; the answer never comes
			select {
			case <-r.Context().Done():
			case <-closing:
			}
			return
		}
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer srv.Close()
	defer close(closing)

	bin := lakecheck.Binary(t)
	c := lakecheck.WriteConfig(t, t.TempDir(), "s3://"+bucket+"/lake", s3Extra(srv.URL, ""))
	lakecheck.MustRun(t, bin, nil, "gen", "--config", c, "--set", "s3.endpoint="+cfg.Endpoint, "--events", "1000", "--files", "2")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	r, err := lakecheck.Run(ctx, bin, nil, "run", "ingest", "--config", c)
	if ctx.Err() != nil {
		t.Fatalf("ingest hangs on a commit whose answer never comes (killed after %v)", time.Since(start).Round(time.Second))
	}
	if err != nil || (r.Code != 0 && r.Code != 1) {
		t.Fatalf("ingest: exit %d, %v\n%s", r.Code, err, r.Stderr)
	}
	lakecheck.MustRun(t, bin, nil, "run", "ingest", "--config", c)
	ids, err := lakecheck.Column(context.Background(), open("lake", "bronze/events"), "event_id")
	if err != nil {
		t.Fatal(err)
	}
	rejects, err := lakecheck.Rows(context.Background(), open("lake", "bronze/rejects"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids)+len(rejects) != 1000 {
		t.Fatalf("bronze %d + rejects %d != 1000 landing lines after a stalled commit", len(ids), len(rejects))
	}
}
