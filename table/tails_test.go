package table

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/pq"
	"github.com/medallion-lake/medallion/txlog"
)

// scanRows reads every row of files through fs, as values.
func scanRows(t *testing.T, fs *FileScan, files []*txlog.Add) [][]any {
	t.Helper()
	var rows [][]any
	for b, err := range fs.Read(context.Background(), files) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range b.Len() {
			rows = append(rows, b.Row(i))
		}
	}
	return rows
}

// reset forgets the reads recorded so far.
func (c *countingBucket) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads, c.nbytes, c.ranges = 0, 0, nil
}

// touching counts the recorded reads that overlap [off, off+n).
func (c *countingBucket) touching(off, n int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 0
	for _, r := range c.ranges {
		if r[0] < off+n && off < r[0]+r[1] {
			k++
		}
	}
	return k
}

func TestScanOpensAFileWithOneReadOfItsEnd(t *testing.T) {
	tbl, b := bloomTable(t, 5000, 1<<20, []string{"id"}, false)
	snap, files := latestFiles(t, tbl)
	size := files[0].Size
	cb := &countingBucket{Bucket: b}
	fs, err := Open(cb, Options{}).FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := scanRows(t, fs, files)
	if len(rows) != 5000 {
		t.Fatalf("%d rows, want 5000", len(rows))
	}
	// parquet-go alone reads the leading magic, the footer's length and the footer, one
	// request each.
	for _, r := range cb.ranges {
		if r[0] == 0 && r[1] == 4 {
			t.Errorf("the leading magic read on its own: %v", cb.ranges)
		}
	}
	if n := cb.touching(size-8, 8); n != 1 {
		t.Errorf("%d reads of the footer's length, want 1: %v", n, cb.ranges)
	}

	// With a cache, a second scan reads only pages: nothing of the file's end.
	cb.reset()
	fs.Tails = NewFileTails(1 << 20)
	first := scanRows(t, fs, files)
	if fs.Tails.Bytes() == 0 {
		t.Fatal("the cache kept nothing of the file")
	}
	cb.reset()
	again := scanRows(t, fs, files)
	if n := cb.touching(size-8, 8); n != 0 {
		t.Errorf("the cached file's end read again (%d reads): %v", n, cb.ranges)
	}
	if !reflect.DeepEqual(again, first) || !reflect.DeepEqual(first, rows) {
		t.Error("rows read through the cache differ from a plain scan's")
	}
}

