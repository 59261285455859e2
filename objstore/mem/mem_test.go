package mem_test

import (
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/objstoretest"
)

func TestAcceptance(t *testing.T) {
	objstoretest.RunBucketTests(t, objstoretest.Config{
		New: func(*testing.T) objstore.Bucket { return mem.New() },
	})
}

func BenchmarkMem(b *testing.B) {
	objstoretest.RunBenchmarks(b, func(testing.TB) objstore.Bucket { return mem.New() })
}
