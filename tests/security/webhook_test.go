package security

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/notification"

	"github.com/medallion-lake/medallion/bronze/watch"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

const webhookToken = "h23-webhook-token-0123456789abcdef"

func postEvents(t *testing.T, url, auth string, keys ...string) int {
	t.Helper()
	var recs []string
	for _, k := range keys {
		recs = append(recs, fmt.Sprintf(`{"eventName":"s3:ObjectCreated:Put","s3":{"bucket":{"name":"lake"},"object":{"key":%q,"size":1}}}`, k))
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"Records":[`+strings.Join(recs, ",")+`]}`))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestWebhookUnauthenticatedRefused runs the real serve with event-driven ingestion: requests
// without the token or with a wrong one get 401 and ingest nothing, a flood of them gets 429,
// a batch holding one bad key still has its good key ingested, and serve refuses to start on a
// non-loopback address without a token. Before, POST /s3-events accepted anything with 204.
func TestWebhookUnauthenticatedRefused(t *testing.T) {
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	lake := filepath.Join(dir, "lake")
	landing := filepath.Join(lake, "landing/events")
	if err := os.MkdirAll(landing, 0o755); err != nil {
		t.Fatal(err)
	}
	line := func(id string) []byte {
		return []byte(`{"event_id":"` + id + `","event_type":"x","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n")
	}
	cfg := lakecheck.WriteConfig(t, dir, lake, "")

	// No token, reachable from other hosts: refuse to start, naming the variable to set.
	r, err := lakecheck.Run(context.Background(), bin, nil, "serve", "--config", cfg,
		"--set", "landing.notify.mode=webhook", "--set", "serve.listen=0.0.0.0:0")
	if err != nil || r.Code == 0 || !strings.Contains(r.Stderr, "MEDALLION_WEBHOOK_TOKEN") {
		t.Fatalf("serve on 0.0.0.0 without a token: exit %d, %v, want a refusal naming MEDALLION_WEBHOOK_TOKEN:\n%s", r.Code, err, r.Stderr)
	}

	addr := freeAddr(t)
	stop := runServe(t, bin, cfg, []string{"MEDALLION_WEBHOOK_TOKEN=" + webhookToken},
		"--set", "landing.notify.mode=webhook", "--set", "landing.notify.reconcile=1h", "--set", "serve.listen="+addr)
	waitHealthy(t, addr, stop)
	// serve ingests what landed before it started, once; the objects land after that run, so
	// only an event can bring them in.
	waitStartIngest(t, addr, stop)
	for _, name := range []string{"planted.json", "good.json"} {
		if err := os.WriteFile(filepath.Join(landing, name), line(strings.TrimSuffix(name, ".json")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url := "http://" + addr + "/s3-events"
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + webhookToken[:len(webhookToken)-1]} {
		if code := postEvents(t, url, auth, "landing/events/planted.json"); code != http.StatusUnauthorized {
			t.Fatalf("Authorization %q: %d, want 401", auth, code)
		}
	}
	limited := 0
	for i := 0; i < 200; i++ {
		if postEvents(t, url, "Bearer nope", "landing/events/planted.json") == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("200 unauthenticated requests in a row were never rate-limited")
	}
	// One bad key (does not URL-decode) and one that breaks the key rules, beside a good one.
	if code := postEvents(t, url, "Bearer "+webhookToken, "landing/events/%zz.json", "landing/events/a/../b.json", "landing/events/good.json"); code != http.StatusNoContent {
		t.Fatalf("authenticated batch: %d, want 204", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		bronze := ""
		if _, err := os.Stat(filepath.Join(lake, "bronze/events/_delta_log")); err == nil {
			bronze = tableText(t, lake, "bronze/events")
		}
		if strings.Contains(bronze, `"good"`) {
			if strings.Contains(bronze, `"planted"`) {
				t.Fatalf("an unauthenticated event was ingested:\n%s", bronze)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the good key of a batch with bad keys was not ingested within 20 s:\n%s\n%s", bronze, stop())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out := stop(); strings.Contains(out, webhookToken) {
		t.Fatal("serve printed the webhook token")
	}
}

// TestForeignNotificationRuleKept (real MinIO): another team's notification rule on the lake's
// bucket survives serve subscribing the bucket to our webhook. Before, serve replaced the
// bucket's whole notification configuration.
func TestForeignNotificationRuleKept(t *testing.T) {
	cfg, ok := s3test.Config(t)
	if !ok {
		t.Skipf("no S3 test server: set %s (run `make test`)", s3test.EndpointEnv)
	}
	b := s3test.NewTestBucket(t)
	ctx := context.Background()
	m := watch.MinIO{Endpoint: cfg.Endpoint, AccessKeyID: os.Getenv("AWS_ACCESS_KEY_ID"), SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY")}
	// The other team's rule: the OTHERTEAM target of scripts/minio.sh, for its own prefix.
	const other = "arn:minio:sqs::OTHERTEAM:webhook"
	if err := watch.Subscribe(ctx, m, b.Name(), "reports/", other); err != nil {
		t.Fatalf("set another team's rule (is MinIO started by scripts/minio.sh?): %v", err)
	}
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	c := lakecheck.WriteConfig(t, dir, "s3://"+b.Name()+"/lake", "s3: {endpoint: \""+cfg.Endpoint+"\", region: us-east-1, path_style: true}\n")
	addr := freeAddr(t)
	stop := runServe(t, bin, c, []string{"MEDALLION_WEBHOOK_TOKEN=" + webhookToken},
		"--set", "landing.notify.mode=webhook", "--set", "serve.listen="+addr)
	waitHealthy(t, addr, stop)
	u := strings.TrimPrefix(strings.TrimPrefix(cfg.Endpoint, "http://"), "https://")
	client, err := minio.New(u, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKeyID, m.SecretAccessKey, ""), Secure: strings.HasPrefix(cfg.Endpoint, "https://")})
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := client.GetBucketNotification(ctx, b.Name())
		if err != nil {
			t.Fatal(err)
		}
		rules = rules[:0]
		for _, q := range nc.QueueConfigs {
			rules = append(rules, q.Queue+" "+prefixOf(q.Config))
		}
		if len(rules) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rules %v 10 s after serve started, want the other team's and ours\n%s", rules, stop())
		}
		time.Sleep(100 * time.Millisecond)
	}
	got := strings.Join(rules, "; ")
	if !strings.Contains(got, other+" reports/") || !strings.Contains(got, "arn:minio:sqs::PRIMARY:webhook lake/landing/events/") {
		t.Fatalf("rules %q: want the other team's (reports/) and ours (lake/landing/events/)", got)
	}
	stop()
}

func prefixOf(c notification.Config) string {
	if c.Filter == nil {
		return ""
	}
	var b bytes.Buffer
	for _, r := range c.Filter.S3Key.FilterRules {
		if strings.EqualFold(r.Name, "prefix") {
			b.WriteString(r.Value)
		}
	}
	return b.String()
}

// waitStartIngest waits until serve's ingest at start has finished.
func waitStartIngest(t *testing.T, addr string, out func() string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			continue
		}
		var health struct {
			Jobs []struct {
				Name    string `json:"name"`
				Running bool   `json:"running"`
				Runs    int64  `json:"runs"`
			} `json:"jobs"`
		}
		err = json.NewDecoder(resp.Body).Decode(&health)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("/healthz: %v", err)
		}
		for _, j := range health.Jobs {
			if j.Name == "ingest" && j.Runs >= 1 && !j.Running {
				return
			}
		}
	}
	t.Fatalf("serve's ingest at start did not finish within 30 s:\n%s", out())
}
