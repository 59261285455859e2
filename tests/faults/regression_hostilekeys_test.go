package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// TestRegressionIngestSkipsListedKeyOutsideKeyRules: AWS S3 stores keys with "..", "." and empty segments and a
// leading slash (MinIO refuses them), so a listing of the landing prefix may yield them. The
// proxy adds such keys to MinIO's listings. Ingest must not stall on them, must not read or
// write anything outside the lake for them, and must go on ingesting the normal objects.
func TestRegressionIngestSkipsListedKeyOutsideKeyRules(t *testing.T) {
	bucket, cfg, open := lakecheck.TestBucket(t)
	hostile := []string{"a/../../../escape.json", "b//empty.json", "c/./dot.json", "/abs.json"}
	rewrite := func(r *http.Request, body []byte) []byte {
		if r.Method != http.MethodGet || r.URL.Query().Get("list-type") != "2" || !strings.Contains(r.URL.Query().Get("prefix"), "landing/events") {
			return body
		}
		i := bytes.Index(body, []byte("<Contents>"))
		if i < 0 {
			return body
		}
		var extra bytes.Buffer
		for _, k := range hostile {
			fmt.Fprintf(&extra, `<Contents><Key>lake/landing/events/%s</Key><LastModified>2026-01-10T12:00:00.000Z</LastModified><ETag>&#34;d41d8cd98f00b204e9800998ecf8427e&#34;</ETag><Size>90</Size><StorageClass>STANDARD</StorageClass></Contents>`, k)
		}
		return append(append(append([]byte{}, body[:i]...), extra.Bytes()...), body[i:]...)
	}
	up, _ := url.Parse(cfg.Endpoint)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(up)
		pr.Out.Host = pr.In.Host // SigV4 signed the Host
	}}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		body = rewrite(resp.Request, body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", fmt.Sprint(len(body)))
		return nil
	}
	srv := httptest.NewServer(rp)
	defer srv.Close()
	bin := lakecheck.Binary(t)
	c := lakecheck.WriteConfig(t, t.TempDir(), "s3://"+bucket+"/lake", s3Extra(srv.URL, ""))
	lakecheck.MustRun(t, bin, nil, "gen", "--config", c, "--events", "300", "--files", "2")
	r, err := lakecheck.Run(context.Background(), bin, nil, "run", "ingest", "--config", c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 0 {
		t.Fatalf("ingest stalls on listed keys outside the key rules (exit %d): a bad name must be skipped or rejected with a reason, not block the landing prefix\n%s", r.Code, r.Stderr)
	}
	ids, err := lakecheck.Column(context.Background(), open("lake", "bronze/events"), "event_id")
	if err != nil {
		t.Fatal(err)
	}
	rejects, err := lakecheck.Rows(context.Background(), open("lake", "bronze/rejects"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ids)+len(rejects) < 300 {
		t.Fatalf("the normal objects were not ingested: %d rows + %d rejects of 300 lines", len(ids), len(rejects))
	}
}
