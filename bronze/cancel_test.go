package bronze

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"testing"
)

// patternReader serves total bytes, prefix then line repeated, and cancels its context once it has
// served cancelAfter bytes: a signal arriving in the middle of an object.
type patternReader struct {
	prefix      []byte
	line        []byte
	total       int64
	served      int64
	cancelAfter int64
	cancel      context.CancelFunc
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.served >= p.total {
		return 0, io.EOF
	}
	if int64(len(b)) > p.total-p.served {
		b = b[:p.total-p.served]
	}
	for i := range b {
		at := p.served + int64(i)
		if at < int64(len(p.prefix)) {
			b[i] = p.prefix[at]
		} else {
			b[i] = p.line[(at-int64(len(p.prefix)))%int64(len(p.line))]
		}
	}
	p.served += int64(len(b))
	if p.served >= p.cancelAfter {
		p.cancel()
	}
	return len(b), nil
}

// TestDecodeStopsOnCancelWithinBytes: the context used to be checked every 1,024 lines only, so
// one huge line (or a few hundred long ones) was read to its end after a signal. Now decoding
// returns the context's error having read little more than it had when the signal came.
func TestDecodeStopsOnCancelWithinBytes(t *testing.T) {
	const total = 256 << 20
	hugeLine := bytes.Repeat([]byte("x"), 64<<10) // no newline at all: one 256 MiB line
	longLine := append(bytes.Repeat([]byte("y"), 512<<10-1), '\n')
	for _, tc := range []struct {
		name, key, format string
		prefix, line      []byte
	}{
		{"one huge line", "huge.json", FormatJSON, nil, hugeLine},
		{"many long lines", "long.json", FormatJSON, nil, longLine},
		// A header, then one quoted field that never closes.
		{"one huge CSV record", "huge.csv", FormatCSV, []byte("event_id\n\""), hugeLine},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &patternReader{prefix: tc.prefix, line: tc.line, total: total, cancelAfter: 4 << 20, cancel: cancel}
			d, _ := NewDecoder(declaredEvents(), Limits{})
			_, err := d.Decode(ctx, r, tc.key, tc.format, 0)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v, want context.Canceled", err)
			}
			if r.served > 8<<20 {
				t.Fatalf("read %d of %d bytes after a cancellation at 4 MiB", r.served, int64(total))
			}
		})
	}
}

// TestDecodeStopsOnCancelInGzip: the same for a compressed object, where a few KiB of input
// inflate to many MiB of blank lines.
func TestDecodeStopsOnCancelInGzip(t *testing.T) {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	blank := bytes.Repeat([]byte("\n"), 1<<20)
	for range 256 {
		w.Write(blank)
	}
	w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cr := &cancelAfterReader{r: bytes.NewReader(buf.Bytes()), cancelAfter: int64(buf.Len()) / 64, cancel: cancel}
	d, _ := NewDecoder(declaredEvents(), Limits{})
	st, err := d.Decode(ctx, cr, "blank.json.gz", FormatJSON, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if st.Bytes > 64<<20 {
		t.Fatalf("decoded %d of %d bytes after a cancellation", st.Bytes, 256<<20)
	}
}

type cancelAfterReader struct {
	r           io.Reader
	served      int64
	cancelAfter int64
	cancel      context.CancelFunc
}

func (c *cancelAfterReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.served += int64(n)
	if c.served >= c.cancelAfter {
		c.cancel()
	}
	return n, err
}
