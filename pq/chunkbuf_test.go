package pq

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// TestChunkBuffer writes random-sized pieces and reads them back whole, in random-sized reads
// and after seeks, against a plain byte slice.
func TestChunkBuffer(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, total := range []int{0, 1, minChunk - 1, minChunk, 3*minChunk + 17, 2*maxChunk + 5} {
		var c chunkBuffer
		want := make([]byte, 0, total)
		for len(want) < total {
			p := make([]byte, min(total-len(want), 1+rng.IntN(100_000)))
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			if n, err := c.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write: %d %v", n, err)
			}
			want = append(want, p...)
		}
		if c.Len() != int64(total) || !bytes.Equal(c.Bytes(), want) {
			t.Fatalf("%d bytes: Len %d, Bytes differ: %v", total, c.Len(), !bytes.Equal(c.Bytes(), want))
		}
		r := c.Reader()
		got, err := io.ReadAll(io.LimitReader(r, int64(total)+1))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: ReadAll: %v, equal %v", total, err, bytes.Equal(got, want))
		}
		if total == 0 {
			continue
		}
		for range 20 {
			off := rng.Int64N(int64(total))
			if pos, err := r.Seek(off, io.SeekStart); pos != off || err != nil {
				t.Fatalf("Seek(%d): %d %v", off, pos, err)
			}
			buf := make([]byte, 1+rng.IntN(3*minChunk))
			n, _ := io.ReadFull(r, buf)
			if !bytes.Equal(buf[:n], want[off:off+int64(n)]) || int64(n) != min(int64(len(buf)), int64(total)-off) {
				t.Fatalf("%d bytes: read %d at %d differs", total, n, off)
			}
		}
		if pos, err := r.Seek(-1, io.SeekEnd); pos != int64(total)-1 || err != nil {
			t.Fatalf("Seek from end: %d %v", pos, err)
		}
		if _, err := r.Seek(-1, io.SeekStart); err == nil {
			t.Fatal("a negative position was accepted")
		}
	}
}

// writeFunc is an io.Writer made of a function.
type writeFunc func(p []byte) (int, error)

func (f writeFunc) Write(p []byte) (int, error) { return f(p) }

// TestChunkReaderWriteTo: after a seek, WriteTo writes the rest of the contents, one write a
// chunk (the first from the seek's offset), which is how the file backend stores a data file
// without copying it; io.Copy then uses it.
func TestChunkReaderWriteTo(t *testing.T) {
	var c chunkBuffer
	want := make([]byte, 3*minChunk+17)
	for i := range want {
		want[i] = byte(i * 7)
	}
	for p := want; len(p) > 0; p = p[min(len(p), 1000):] {
		_, _ = c.Write(p[:min(len(p), 1000)])
	}
	r := c.Reader()
	const off = minChunk + 5
	if _, err := r.Seek(off, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	var got []byte
	var sizes []int
	w := writeFunc(func(p []byte) (int, error) {
		got, sizes = append(got, p...), append(sizes, len(p))
		return len(p), nil
	})
	n, err := io.Copy(w, r)
	if err != nil || n != int64(len(want)-off) || !bytes.Equal(got, want[off:]) {
		t.Fatalf("io.Copy after Seek(%d): %d bytes, %v, equal %v", off, n, err, bytes.Equal(got, want[off:]))
	}
	if len(sizes) != len(c.chunks)-1 || sizes[0] != len(c.chunks[1])-5 {
		t.Errorf("writes %v for chunks of %d bytes, want one a chunk from chunk 1", sizes, len(c.chunks[0]))
	}
	if n, err := r.(io.WriterTo).WriteTo(w); n != 0 || err != nil {
		t.Errorf("WriteTo at the end: %d, %v", n, err)
	}
}
