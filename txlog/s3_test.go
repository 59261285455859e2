package txlog

import (
	"testing"

	"github.com/medallion-lake/medallion/objstore/s3/s3test"
)

// The commit protocol against a real S3 server (MinIO, If-None-Match: *). Skipped without one
// unless MEDALLION_REQUIRE_S3=1; `make test` starts it.

func TestConcurrentBlindAppendsS3(t *testing.T) {
	concurrentBlindAppends(t, s3test.NewTestBucket(t), 8, perWriter())
}

func TestConcurrentReadModifyWriteS3(t *testing.T) {
	concurrentReadModifyWrite(t, s3test.NewTestBucket(t))
}

func TestFixtureSnapshotS3(t *testing.T) {
	b := s3test.NewTestBucket(t)
	copyInto(t, b, "delta-golden/checkpoint")
	checkSnapshot(t, mustSnapshot(t, New(b, Options{})), fixtureWants[0])
}
