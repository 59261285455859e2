package jobs

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/medallion-lake/medallion/config"
	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/table"
)

// TestWebhookIngestOnMinIO: serve subscribes the bucket to MinIO's webhook target, receives the
// events of new landing objects and ingests them without listing (the reconciling listing is an
// hour away), exactly once.
func TestWebhookIngestOnMinIO(t *testing.T) {
	addr := os.Getenv("MEDALLION_TEST_WEBHOOK_ADDR")
	bucket := s3test.NewTestBucket(t) // fails or skips like every S3 test when MinIO is absent
	if addr == "" {
		t.Fatal("MEDALLION_TEST_WEBHOOK_ADDR is not set: start MinIO with scripts/minio.sh, which configures the webhook target")
	}
	cfg := testPipeline(t, "s3://"+bucket.Name()+"/lake", fmt.Sprintf(`
s3: {endpoint: %s, path_style: true}
jobs: {}
`, os.Getenv("MEDALLION_TEST_S3_ENDPOINT")))
	cfg.ApplyEnv(os.LookupEnv) // the test server's credentials, as Load would read them
	cfg.Landing.Notify.Mode = "webhook"
	cfg.Landing.Notify.Reconcile.Duration = time.Hour
	// MinIO's target sends this token (scripts/minio.sh): events reach ingest only with it.
	cfg.Landing.Notify.Token = config.WebhookToken(os.Getenv("MEDALLION_TEST_WEBHOOK_TOKEN"))
	if cfg.Landing.Notify.Token == "" {
		t.Fatal("MEDALLION_TEST_WEBHOOK_TOKEN is not set: start MinIO with scripts/minio.sh, which configures the webhook token")
	}
	cfg.Serve.Listen = addr
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := NewEnv(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(env)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	defer func() { cancel(); <-done }()
	// MinIO's webhook target (no queue dir) may drop an event the webhook does not answer: wait
	// until the server answers instead of a fixed 300 ms sleep, which a loaded machine can outlast.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never answered on %s", addr)
		}
	}

	line := `{"event_id":"%s","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}` + "\n"
	put := time.Now()
	for i, key := range []string{"landing/events/one.json", "landing/events/with space.json", "elsewhere/ignored.json"} {
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(strings.Repeat(fmt.Sprintf(line, key), i+1))); err != nil {
			t.Fatal(err)
		}
	}
	bronze := table.Open(objstore.WithPrefix(env.Lake, cfg.Tables.Bronze), table.Options{})
	for {
		rows := 0
		for b, err := range bronze.Scan(ctx, table.ScanOptions{Columns: []string{"event_id"}}) {
			if err != nil {
				break // the table may not exist yet
			}
			rows += b.Len()
		}
		if rows == 3 {
			t.Logf("3 rows in bronze %v after the puts", time.Since(put))
			break
		}
		if rows > 3 {
			t.Fatalf("%d rows: an object was ingested twice or a non-landing object was read", rows)
		}
		if time.Since(put) > 15*time.Second {
			t.Fatalf("only %d of 3 rows ingested 15 s after the puts: notifications did not arrive", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// webhookEnv is an Env for a webhook on a file lake, with the given token and listen address.
func webhookEnv(t *testing.T, token, listen string, allow bool) Env {
	t.Helper()
	cfg := testPipeline(t, t.TempDir(), "jobs: {}\n")
	cfg.Landing.Notify.Mode = "webhook"
	cfg.Landing.Notify.Token = config.WebhookToken(token)
	cfg.Landing.Notify.AllowUnauthenticated = allow
	cfg.Serve.Listen = listen
	env, err := NewEnv(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func postEvent(h http.Handler, auth, body string) int {
	req := httptest.NewRequest(http.MethodPost, "/s3-events", strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func eventBody(keys ...string) string {
	var recs []string
	for _, k := range keys {
		recs = append(recs, fmt.Sprintf(`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":%q,"size":1}}}`, k))
	}
	return `{"Records":[` + strings.Join(recs, ",") + `]}`
}

// TestWebhookRequiresToken: with MEDALLION_WEBHOOK_TOKEN set, a request without the bearer
// token, or with a wrong one (even one that shares its prefix), is refused with 401 and queues
// nothing; the right token is accepted. Before, anything was accepted with 204.
func TestWebhookRequiresToken(t *testing.T) {
	const token = "0123456789abcdef-secret"
	env := webhookEnv(t, token, "127.0.0.1:0", false)
	n, err := newNotifier(env, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	body := eventBody("landing/events/a.json")
	for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer wrong", "Bearer " + token[:len(token)-1], "Bearer " + token + "x", "Basic " + token, "Basic " + base64.StdEncoding.EncodeToString([]byte("medallion:wrong")), token} {
		if code := postEvent(n, auth, body); code != http.StatusUnauthorized {
			t.Errorf("Authorization %q: status %d, want 401", auth, code)
		}
	}
	if len(n.pending) != 0 {
		t.Fatalf("unauthenticated requests queued %v", n.pending)
	}
	if code := postEvent(n, "Bearer "+token, body); code != http.StatusNoContent {
		t.Fatalf("right token: status %d, want 204", code)
	}
	if code := postEvent(n, "bearer "+token, eventBody("landing/events/b.json")); code != http.StatusNoContent {
		t.Fatalf("scheme is case-insensitive (RFC 9110): status %d", code)
	}
	// SNS's HTTPS delivery: the token as the password of Basic authentication.
	if code := postEvent(n, "Basic "+base64.StdEncoding.EncodeToString([]byte("medallion:"+token)), eventBody("landing/events/c.json")); code != http.StatusNoContent {
		t.Fatalf("token as the Basic password: status %d, want 204", code)
	}
	if !n.pending["landing/events/a.json"] || !n.pending["landing/events/b.json"] || !n.pending["landing/events/c.json"] {
		t.Fatalf("pending %v, want a.json, b.json and c.json", n.pending)
	}
}

// TestWebhookRateLimited: past its budget, a flood of unauthenticated requests gets 429, and
// authenticated requests still get through.
func TestWebhookRateLimited(t *testing.T) {
	const token = "0123456789abcdef-secret"
	env := webhookEnv(t, token, "127.0.0.1:0", false)
	frozen := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	env.Clock = func() time.Time { return frozen } // no refill between requests, however slow
	n, err := newNotifier(env, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	limited := 0
	for i := 0; i < 5*webhookRejectBurst; i++ {
		if postEvent(n, "Bearer nope", eventBody("landing/events/x.json")) == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatalf("%d bad requests in a row were never limited", 5*webhookRejectBurst)
	}
	if code := postEvent(n, "Bearer "+token, eventBody("landing/events/a.json")); code != http.StatusNoContent {
		t.Fatalf("an authenticated request during a flood of bad ones: %d, want 204", code)
	}
	limited = 0
	for i := 0; i < 2*webhookBurst; i++ {
		if postEvent(n, "Bearer "+token, eventBody("landing/events/a.json")) == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatalf("%d authenticated requests in a row were never limited", 2*webhookBurst)
	}
}

// TestWebhookBadKeyDoesNotHoldBackBatch: a record whose key does not decode, or breaks the key
// rules, is skipped; the valid keys of the same notification are queued. Before, the whole
// notification was refused with 400.
func TestWebhookBadKeyDoesNotHoldBackBatch(t *testing.T) {
	n, err := newNotifier(webhookEnv(t, "", "127.0.0.1:0", false), nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	body := eventBody("landing/events/good-1.json", "landing/events/%zz.json", "landing/events/../x.json", "landing/events//y.json", "landing/events/good-2.json")
	if code := postEvent(n, "", body); code != http.StatusNoContent {
		t.Fatalf("status %d, want 204", code)
	}
	want := map[string]bool{"landing/events/good-1.json": true, "landing/events/good-2.json": true}
	if !maps.Equal(n.pending, want) {
		t.Fatalf("queued %v, want %v", n.pending, want)
	}
}

// TestServeRefusesUnauthenticatedWebhook: serve with the webhook on an address other hosts can
// reach and no token refuses to start, naming what to set; a token, loopback, or the explicit
// opt-out let it start.
func TestServeRefusesUnauthenticatedWebhook(t *testing.T) {
	for _, tc := range []struct {
		token, listen string
		allow, ok     bool
	}{
		{"", "0.0.0.0:0", false, false},
		{"", ":0", false, false},
		{"short", "0.0.0.0:0", false, false},
		{"", "127.0.0.1:0", false, true},
		{"", "[::1]:0", false, true},
		{"", "0.0.0.0:0", true, true},
		{"0123456789abcdef-secret", "0.0.0.0:0", false, true},
	} {
		srv, err := NewServer(webhookEnv(t, tc.token, tc.listen, tc.allow))
		if tc.ok {
			if err != nil {
				t.Errorf("%+v: %v", tc, err)
				continue
			}
			srv.listener.Close()
			continue
		}
		if !errors.Is(err, ErrWebhookUnauthenticated) || !strings.Contains(err.Error(), WebhookTokenEnv) {
			t.Errorf("%+v: got %v, want ErrWebhookUnauthenticated naming %s", tc, err, WebhookTokenEnv)
		}
	}
}
