package table

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go/format"

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
// repeated sweep over more files than fit would keep none of them. An end that does not fit
// is held apart until the file's read is over (or the next Keep, for a file the bloom filters
// ruled out): the look-up's bloom check and its read of the same file, one after the other,
// then load it once, where a full budget had them read it twice (674 of a 10M/1k stream's
// 6,066 silver GETs on MinIO). Safe for concurrent use.
type FileTails struct {
	mu      sync.Mutex
	budget  int64
	used    int64
	entries map[tailKey][]loadedSpan
	over    map[tailKey][]loadedSpan // ends put while the budget was full, until their read is over
}

type tailKey struct {
	path string
	size int64
}

// NewFileTails returns an empty cache that holds at most budget bytes of file ends.
func NewFileTails(budget int64) *FileTails {
	return &FileTails{budget: budget, entries: map[tailKey][]loadedSpan{}, over: map[tailKey][]loadedSpan{}}
}

// Keep drops every entry whose path open does not report as still wanted, and every end held
// apart.
func (t *FileTails) Keep(open func(path string) bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.over)
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
	if spans, ok := t.entries[tailKey{path, size}]; ok {
		return spans
	}
	return t.over[tailKey{path, size}]
}

// put keeps spans as the file's end (replacing what was kept), when the budget has room, and
// holds them apart, until done, when it has not.
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
		t.over[k] = spans
		return
	}
	delete(t.over, k)
	t.used += n - old
	t.entries[k] = spans
}

// done drops the file's end held apart: its read is over.
func (t *FileTails) done(path string, size int64) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.over, tailKey{path, size})
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
// shared (concurrent ReadAt calls only look them up); a row group's column chunks are
// swapped in between row groups.
type spanReaderAt struct {
	base   io.ReaderAt
	size   int64
	spans  []loadedSpan                 // the file's end, bloom filters
	chunks atomic.Pointer[[]loadedSpan] // the column chunks of the row group being read
}

type loadedSpan struct {
	off  int64
	data []byte
}

func findSpan(spans []loadedSpan, off, n int64) []byte {
	for _, s := range spans {
		if off >= s.off && off+n <= s.off+int64(len(s.data)) {
			return s.data[off-s.off : off-s.off+n]
		}
	}
	return nil
}

func (r *spanReaderAt) find(off, n int64) []byte {
	if b := findSpan(r.spans, off, n); b != nil {
		return b
	}
	if c := r.chunks.Load(); c != nil {
		return findSpan(*c, off, n)
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
	if n <= 0 || r.find(off, n) != nil {
		return nil
	}
	data, err := r.read(off, n)
	if err != nil {
		return err
	}
	r.spans = append(r.spans[:len(r.spans):len(r.spans)], loadedSpan{off: off, data: data})
	return nil
}

func (r *spanReaderAt) read(off, n int64) ([]byte, error) {
	if off < 0 || n > r.size-off {
		return nil, fmt.Errorf("%w: range %d+%d is outside the file (%d bytes)", pq.ErrBadDataFile, off, n, r.size)
	}
	data := make([]byte, n)
	if _, err := r.base.ReadAt(data, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data, nil
}

// chunkGap is the most bytes of unread columns between two wanted column chunks that one
// request reads through rather than ask twice: about what a round trip to S3 costs in
// transfer time.
const chunkGap = 1 << 20

// chunkFetchMax bounds the bytes of wanted chunks fetched ahead (and so held at once); a row
// group larger than that is read as parquet-go reads it, a buffer at a time.
const chunkFetchMax = 32 << 20

// fetchChunks loads the wanted column chunks (leaves) of row group first and of the kept row
// groups after it, as many as chunkFetchMax holds, in as few requests as chunkGap allows, in
// place of what it loaded before; it returns the last row group loaded (first - 1 when none
// was: the decoder then reads that group itself). parquet-go asks for each chunk on its own (a
// buffer at a time): on S3 a request per column per row group, and silver's small row groups
// (4k rows in session 18) would cost a request each. Chunks the footer places outside the file are left to
// the decoder, which reports them.
func (r *spanReaderAt) fetchChunks(groups []format.RowGroup, first int, keep func(int) bool, leaves []int) (int, error) {
	r.chunks.Store(nil)
	var ranges [][2]int64
	total, last := int64(0), first-1
	for g := first; g < len(groups); g++ {
		if g > first && !keep(g) {
			continue
		}
		rs, n, ok := r.chunkRanges(groups[g].Columns, leaves)
		if !ok || total+n > chunkFetchMax {
			break
		}
		ranges, total, last = append(ranges, rs...), total+n, g
	}
	if len(ranges) == 0 {
		return first - 1, nil
	}
	if err := r.loadRanges(ranges, chunkGap); err != nil {
		return first - 1, err
	}
	return last, nil
}

// chunkRanges returns the byte ranges of one row group's wanted chunks and their size; not ok
// when the footer places one outside the file.
func (r *spanReaderAt) chunkRanges(cols []format.ColumnChunk, leaves []int) ([][2]int64, int64, bool) {
	var ranges [][2]int64
	total := int64(0)
	for _, l := range leaves {
		if l < 0 || l >= len(cols) {
			continue
		}
		md := &cols[l].MetaData
		start := md.DataPageOffset
		if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
			start = md.DictionaryPageOffset
		}
		end := start + md.TotalCompressedSize
		if start < 0 || md.TotalCompressedSize <= 0 || end > r.size {
			return nil, 0, false
		}
		ranges = append(ranges, [2]int64{start, end})
		total += md.TotalCompressedSize
	}
	return ranges, total, true
}

// loadRanges reads byte ranges, merged where less than gap apart, as the chunks served next.
func (r *spanReaderAt) loadRanges(ranges [][2]int64, gap int64) error {
	if len(ranges) == 0 {
		return nil
	}
	merged := coalesceRanges(ranges, gap)
	var spans []loadedSpan
	for _, rg := range merged {
		if rg[0] < 0 || rg[1] > r.size || rg[0] >= rg[1] {
			return nil // the decoder reports it
		}
		if findSpan(r.spans, rg[0], rg[1]-rg[0]) != nil {
			continue
		}
		data, err := r.read(rg[0], rg[1]-rg[0])
		if err != nil {
			return err
		}
		spans = append(spans, loadedSpan{off: rg[0], data: data})
	}
	r.chunks.Store(&spans)
	return nil
}

// coalesceRanges sorts byte ranges ([start, end)) and joins those whose gap is at most gap
// bytes, so that each run costs one read: a request is dearer than the bytes between two
// ranges. ranges must not be empty; it is sorted in place and its array reused.
func coalesceRanges(ranges [][2]int64, gap int64) [][2]int64 {
	slices.SortFunc(ranges, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	merged := ranges[:1]
	for _, rg := range ranges[1:] {
		end := &merged[len(merged)-1][1]
		if rg[0]-*end <= gap {
			*end = max(*end, rg[1])
			continue
		}
		merged = append(merged, rg)
	}
	return merged
}
