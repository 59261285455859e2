package pq

import (
	"errors"
	"io"
)

// chunkBuffer collects a data file in memory before its upload in chunks that are never
// moved: a doubling bytes.Buffer copies a file about twice over as it grows, and those
// copies were a tenth of the stream's allocations.
type chunkBuffer struct {
	chunks [][]byte
	size   int64
}

const (
	minChunk = 64 << 10
	maxChunk = 8 << 20
)

func (c *chunkBuffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(c.chunks) == 0 || len(c.chunks[len(c.chunks)-1]) == cap(c.chunks[len(c.chunks)-1]) {
			// Each chunk about the size of what came before: few chunks, little slack.
			c.chunks = append(c.chunks, make([]byte, 0, min(max(c.size, minChunk), maxChunk)))
		}
		last := &c.chunks[len(c.chunks)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
		c.size += int64(k)
	}
	return n, nil
}

// Len is the number of bytes written.
func (c *chunkBuffer) Len() int64 { return c.size }

// Bytes returns the contents as one slice (a copy unless there is a single chunk).
func (c *chunkBuffer) Bytes() []byte {
	if len(c.chunks) == 1 {
		return c.chunks[0]
	}
	out := make([]byte, 0, c.size)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}

// Reader reads the contents; it seeks, so an S3 upload can sign and retry it without a copy.
func (c *chunkBuffer) Reader() io.ReadSeeker { return &chunkReader{c: c} }

type chunkReader struct {
	c   *chunkBuffer
	off int64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.off >= r.c.size {
		return 0, io.EOF
	}
	n := 0
	pos := int64(0)
	for _, ch := range r.c.chunks {
		end := pos + int64(len(ch))
		if r.off < end && n < len(p) {
			k := copy(p[n:], ch[r.off-pos:])
			n += k
			r.off += int64(k)
		}
		pos = end
		if n == len(p) {
			break
		}
	}
	return n, nil
}

// WriteTo writes the rest of the contents to w a chunk at a time, with no copy: the file
// backend stores an encoded data file with a write(2) a chunk.
func (r *chunkReader) WriteTo(w io.Writer) (int64, error) {
	var total int64
	pos := int64(0)
	for _, ch := range r.c.chunks {
		end := pos + int64(len(ch))
		if r.off < end {
			k, err := w.Write(ch[r.off-pos:])
			total += int64(k)
			r.off += int64(k)
			if err != nil {
				return total, err
			}
		}
		pos = end
	}
	return total, nil
}

func (r *chunkReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.c.size
	default:
		return 0, errors.New("table: chunk reader: invalid whence")
	}
	if offset < 0 {
		return 0, errors.New("table: chunk reader: negative position")
	}
	r.off = offset
	return offset, nil
}
