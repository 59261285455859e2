package s3

import (
	"bytes"
	"io"
	"testing"
)

func TestPlainLoopback(t *testing.T) {
	for endpoint, want := range map[string]bool{
		"http://127.0.0.1:9000":      true,
		"http://localhost:9000":      true,
		"http://[::1]:9000":          true,
		"https://127.0.0.1:9000":     false, // TLS: the SDK sends unsigned bodies by itself
		"http://minio:9000":          false, // across a network: keep the body's hash
		"http://10.0.0.5:9000":       false,
		"":                           false, // AWS
		"https://s3.eu-west-1.aws.x": false,
	} {
		if got := plainLoopback(endpoint); got != want {
			t.Errorf("plainLoopback(%q) = %v, want %v", endpoint, got, want)
		}
	}
}

func TestReadExactly(t *testing.T) {
	body := bytes.Repeat([]byte("abc"), 1000)
	// A reader that hides its length and gives a few bytes a call, as a pipe does.
	pipeLike := func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b[:7]), bytes.NewReader(b[7:])) }
	got, err := readExactly(pipeLike(body), int64(len(body)))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("readExactly = %d bytes, %v; want the %d given", len(got), err, len(body))
	}
	if _, err := readExactly(pipeLike(body), int64(len(body))+1); err == nil {
		t.Error("readExactly of a body shorter than announced succeeded")
	}
	if _, err := readExactly(pipeLike(body), int64(len(body))-1); err == nil {
		t.Error("readExactly of a body longer than announced succeeded")
	}
	if got, err := readExactly(bytes.NewReader(nil), 0); err != nil || len(got) != 0 {
		t.Errorf("readExactly of an empty body = %d bytes, %v", len(got), err)
	}
}

// BenchmarkReadBody is the buffering of a 24 MB body of known size that cannot seek (a
// stream's state file, written through a pipe): readExactly against readPart, which
// put used before.
func BenchmarkReadBody(b *testing.B) {
	body := bytes.Repeat([]byte("0123456789abcdef"), (24<<20)/16)
	for _, bc := range []struct {
		name string
		read func(io.Reader) ([]byte, error)
	}{
		{"exact", func(r io.Reader) ([]byte, error) { return readExactly(r, int64(len(body))) }},
		{"part", func(r io.Reader) ([]byte, error) { return readPart(r, DefaultPartSize*2) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := bc.read(io.MultiReader(bytes.NewReader(body))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
