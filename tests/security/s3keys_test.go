package security

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/tests/crash/lakecheck"
)

// TestHostileS3LandingKeys lands objects whose keys an S3 bucket accepts but a file system
// would not (".." segments, empty segments, a leading slash, unicode, spaces, control-free
// oddities) next to a normal object: ingest must not stall on them; every line is accounted for
// in bronze or rejects, under the key it came from.
func TestHostileS3LandingKeys(t *testing.T) {
	cfg, ok := s3test.Config(t)
	if !ok {
		t.Skipf("no S3 test server: set %s (run `make test`)", s3test.EndpointEnv)
	}
	ctx := context.Background()
	client, err := s3.NewClient(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	bucket := "medallion-h10-keys-" + hex.EncodeToString(rnd[:])
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &bucket}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, err := client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &bucket})
		if err == nil {
			for _, o := range out.Contents {
				_, _ = client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &bucket, Key: o.Key})
			}
		}
		_, _ = client.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: &bucket})
	})
	line := func(id string) []byte {
		return []byte(`{"event_id":"` + id + `","event_type":"x","amount":1,"event_time":"2026-01-10T12:00:00Z"}` + "\n")
	}
	keys := []string{
		"lake/landing/events/a/../../../escape.json",
		"lake/landing/events/b//empty-segment.json",
		"lake/landing/events/c/./dot.json",
		"lake/landing/events/d with space ünï ☃.json",
		"lake/landing/events/e%2e%2e/percent.json",
		"lake/landing/events/f\\back\\slash.json",
	}
	accepted := map[string]string{}
	for i, k := range keys {
		id := "k" + string(rune('0'+i))
		if _, err := client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &bucket, Key: aws.String(k), Body: bytes.NewReader(line(id))}); err != nil {
			t.Logf("MinIO refuses key %q: %v", k, err)
			continue
		}
		accepted[k] = id
	}
	if _, err := client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &bucket, Key: aws.String("lake/landing/events/z-normal.json"), Body: bytes.NewReader(line("normal"))}); err != nil {
		t.Fatal(err)
	}
	bin := lakecheck.Binary(t)
	dir := t.TempDir()
	c := lakecheck.WriteConfig(t, dir, "s3://"+bucket+"/lake", "s3: {endpoint: \""+cfg.Endpoint+"\", region: us-east-1, path_style: true}\n")
	r, err := lakecheck.Run(ctx, bin, nil, "run", "ingest", "--config", c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != 0 {
		t.Fatalf("ingest stalls on hostile landing keys (exit %d): one bad name must not block the landing prefix\n%s", r.Code, r.Stderr)
	}
	open := func(tbl string) string {
		cc := cfg
		cc.Bucket, cc.Prefix = bucket, "lake/"+tbl+"/"
		b, err := s3.New(ctx, cc)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := lakecheck.Rows(ctx, b)
		if err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		return strings.Join(rows, "\n")
	}
	bronze, rejects := open("bronze/events"), open("bronze/rejects")
	if !strings.Contains(bronze, `"normal"`) {
		t.Errorf("the normal object was not ingested next to the hostile ones")
	}
	for k, id := range accepted {
		if !strings.Contains(bronze, `"`+id+`"`) && !strings.Contains(rejects, filepath.Base(k)) {
			t.Errorf("object %q is neither in bronze nor rejected with a reason", k)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.json")); err == nil {
		t.Error("a landing key was written to the local disk")
	}
	t.Logf("%d hostile keys accepted by MinIO, all accounted for", len(accepted))
}
