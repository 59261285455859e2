package lakecheck

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// TestBucket creates an empty bucket on the test MinIO and returns its name, the S3 settings
// and an opener for tables under it (lake prefix, table path); t.Cleanup empties and removes
// it. Without a test server it skips the test, or fails it when S3 is required.
func TestBucket(t testing.TB) (string, s3.Config, func(lake, table string) objstore.Bucket) {
	t.Helper()
	cfg, ok := s3test.Config(t)
	if !ok {
		t.Skipf("no S3 test server: set %s (run `make test`)", s3test.EndpointEnv)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	name := "medallion-h10-" + hex.EncodeToString(rnd[:])
	ctx := context.Background()
	client, err := s3.NewClient(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	t.Cleanup(func() {
		pages := awss3.NewListObjectsV2Paginator(client, &awss3.ListObjectsV2Input{Bucket: &name})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				return
			}
			for _, o := range page.Contents {
				_, _ = client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &name, Key: o.Key})
			}
		}
		_, _ = client.DeleteBucket(ctx, &awss3.DeleteBucketInput{Bucket: aws.String(name)})
	})
	open := func(lake, table string) objstore.Bucket {
		c := cfg
		c.Bucket = name
		c.Prefix = lake + "/" + table + "/"
		b, err := s3.New(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return name, cfg, open
}
