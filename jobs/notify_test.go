package jobs

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

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
	time.Sleep(300 * time.Millisecond) // let the subscription land

	line := `{"event_id":"%s","event_type":"a","amount":1,"event_time":"2024-05-01T12:00:00Z"}` + "\n"
	put := time.Now()
	for i, key := range []string{"landing/events/one.json", "landing/events/with space.json", "elsewhere/ignored.json"} {
		if err := objstore.PutBytes(ctx, env.Lake, key, []byte(strings.Repeat(fmt.Sprintf(line, key), i+1))); err != nil {
			t.Fatal(err)
		}
	}
	bronze := table.Open(objstore.WithPrefix(env.Lake, cfg.Tables.Bronze))
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
