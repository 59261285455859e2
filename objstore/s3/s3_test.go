package s3_test

import (
	"context"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/objstoretest"
	"github.com/medallion-lake/medallion/objstore/s3"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

func TestAcceptance(t *testing.T) {
	objstoretest.RunBucketTests(t, objstoretest.Config{
		New: func(t *testing.T) objstore.Bucket { return s3test.NewTestBucket(t) },
	})
}

// BenchmarkS3 runs against the MinIO test server (skipped without one).
func BenchmarkS3(b *testing.B) {
	objstoretest.RunBenchmarks(b, func(tb testing.TB) objstore.Bucket { return s3test.NewTestBucket(tb) })
}

// TestAcceptancePrefixed runs the suite on a bucket rooted at a prefix by Config.Prefix, the
// way bucketurl opens s3://bucket/prefix.
func TestAcceptancePrefixed(t *testing.T) {
	objstoretest.RunBucketTests(t, objstoretest.Config{
		New: func(t *testing.T) objstore.Bucket {
			base := s3test.NewTestBucket(t)
			cfg, _ := s3test.Config(t)
			cfg.Bucket = base.Name()
			cfg.Prefix = "lake/tables/"
			b, err := s3.New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A neighbour outside the prefix must stay invisible.
			if err := objstore.PutBytes(context.Background(), base, "lake/tablesX/a", []byte("x")); err != nil {
				t.Fatal(err)
			}
			return b
		},
	})
}

func TestProbePutIfAbsentOnMinIO(t *testing.T) {
	if err := objstore.ProbePutIfAbsent(context.Background(), s3test.NewTestBucket(t), "_delta_log"); err != nil {
		t.Errorf("MinIO failed the put-if-absent probe: %v", err)
	}
}
