package s3_test

import (
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/objstoretest"
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