// bloomScanCounted is a scan of id over a one-file table of 30k rows with bloom filters on id,
// its reads counted, with FileTails of budget bytes.
func bloomScanCounted(t *testing.T, budget int64) (*Table, *FileScan, []*txlog.Add, *countingBucket) {
	t.Helper()
	tbl, b := bloomTable(t, 30000, 1<<20, []string{"id"}, false)
	snap, files := latestFiles(t, tbl)
	cb := &countingBucket{Bucket: b}
	fs, err := Open(cb, Options{}).FileScan(snap, []string{"id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs.Tails = NewFileTails(budget)
	return tbl, fs, files, cb
}

func TestMayContainThenReadShareTheFileEnd(t *testing.T) {
	tbl, fs, files, cb := bloomScanCounted(t, 1<<20)
	ctx := context.Background()
	keys := keyBatch(t, tbl, "id", []any{bloomAbsent(1), bloomID(7)})
	may, err := fs.MayContain(ctx, files[0], keys)
	if err != nil {
		t.Fatal(err)
	}
	if may[0] || !may[1] {
		t.Fatalf("MayContain = %v, want [false true]", may)
	}
	probeReads := cb.reads
	cb.reset()
	scanRows(t, fs, files)
	if n := cb.touching(files[0].Size-8, 8); n != 0 {
		t.Errorf("the read after MayContain read the file's end again: %v", cb.ranges)
	}
	// The next batch's probe of the same file asks the store for nothing.
	cb.reset()
	again, err := fs.MayContain(ctx, files[0], keys)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, may) {
		t.Fatalf("cached MayContain = %v, want %v", again, may)
	}
	if cb.reads != 0 {
		t.Errorf("a cached probe made %d reads (the first made %d): %v", cb.reads, probeReads, cb.ranges)
	}
}

// TestMayContainThenReadShareTheFileEndOverBudget: with a budget too small for the file's end
// (the look-up's, once it opens more files than it keeps), the read after MayContain still
// finds the end MayContain loaded, and nothing is kept after the read.
func TestMayContainThenReadShareTheFileEndOverBudget(t *testing.T) {
	tbl, fs, files, cb := bloomScanCounted(t, 100)
	ctx := context.Background()
	keys := keyBatch(t, tbl, "id", []any{bloomID(7)})
	if _, err := fs.MayContain(ctx, files[0], keys); err != nil {
		t.Fatal(err)
	}
	cb.reset()
	first := scanRows(t, fs, files[:1])
	if n := cb.touching(files[0].Size-8, 8); n != 0 {
		t.Errorf("the read after MayContain read the file's end again: %v", cb.ranges)
	}
	cb.reset()
	again := scanRows(t, fs, files[:1])
	if n := cb.touching(files[0].Size-8, 8); n != 1 || fs.Tails.Bytes() != 0 {
		t.Errorf("a second read touched the file's end %d times with %d bytes kept; want once (nothing held after a read): %v",
			n, fs.Tails.Bytes(), cb.ranges)
	}
	if !reflect.DeepEqual(again, first) {
		t.Error("rows read through the held end differ from a plain read's")
	}
}

func TestFileTailsBudgetAndKeep(t *testing.T) {
	tbl, b := bloomTable(t, 1000, 1<<20, []string{"id"}, false)
	if _, err := tbl.Append(context.Background(), []*pq.Batch{bloomRows(t, 1000, 1000)}, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	snap, files := latestFiles(t, tbl)
	fs, err := Open(b, Options{}).FileScan(snap, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A budget smaller than one file's end keeps nothing, and scans go on as without one.
	fs.Tails = NewFileTails(100)
	if rows := scanRows(t, fs, files); len(rows) != 2000 || fs.Tails.Bytes() != 0 {
		t.Fatalf("%d rows, %d bytes kept; want 2000 rows, nothing kept", len(rows), fs.Tails.Bytes())
	}
	fs.Tails = NewFileTails(1 << 20)
	scanRows(t, fs, files)
	both := fs.Tails.Bytes()
	if both != files[0].Size+files[1].Size {
		t.Fatalf("%d bytes kept of two small files (%d and %d bytes, each read in one request): want both whole", both, files[0].Size, files[1].Size)
	}
	fs.Tails.Keep(func(path string) bool { return path == files[1].Path })
	if got := fs.Tails.Bytes(); got != both-files[0].Size {
		t.Fatalf("after dropping the first file %d bytes kept, want %d", got, both-files[0].Size)
	}
	fs.Tails.Keep(func(string) bool { return false })
	if got := fs.Tails.Bytes(); got != 0 {
		t.Fatalf("after dropping everything %d bytes kept", got)
	}
}

func TestOpenTailRejectsBadEnds(t *testing.T) {
	tbl, b := bloomTable(t, 100, 1<<20, []string{"id"}, false)
	snap, files := latestFiles(t, tbl)
	ctx := context.Background()
	data, err := objstore.ReadAll(ctx, b, files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	for name, spoil := range map[string]func([]byte) []byte{
		"footer length past the start": func(d []byte) []byte {
			d[len(d)-8], d[len(d)-7], d[len(d)-6], d[len(d)-5] = 0xff, 0xff, 0xff, 0x7f
			return d
		},
		"no trailing magic": func(d []byte) []byte { copy(d[len(d)-4:], "JSON"); return d },
		"too short":         func(d []byte) []byte { return d[:7] },
	} {
		t.Run(name, func(t *testing.T) {
			bad := spoil(append([]byte(nil), data...))
			path := "bad-" + fmt.Sprint(len(name)) + ".parquet"
			if err := b.Put(ctx, path, bytes.NewReader(bad), int64(len(bad))); err != nil {
				t.Fatal(err)
			}
			add := *files[0]
			add.Path, add.Size = path, int64(len(bad))
			fs, err := tbl.FileScan(snap, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range fs.Read(ctx, []*txlog.Add{&add}) {
				if err == nil {
					continue
				}
				if !errors.Is(err, pq.ErrBadDataFile) {
					t.Fatalf("read: %v, want ErrBadDataFile", err)
				}
				return
			}
			t.Fatal("a spoiled file read without an error")
		})
	}
}

func TestScanFetchesARowGroupsColumnsInOneRead(t *testing.T) {
	// Row groups of more than the 64 KiB end read first, so that each needs its own read.
	for _, rg := range []int{1 << 20, 4000} {
		t.Run(fmt.Sprint(rg), func(t *testing.T) {
			tbl, b := bloomTable(t, 12000, rg, nil, false)
			snap, files := latestFiles(t, tbl)
			plain, err := tbl.FileScan(snap, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := scanRows(t, plain, files)
			groups := (12000 + rg - 1) / rg // 1 or 3
			for _, cols := range [][]string{nil, {"payload"}, {"id", "score"}} {
				cb := &countingBucket{Bucket: b}
				fs, err := Open(cb, Options{}).FileScan(snap, cols, nil)
				if err != nil {
					t.Fatal(err)
				}
				got := scanRows(t, fs, files)
				// The end, then one read for every row group's chunks together (they are
				// adjacent and under chunkFetchMax; none for columns within the end):
				// parquet-go alone asks for every column chunk on its own.
				if cb.reads > 2 || (cols == nil && cb.reads != 2) {
					t.Errorf("columns %v: %d reads for %d row groups: %v", cols, cb.reads, groups, cb.ranges)
				}
				if len(got) != len(want) {
					t.Fatalf("columns %v: %d rows, want %d", cols, len(got), len(want))
				}
				if cols == nil && !reflect.DeepEqual(got, want) {
					t.Errorf("rows read with chunks fetched ahead differ")
				}
			}
		})
	}
}
