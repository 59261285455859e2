package s3_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// faultyTransport sits between the SDK and the real MinIO server and misbehaves on purpose,
// so the retry and classification paths run against real S3 answers.
type faultyTransport struct {
	mu      sync.Mutex
	next    http.RoundTripper
	rule    func(n int, req *http.Request) (answer *http.Response, forward bool)
	calls   int
	headers []http.Header
}

func (f *faultyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.headers = append(f.headers, req.Header.Clone())
	f.mu.Unlock()
	if f.rule == nil {
		return f.next.RoundTrip(req)
	}
	answer, forward := f.rule(n, req)
	if forward {
		resp, err := f.next.RoundTrip(req)
		if err != nil || answer == nil {
			return resp, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if answer != nil {
		answer.Request = req
		return answer, nil
	}
	return f.next.RoundTrip(req)
}

func xmlError(status int, code string) *http.Response {
	body := `<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>injected</Message></Error>`
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/xml"}}, ContentLength: int64(len(body)),
		Body: io.NopCloser(strings.NewReader(body)),
	}
}

// newFaulty returns a bucket on a fresh test bucket whose requests pass through ft.
func newFaulty(t *testing.T, ft *faultyTransport) *s3.Bucket {
	t.Helper()
	base := s3test.NewTestBucket(t)
	cfg, _ := s3test.Config(t)
	cfg.Bucket = base.Name()
	cfg.MaxBackoff = 20 * time.Millisecond
	ft.next = http.DefaultTransport
	cfg.HTTPClient = &http.Client{Transport: ft}
	b, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func isPut(req *http.Request) bool { return req.Method == http.MethodPut }

func TestNoDefaultChecksumHeaders(t *testing.T) {
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	if err := objstore.PutBytesIfAbsent(context.Background(), b, "k", []byte("data")); err != nil {
		t.Fatal(err)
	}
	for _, h := range ft.headers {
		for name := range h {
			if strings.HasPrefix(strings.ToLower(name), "x-amz-checksum-") || strings.EqualFold(name, "x-amz-sdk-checksum-algorithm") {
				t.Errorf("request carries %s: checksums must be sent only when required", name)
			}
		}
	}
	if got := ft.headers[len(ft.headers)-1].Get("If-None-Match"); got != "*" {
		t.Errorf("put-if-absent sent If-None-Match %q, want *", got)
	}
}

func TestRetriesServerErrors(t *testing.T) {
	ctx := context.Background()
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	if err := objstore.PutBytes(ctx, b, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	start := ft.calls
	ft.rule = func(n int, _ *http.Request) (*http.Response, bool) {
		switch n - start {
		case 1:
			return xmlError(http.StatusServiceUnavailable, "SlowDown"), false
		case 2:
			return xmlError(http.StatusInternalServerError, "InternalError"), false
		}
		return nil, false
	}
	data, err := objstore.ReadAll(ctx, b, "k")
	if err != nil || string(data) != "v" {
		t.Fatalf("Get through two 5xx = %q, %v", data, err)
	}
	if got := ft.calls - start; got != 3 {
		t.Errorf("%d requests, want 3 (two failures, one success)", got)
	}
}

func TestPutIfAbsentLostAnswerIsOurs(t *testing.T) {
	ctx := context.Background()
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	// The first conditional PUT reaches MinIO and is stored, but the client sees a 500: the
	// retry then meets 412 from its own write and must report success.
	first := true
	ft.rule = func(_ int, req *http.Request) (*http.Response, bool) {
		if isPut(req) && first {
			first = false
			return xmlError(http.StatusInternalServerError, "InternalError"), true
		}
		return nil, false
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, "_delta_log/00000000000000000001.json", []byte("ours")); err != nil {
		t.Fatalf("PutIfAbsent whose first answer was lost = %v, want success", err)
	}
	// A rival's object with other content is still a lost race, even after an ambiguous attempt.
	if err := objstore.PutBytes(ctx, b, "_delta_log/00000000000000000002.json", []byte("rival")); err != nil {
		t.Fatal(err)
	}
	first = true
	err := objstore.PutBytesIfAbsent(ctx, b, "_delta_log/00000000000000000002.json", []byte("ours"))
	if !errors.Is(err, objstore.ErrAlreadyExists) {
		t.Fatalf("PutIfAbsent over a rival = %v, want ErrAlreadyExists", err)
	}
}

func TestPutIfAbsentRetriesConditionalConflict(t *testing.T) {
	ctx := context.Background()
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	conflicts := 0
	ft.rule = func(_ int, req *http.Request) (*http.Response, bool) {
		if isPut(req) && conflicts < 2 {
			conflicts++
			return xmlError(http.StatusConflict, "ConditionalRequestConflict"), false
		}
		return nil, false
	}
	if err := objstore.PutBytesIfAbsent(ctx, b, "k", []byte("v")); err != nil {
		t.Fatalf("PutIfAbsent after two 409s = %v", err)
	}
	if data, err := objstore.ReadAll(ctx, b, "k"); err != nil || string(data) != "v" {
		t.Errorf("stored %q, %v", data, err)
	}
}

func TestPreconditionFailedByCodeNotText(t *testing.T) {
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	// A 500 whose message mentions 412 must not pass for a lost race.
	ft.rule = func(_ int, req *http.Request) (*http.Response, bool) {
		if isPut(req) {
			return xmlError(http.StatusBadRequest, "InvalidArgument412PreconditionFailed"), false
		}
		return nil, false
	}
	err := objstore.PutBytesIfAbsent(context.Background(), b, "k", []byte("v"))
	if err == nil || errors.Is(err, objstore.ErrAlreadyExists) {
		t.Errorf("PutIfAbsent = %v, want a plain error", err)
	}
}

func TestContextDeadline(t *testing.T) {
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	ft.rule = func(_ int, req *http.Request) (*http.Response, bool) {
		<-req.Context().Done() // a server that never answers
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Stat(ctx, "k")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stat against a hung server = %v, want DeadlineExceeded", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("Stat took %v after a 100ms deadline", time.Since(start))
	}
}

func TestMultipartUnknownSize(t *testing.T) {
	ctx := context.Background()
	base := s3test.NewTestBucket(t)
	cfg, _ := s3test.Config(t)
	cfg.Bucket = base.Name()
	cfg.PartSize = 5 << 20
	cfg.Prefix = "tables/events/"
	b, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("0123456789abcdef"), (11<<20)/16+3) // 3 parts, the last short
	if err := b.Put(ctx, "big", io.MultiReader(bytes.NewReader(want)), -1); err != nil {
		t.Fatalf("multipart Put: %v", err)
	}
	if err := b.PutIfAbsent(ctx, "big", io.MultiReader(bytes.NewReader(want)), -1); !errors.Is(err, objstore.ErrAlreadyExists) {
		t.Errorf("multipart PutIfAbsent over an object = %v, want ErrAlreadyExists", err)
	}
	if err := b.PutIfAbsent(ctx, "big2", io.MultiReader(bytes.NewReader(want)), -1); err != nil {
		t.Errorf("multipart PutIfAbsent: %v", err)
	}
	for _, key := range []string{"big", "big2"} {
		got, err := objstore.ReadAll(ctx, b, key)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want %d", key, len(got), err, len(want))
		}
	}
	// The prefix is where the objects really are.
	if _, err := base.Stat(ctx, "tables/events/big"); err != nil {
		t.Errorf("object not under the configured prefix: %v", err)
	}
	if err := b.Put(ctx, "short", io.MultiReader(bytes.NewReader(want)), int64(len(want)+1)); err == nil {
		t.Error("Put of fewer bytes than announced succeeded")
	}
	if _, err := base.Stat(ctx, "tables/events/short"); !errors.Is(err, objstore.ErrNotFound) {
		t.Errorf("a failed multipart Put left an object: %v", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	ctx := context.Background()
	for name, cfg := range map[string]s3.Config{
		"no bucket":      {},
		"tiny parts":     {Bucket: "b", PartSize: 1024},
		"invalid prefix": {Bucket: "b", Prefix: "a/../b"},
	} {
		if _, err := s3.New(ctx, cfg); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestMissingBucketIsNotNotFound(t *testing.T) {
	cfg, ok := s3test.Config(t)
	if !ok {
		t.Skip("no S3 test server")
	}
	cfg.Bucket = "medallion-test-no-such-bucket"
	b, err := s3.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Get(context.Background(), "k")
	if err == nil || errors.Is(err, objstore.ErrNotFound) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Get on a missing bucket = %v, want an error naming the bucket, not ErrNotFound", err)
	}
}

// TestStorageFullIsNotRetried: MinIO refuses a put on a full disk with XMinioStorageFull (HTTP
// 507; 500 in releases before 2021) and on an exhausted bucket quota with
// XMinioAdminBucketQuotaExceeded. Each is objstore.ErrStorageFull and a put-if-absent (every
// Delta commit) does not retry it, even as a 500.
func TestStorageFullIsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		code   string
	}{
		{http.StatusInsufficientStorage, "XMinioStorageFull"},
		{http.StatusInternalServerError, "XMinioStorageFull"},
		{http.StatusBadRequest, "XMinioAdminBucketQuotaExceeded"},
		{http.StatusInsufficientStorage, "InsufficientStorage"},
	} {
		ft := &faultyTransport{}
		b := newFaulty(t, ft)
		puts := 0
		ft.rule = func(_ int, req *http.Request) (*http.Response, bool) {
			if isPut(req) {
				puts++
				return xmlError(tc.status, tc.code), false
			}
			return nil, false
		}
		err := objstore.PutBytesIfAbsent(context.Background(), b, "_delta_log/00000000000000000001.json", []byte("v"))
		if !errors.Is(err, objstore.ErrStorageFull) || !strings.Contains(err.Error(), "_delta_log/00000000000000000001.json") {
			t.Errorf("%d %s: put-if-absent = %v, want ErrStorageFull naming the key", tc.status, tc.code, err)
		}
		if puts != 1 {
			t.Errorf("%d %s: %d PUTs, want 1 (no retry)", tc.status, tc.code, puts)
		}
		if err := objstore.PutBytes(context.Background(), b, "part-1.parquet", []byte("v")); !errors.Is(err, objstore.ErrStorageFull) {
			t.Errorf("%d %s: put = %v, want ErrStorageFull", tc.status, tc.code, err)
		}
	}
}

// TestBodiesUnsignedOnLoopback: over plain HTTP to this machine a body goes out as
// UNSIGNED-PAYLOAD (no SHA-256 pass over it), the request itself still signed; the store
// takes it and the bytes read back.
func TestBodiesUnsignedOnLoopback(t *testing.T) {
	ctx := context.Background()
	ft := &faultyTransport{}
	b := newFaulty(t, ft)
	want := bytes.Repeat([]byte("payload "), 1000)
	if err := b.Put(ctx, "put", bytes.NewReader(want), int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if err := b.PutIfAbsent(ctx, "put-if-absent", bytes.NewReader(want), int64(len(want))); err != nil {
		t.Fatal(err)
	}
	if err := b.Put(ctx, "pipe", io.MultiReader(bytes.NewReader(want)), int64(len(want))); err != nil {
		t.Fatal(err)
	}
	ft.mu.Lock()
	sent := slices.Clone(ft.headers) // the three puts, before any read
	ft.mu.Unlock()
	if len(sent) != 3 {
		t.Fatalf("%d requests for three puts, want 3", len(sent))
	}
	for i, h := range sent {
		if got := h.Get("X-Amz-Content-Sha256"); got != "UNSIGNED-PAYLOAD" {
			t.Errorf("put %d went out with X-Amz-Content-Sha256 %q, want UNSIGNED-PAYLOAD on a loopback endpoint", i, got)
		}
		if h.Get("Authorization") == "" {
			t.Errorf("put %d went out without a signature", i)
		}
	}
	for _, key := range []string{"put", "put-if-absent", "pipe"} {
		if got, err := objstore.ReadAll(ctx, b, key); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want the %d put", key, len(got), err, len(want))
		}
	}
}
