package table

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/medallion-lake/medallion/pq"
)

// tailBytes is how much of a data file's end a read loads first, in one ranged read: the
// footer's length, the footer and, for a file of one row group written by us, its bloom
// filters (written just before the footer). A file this small is read whole by it.
const tailBytes = 64 << 10

// FileTails keeps the ends of data files that scans loaded (the footer, and the bloom filters
// MayContain read), so that a caller opening the same files again and again asks the object
// store for them once: the stream's silver look-up opens the same silver files every batch,
// and on S3 every ranged read is a round trip (six of them a file a batch before, one now:
// the pages of the key column).
//
// A data file is never rewritten under its path (every Delta writer names a new file), and an
// entry is keyed by path and size, so a kept end is the file's. The cache holds at most its
// byte budget: it admits a file's end while there is room and drops what the caller says it
// no longer opens (Keep), rather than evicting the least recently used, which under a
// repeated sweep over more files than fit would keep none of them. Safe for concurrent use.
type FileTails struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	entries map[tailKey][]loadedSpan
}

type tailKey struct {
	path string
	size int64
}

// NewFileTails returns an empty cache that holds at most budget bytes of file ends.
func NewFileTails(budget int64) *FileTails {
	return &FileTails{budget: budget, entries: map[tailKey][]loadedSpan{}}
}

// Keep drops every entry whose path open does not report as still wanted.
func (t *FileTails) Keep(open func(path string) bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, spans := range t.entries {
		if !open(k.path) {
			t.used -= spansBytes(spans)
			delete(t.entries, k)
		}
	}
}

// Bytes returns the bytes the cache holds.
func (t *FileTails) Bytes() int64 {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.used
}

func (t *FileTails) get(path string, size int64) []loadedSpan {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.entries[tailKey{path, size}]
}

// put keeps spans as the file's end (replacing what was kept), when the budget has room.
func (t *FileTails) put(path string, size int64, spans []loadedSpan) {
	if t == nil || len(spans) == 0 {
		return
	}
	k := tailKey{path, size}
	n := spansBytes(spans)
	t.mu.Lock()
	defer t.mu.Unlock()
	old := spansBytes(t.entries[k])
	if t.used-old+n > t.budget {
		return
	}
	t.used += n - old
	t.entries[k] = spans
}

func spansBytes(spans []loadedSpan) int64 {
	var n int64
	for _, s := range spans {
		n += int64(len(s.data))
	}
	return n
}

// openTail returns a reader of the file that serves its end from one ranged read (or from
// tails), after checking the footer length the end holds: parquet-go allocates the length it
// finds before checking it against the file. Opened with parquet.SkipMagicBytes, a file then
// costs that one read before its pages, where parquet-go alone reads the leading magic, the
// footer's length and the footer one request each. A file that is not Parquet still fails:
// the trailing magic is checked.
func openTail(base io.ReaderAt, path string, size int64, tails *FileTails) (*spanReaderAt, error) {
	ra := &spanReaderAt{base: base, size: size, spans: tails.get(path, size)}
	// Read before judging the size: a file that is gone says so, whatever its add claimed.
	tail := min(size, tailBytes)
	if err := ra.load(size-tail, tail); err != nil {
		return nil, err
	}
	if size < 12 {
		return nil, fmt.Errorf("%w: %d bytes is too short for a Parquet file", pq.ErrBadDataFile, size)
	}
	if end := ra.find(size-8, 8); end == nil || int64(binary.LittleEndian.Uint32(end[:4])) > size-12 {
		return nil, fmt.Errorf("%w: bad footer length", pq.ErrBadDataFile)
	}
	return ra, nil
}

// spanReaderAt serves reads from byte ranges of the file already loaded (one ranged read
// each) and sends the others to the object store. Spans are loaded before the reader is
// shared: concurrent ReadAt calls only look them up.
type spanReaderAt struct {
	base  io.ReaderAt
	size  int64
	spans []loadedSpan
}

type loadedSpan struct {
	off  int64
	data []byte
}

func (r *spanReaderAt) find(off, n int64) []byte {
	for _, s := range r.spans {
		if off >= s.off && off+n <= s.off+int64(len(s.data)) {
			return s.data[off-s.off : off-s.off+n]
		}
	}
	return nil
}

func (r *spanReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if b := r.find(off, int64(len(p))); b != nil {
		return copy(p, b), nil
	}
	return r.base.ReadAt(p, off)
}

// load reads [off, off+n) in one request unless it is loaded already. The spans slice is
// copied on append, so that one taken from FileTails is never written to.
func (r *spanReaderAt) load(off, n int64) error {
	if off < 0 || n > r.size-off {
		return fmt.Errorf("%w: range %d+%d is outside the file (%d bytes)", pq.ErrBadDataFile, off, n, r.size)
	}
	if n <= 0 || r.find(off, n) != nil {
		return nil
	}
	data := make([]byte, n)
	if _, err := r.base.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	r.spans = append(r.spans[:len(r.spans):len(r.spans)], loadedSpan{off: off, data: data})
	return nil
}
