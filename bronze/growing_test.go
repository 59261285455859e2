package bronze

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/file"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/objstore/s3/s3test"
	"github.com/medallion-lake/medallion/table"
)

// growLake is a lake whose landing objects can grow: in place on the file backend (as a
// writer appending to a file), by a new, longer upload on S3 and in memory.
type growLake struct {
	objstore.Bucket
	dir string // the file backend's root, or ""
}

func (g growLake) appendTo(t *testing.T, key string, data []byte) {
	t.Helper()
	ctx := context.Background()
	if g.dir != "" {
		path := filepath.Join(g.dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := objstore.ReadAll(ctx, g, key)
	if err != nil && !errors.Is(err, objstore.ErrNotFound) {
		t.Fatal(err)
	}
	if err := objstore.PutBytes(ctx, g, key, append(old, data...)); err != nil {
		t.Fatal(err)
	}
}

func growLakes(t *testing.T) map[string]func(t *testing.T) growLake {
	return map[string]func(t *testing.T) growLake{
		"file": func(t *testing.T) growLake {
			dir := t.TempDir()
			b, err := file.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			return growLake{Bucket: b, dir: dir}
		},
		"mem": func(t *testing.T) growLake { return growLake{Bucket: mem.New()} },
		"s3":  func(t *testing.T) growLake { return growLake{Bucket: s3test.NewTestBucket(t)} },
	}
}

// eventLines renders lines from..to-1 of a growing object, and adds the oracle's
// "key@offset" of each to want, offsets counted from base.
func eventLines(key string, from, to int, base int64, want map[string]bool) []byte {
	var buf bytes.Buffer
	for i := from; i < to; i++ {
		want[fmt.Sprintf("%s@%d", key, base+int64(buf.Len()))] = true
		fmt.Fprintf(&buf, `{"event_id":"g-%d","event_type":"t","amount":1.5,"event_time":"2024-05-01T12:00:00Z"}`+"\n", i)
	}
	return buf.Bytes()
}

// TestIngestGrowingObject: an object that grows after it was ingested is read again from where
// the last read ended, on every backend; each line lands exactly once, in bronze with its offset
// in the object, and the accounting holds. Before, the appended lines were reported and lost.
func TestIngestGrowingObject(t *testing.T) {
	for name, open := range growLakes(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			lake := open(t)
			key := "landing/events/growing.json"
			want := map[string]bool{}
			first := eventLines(key, 0, 50, 0, want)
			lake.appendTo(t, key, first)
			x, err := smallBlocks(NewIngester(lake, ingestOptions()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.Run(ctx); err != nil {
				t.Fatal(err)
			}
			size := int64(len(first))
			total := int64(50)
			for round := 1; round <= 3; round++ {
				more := eventLines(key, 50*round, 50*round+50, size, want)
				lake.appendTo(t, key, more)
				size += int64(len(more))
				total += 50
				rep, err := x.Run(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Files != 1 || rep.Lines != 50 || rep.Rows != 50 || !slices.Equal(rep.ChangedObjects, []string{key}) || len(rep.RewrittenObjects) != 0 {
					t.Fatalf("round %d: %+v, want the 50 appended lines read as an append of %s", round, rep, key)
				}
			}
			sameSet(t, tableLines(t, lake), want)
			if n := testRows(t, lake, "bronze/events"); n != total {
				t.Fatalf("bronze holds %d rows, want %d", n, total)
			}
			// Nothing changed since: a run reads nothing.
			if rep, err := x.Run(ctx); err != nil || rep.Files != 0 {
				t.Fatalf("idle run: %+v %v", rep, err)
			}
		})
	}
}

// TestIngestRewrittenObject: an object replaced by other content (larger, same size, or smaller)
// after it was ingested is read again in full and reported; nothing of the new content is lost.
func TestIngestRewrittenObject(t *testing.T) {
	for name, open := range growLakes(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			lake := open(t)
			key := "landing/events/rewritten.json"
			var rows int64
			put := func(data []byte) {
				// Put replaces atomically on every backend (a new file on the file backend).
				if err := objstore.PutBytes(ctx, lake, key, data); err != nil {
					t.Fatal(err)
				}
			}
			put(eventLines(key, 0, 20, 0, map[string]bool{}))
			x, err := smallBlocks(NewIngester(lake, ingestOptions()))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := x.Run(ctx)
			if err != nil || rep.Rows != 20 {
				t.Fatalf("first run: %+v %v", rep, err)
			}
			rows += 20
			for _, n := range []int{30, 10} { // larger with another start; smaller
				put(eventLines(key, 1000*n, 1000*n+n, 0, map[string]bool{}))
				rep, err := x.Run(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Rows != int64(n) || !slices.Equal(rep.RewrittenObjects, []string{key}) {
					t.Fatalf("rewrite to %d lines: %+v, want it read again in full", n, rep)
				}
				rows += int64(n)
			}
			if n := testRows(t, lake, "bronze/events"); n != rows {
				t.Fatalf("bronze holds %d rows, want %d", n, rows)
			}
		})
	}
}

// TestIngestReadsListedSize: an object that grows between the listing and the read is read up
// to its listed size only, and the rest on the next run: reading past the listed size, as
// before, and then the appended range would ingest lines twice.
func TestIngestReadsListedSize(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	lake := growLake{Bucket: b, dir: dir}
	key := "landing/events/live.json"
	want := map[string]bool{}
	first := eventLines(key, 0, 40, 0, want)
	lake.appendTo(t, key, first)
	// The writer appends, and ends in the middle of a line, right after the listing.
	grower := &growAfterList{Bucket: lake, grow: func() {
		more := eventLines(key, 40, 60, int64(len(first)), want)
		lake.appendTo(t, key, more[:len(more)-10])
		lake.appendTo(t, key, more[len(more)-10:])
	}}
	x, err := smallBlocks(NewIngester(grower, ingestOptions()))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := x.Run(ctx)
	if err != nil || rep.Rows != 40 || rep.Lines != 40 {
		t.Fatalf("first run: %+v %v, want exactly the 40 listed lines", rep, err)
	}
	rep, err = x.Run(ctx)
	if err != nil || rep.Rows != 20 || !slices.Equal(rep.ChangedObjects, []string{key}) {
		t.Fatalf("second run: %+v %v, want the 20 appended lines", rep, err)
	}
	sameSet(t, tableLines(t, lake), want)
}

// TestIngestLineCutByListing: a line that the writer had half written when the object was listed
// becomes two pieces, each counted once (here as rejects): lines = rows + rejects holds, and
// nothing is lost without a trace.
func TestIngestLineCutByListing(t *testing.T) {
	ctx := context.Background()
	lake := growLake{Bucket: mem.New()}
	key := "landing/events/cut.json"
	want := map[string]bool{}
	all := eventLines(key, 0, 10, 0, want)
	cut := len(all) - 30
	lake.appendTo(t, key, all[:cut])
	x, err := smallBlocks(NewIngester(lake, ingestOptions()))
	if err != nil {
		t.Fatal(err)
	}
	r1, err := x.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lake.appendTo(t, key, all[cut:])
	r2, err := x.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rows, rej := r1.Rows+r2.Rows, r1.Rejected+r2.Rejected; rows != 9 || rej != 2 || r1.Lines+r2.Lines != rows+rej {
		t.Fatalf("runs %+v and %+v: want 9 rows and the cut line as 2 rejects", r1, r2)
	}
	lines := tableLines(t, lake)
	if !lines[fmt.Sprintf("%s@%d", key, cut)] {
		t.Fatalf("the second piece of the cut line (offset %d) is not in the tables: %v", cut, lines)
	}
}

// growAfterList runs grow once, right after the first listing of the landing prefix.
type growAfterList struct {
	objstore.Bucket
	grow func()
	done bool
}

func (g *growAfterList) List(ctx context.Context, prefix string, opts objstore.ListOptions) iter.Seq2[objstore.ObjectInfo, error] {
	return func(yield func(objstore.ObjectInfo, error) bool) {
		for info, err := range g.Bucket.List(ctx, prefix, opts) {
			if !yield(info, err) {
				return
			}
		}
		if !g.done && prefix == "landing/events/" {
			g.done = true
			g.grow()
		}
	}
}

func testRows(t *testing.T, lake objstore.Bucket, path string) int64 {
	t.Helper()
	var n int64
	for b, err := range table.Open(objstore.WithPrefix(lake, path), table.Options{}).Scan(context.Background(), table.ScanOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		n += int64(b.Len())
	}
	return n
}

// TestIngestGrowingConvergesAfterFailures fails the k-th write of a run that reads what was
// appended to objects, for every k until a run gets through, before or after the write lands
// (a crash, or a lost answer), then runs again cleanly; then the objects grow once more and a
// last run reads that. Every line lands exactly once: a crash between the table commits and the
// checkpoint's record must not lose how the read ended (a lost end made the next growth a
// rewrite, read twice), even when the objects grew again before the rerun.
func TestIngestGrowingConvergesAfterFailures(t *testing.T) {
	ctx := context.Background()
	keys := []string{"landing/events/a.json", "landing/events/b.json", "landing/events/c.json"}
	for _, op := range []string{objstore.OpPut, objstore.OpPutIfAbsent} {
		for _, after := range []bool{false, true} {
			failed := 0
			for k := 1; ; k++ {
				lake := growLake{Bucket: mem.New()}
				want := map[string]bool{}
				sizes := map[string]int64{}
				grow := func(from, to int) {
					for i, key := range keys {
						more := eventLines(key, 100*i+from, 100*i+to, sizes[key], want)
						lake.appendTo(t, key, more)
						sizes[key] += int64(len(more))
					}
				}
				grow(0, 10)
				x, _ := smallBlocks(NewIngester(lake, ingestOptions()))
				if _, err := x.Run(ctx); err != nil {
					t.Fatal(err)
				}
				grow(10, 25)
				faulty := objstore.WithFaults(lake, objstore.FaultPlan{Faults: []objstore.Fault{{Op: op, Nth: k, After: after}}})
				y, _ := smallBlocks(NewIngester(faulty, ingestOptions()))
				_, firstErr := y.Run(ctx)
				// The objects grow again before the rerun (on S3, each growth is a new ETag).
				grow(25, 30)
				z, _ := smallBlocks(NewIngester(lake, ingestOptions()))
				if _, err := z.Run(ctx); err != nil {
					t.Fatalf("%s k=%d after=%v: clean rerun failed: %v (first run: %v)", op, k, after, err, firstErr)
				}
				grow(30, 35)
				if rep, err := z.Run(ctx); err != nil || len(rep.RewrittenObjects) != 0 {
					t.Fatalf("%s k=%d after=%v: last growth: %+v %v, want appends only", op, k, after, rep, err)
				}
				sameSet(t, tableLines(t, lake), want)
				if faulty.Fired() == 0 {
					break
				}
				failed++
			}
			if failed < 2 {
				t.Fatalf("%s after=%v: only %d runs had a fault injected", op, after, failed)
			}
		}
	}
}
