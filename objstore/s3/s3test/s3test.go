// Package s3test gives every package's tests a real, empty S3 bucket on the MinIO server the
// test harness starts (`make test`, or `eval $(scripts/minio.sh start)`).
//
// NewTestBucket creates a bucket with a unique name and, in t.Cleanup, deletes its objects and
// the bucket. A test killed before cleanup leaves a "medallion-test-*" bucket behind on the
// throwaway server; nothing else is touched.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/medallion-lake/medallion/objstore/s3"
)

// EndpointEnv names the variable holding the test server's URL.
const EndpointEnv = "MEDALLION_TEST_S3_ENDPOINT"

// RequireEnv, set to 1, turns a missing endpoint into a failure (CI=true does the same).
const RequireEnv = "MEDALLION_REQUIRE_S3"

// Config returns the S3 settings for the test server and whether one is configured. It fails
// the test when none is configured but S3 is required.
func Config(t testing.TB) (s3.Config, bool) {
	t.Helper()
	endpoint := os.Getenv(EndpointEnv)
	if endpoint == "" {
		if os.Getenv(RequireEnv) == "1" || os.Getenv("CI") == "true" {
			t.Fatalf("S3 tests are required but %s is not set: run `make test`, or "+
				"`eval $(scripts/minio.sh start)` and re-run", EndpointEnv)
		}
		return s3.Config{}, false
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	return s3.Config{
		Endpoint:        endpoint,
		Region:          region,
		PathStyle:       true,
		AccessKeyID:     os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey: os.Getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken:    os.Getenv("AWS_SESSION_TOKEN"),
	}, true
}

// NewTestBucket returns an empty bucket on the test server, removed again in t.Cleanup. Without
// a server it skips the test, or fails it when S3 is required (MEDALLION_REQUIRE_S3=1 or CI=true).
func NewTestBucket(t testing.TB) *s3.Bucket {
	t.Helper()
	cfg, ok := Config(t)
	if !ok {
		t.Skipf("no S3 test server: set %s (run `make test`, or `eval $(scripts/minio.sh start)`)", EndpointEnv)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	cfg.Bucket = "medallion-test-" + hex.EncodeToString(rnd[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := s3.New(ctx, cfg)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	if _, err := b.Client().CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &cfg.Bucket}); err != nil {
		t.Fatalf("s3test: create bucket %s at %s: %v", cfg.Bucket, cfg.Endpoint, err)
	}
	t.Cleanup(func() { removeBucket(t, b.Client(), cfg.Bucket) })
	return b
}

func removeBucket(t testing.TB, client *awss3.Client, bucket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pages := awss3.NewListObjectsV2Paginator(client, &awss3.ListObjectsV2Input{Bucket: &bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Errorf("s3test: list %s for cleanup: %v", bucket, err)
			return
		}
		for _, o := range page.Contents {
			if _, err := client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &bucket, Key: o.Key}); err != nil {
				t.Errorf("s3test: delete %s/%s: %v", bucket, aws.ToString(o.Key), err)
			}
		}
	}
	uploads, err := client.ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: &bucket})
	if err == nil {
		for _, u := range uploads.Uploads {
			_, _ = client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &bucket, Key: u.Key, UploadId: u.UploadId})
		}
	}
	if _, err := client.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: &bucket}); err != nil {
		var nsb *types.NoSuchBucket
		if !errors.As(err, &nsb) {
			t.Errorf("s3test: delete bucket %s: %v", bucket, err)
		}
	}
}
