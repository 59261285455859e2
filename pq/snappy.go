package pq

import (
	"github.com/klauspost/compress/s2"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/format"
)

// fastSnappy is Parquet's SNAPPY codec with the plain snappy block encoder. parquet-go's own
// codec uses the "better" encoder, which costs about twice the CPU for a few percent smaller
// pages; on the write path Parquet compression is the largest single cost, and every snappy
// decoder reads both outputs alike (they are the same block format).
type fastSnappy struct{}

var _ compress.Codec = fastSnappy{}

func (fastSnappy) String() string                            { return "SNAPPY" }
func (fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }

func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}

// Decode reads snappy blocks (s2's decoder reads the snappy format, a subset of its own).
func (fastSnappy) Decode(dst, src []byte) ([]byte, error) {
	return s2.Decode(dst, src)
}
