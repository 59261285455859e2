package file

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"testing"
)

// writeSizes records the sizes of the writes it gets.
type writeSizes struct {
	bytes.Buffer
	sizes []int
}

func (w *writeSizes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// pipeBody is a state file's body: a pipe written in chunks of chunk bytes.
func pipeBody(data []byte, chunk int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		for p := data; len(p) > 0; p = p[min(len(p), chunk):] {
			if _, err := pw.Write(p[:min(len(p), chunk)]); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr
}

// TestCopyBodyPieces: a piped body reaches the file in the writer's chunks, up to copyBuffer
// (io.Copy into an os.File took 32 KiB pieces, a write(2) and a pipe hand-off each), and a
// body that writes itself out (bytes.Reader) in one write.
func TestCopyBodyPieces(t *testing.T) {
	data := make([]byte, 3*copyBuffer+100)
	for i := range data {
		data[i] = byte(i * 13)
	}
	var w writeSizes
	n, err := copyBody(context.Background(), &w, pipeBody(data, copyBuffer))
	if err != nil || n != int64(len(data)) || !bytes.Equal(w.Bytes(), data) {
		t.Fatalf("piped: %d bytes, %v, equal %v", n, err, bytes.Equal(w.Bytes(), data))
	}
	if want := []int{copyBuffer, copyBuffer, copyBuffer, 100}; !slices.Equal(w.sizes, want) {
		t.Errorf("piped writes %v, want %v", w.sizes, want)
	}
	w = writeSizes{}
	if n, err := copyBody(context.Background(), &w, bytes.NewReader(data)); err != nil || n != int64(len(data)) || len(w.sizes) != 1 {
		t.Errorf("bytes.Reader: %d bytes, %v, writes %v; want one write", n, err, w.sizes)
	}
}

// TestCopyBodyStopsWithContext: a copy stops at its next write once the context ends.
func TestCopyBodyStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var w writeSizes
	for _, r := range []io.Reader{pipeBody(make([]byte, 1000), 100), bytes.NewReader(make([]byte, 1000))} {
		if _, err := copyBody(ctx, &w, r); !errors.Is(err, context.Canceled) || w.Len() != 0 {
			t.Errorf("%T: %v with %d bytes written, want context.Canceled and none", r, err, w.Len())
		}
	}
}

// BenchmarkPutPiped stores a 16 MiB body that comes through a pipe in 256 KiB chunks, as a
// stream's state file does.
func BenchmarkPutPiped(b *testing.B) {
	bk, err := New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer bk.Close()
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i * 13)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := bk.Put(context.Background(), "state/1", pipeBody(data, 256<<10), int64(len(data))); err != nil {
			b.Fatal(err)
		}
	}
}
