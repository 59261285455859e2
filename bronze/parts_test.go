package bronze

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/medallion-lake/medallion/objstore"
	"github.com/medallion-lake/medallion/objstore/mem"
	"github.com/medallion-lake/medallion/table"
	"github.com/medallion-lake/medallion/table/source"
)

// TestCutParts: the parts are contiguous, never empty, as many as the total holds the part size
// (at most maxParts and one an item), and each ends where the running total reaches its share.
func TestCutParts(t *testing.T) {
	ones := func(n int) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = 1
		}
		return s
	}
	for _, tc := range []struct {
		name     string
		sizes    []int64
		partSize int64
		maxParts int
		want     []int
	}{
		{"no items", nil, 10, 4, []int{0, 0}},
		{"below one part", []int64{3, 3, 3}, 10, 4, []int{0, 3}},
		{"empty objects", []int64{0, 0, 0}, 10, 4, []int{0, 3}},
		{"two shares", []int64{5, 5, 5, 5}, 10, 4, []int{0, 2, 4}},
		{"at most maxParts", ones(10), 1, 3, []int{0, 4, 7, 10}},
		{"at most one an item", []int64{100, 100}, 1, 16, []int{0, 1, 2}},
		{"a large first item", []int64{100, 1, 1, 1, 1, 1, 1}, 10, 4, []int{0, 1, 2, 3, 7}},
		{"a large last item", []int64{1, 1, 1, 1, 100}, 10, 4, []int{0, 2, 3, 4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cutParts(tc.sizes, tc.partSize, tc.maxParts); !slices.Equal(got, tc.want) {
				t.Fatalf("cutParts(%v, %d, %d) = %v, want %v", tc.sizes, tc.partSize, tc.maxParts, got, tc.want)
			}
		})
	}
	rng := rand.New(rand.NewPCG(30, 6))
	for range 2000 {
		sizes := make([]int64, rng.IntN(40))
		var total int64
		for i := range sizes {
			sizes[i] = rng.Int64N(1000)
			total += sizes[i]
		}
		partSize, maxParts := 1+rng.Int64N(3000), 1+rng.IntN(20)
		got := cutParts(sizes, partSize, maxParts)
		want := 1
		if total > partSize {
			want = int(min(int64(maxParts), (total+partSize-1)/partSize))
		}
		want = max(1, min(want, len(sizes)))
		if len(got) != want+1 || got[0] != 0 || got[len(got)-1] != len(sizes) {
			t.Fatalf("cutParts(%v, %d, %d) = %v: want %d parts over all %d items", sizes, partSize, maxParts, got, want, len(sizes))
		}
		for p := 1; p < len(got); p++ {
			if len(sizes) > 0 && got[p] <= got[p-1] {
				t.Fatalf("cutParts(%v, %d, %d) = %v: part %d is empty", sizes, partSize, maxParts, got, p-1)
			}
		}
	}
}

// TestBatchFilesKeepLandingOrderOnAnyMachine: whatever GOMAXPROCS (and so the default
// Workers), a batch becomes the same data files holding the same rows, and bronze read as a
// stream reads (each commit's adds in order, or a snapshot's files by modification time, as a
// stream that starts from a checkpoint does) gives the rows in landing order: the objects'
// listing order, then each line's offset. Objects of random size and random names, some empty
// or blank, are ingested four a batch, cut into parts of 4 KiB.
func TestBatchFilesKeepLandingOrderOnAnyMachine(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(30, 1))
	landing := map[string][]byte{}
	for range 14 {
		var sb strings.Builder
		lines := rng.IntN(120)
		if rng.IntN(6) == 0 {
			lines = 0
		}
		for range lines {
			switch rng.IntN(40) {
			case 0:
				sb.WriteString("\n") // blank: neither a row nor a reject
			case 1:
				sb.WriteString("{broken\n")
			default:
				fmt.Fprintf(&sb, `{"event_id":"e%d","event_type":"t","amount":%d,"event_time":"2024-05-01T00:00:00Z"}`+"\n", rng.IntN(50), rng.IntN(9))
			}
		}
		landing[fmt.Sprintf("landing/events/%08x.json", rng.Uint32())] = []byte(sb.String())
	}
	// The oracle: every line that is a record, in listing (ascending key) order, then by offset.
	keys := slices.Sorted(maps.Keys(landing))
	var want []string
	for _, k := range keys {
		off := 0
		for line := range strings.SplitAfterSeq(string(landing[k]), "\n") {
			if strings.HasPrefix(line, `{"event_id"`) {
				want = append(want, fmt.Sprintf("%s@%d", k, off))
			}
			off += len(line)
		}
	}
	var firstLayout []string
	for _, procs := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			lake := mem.New()
			for k, v := range landing {
				if err := objstore.PutBytes(ctx, lake, k, v); err != nil {
					t.Fatal(err)
				}
			}
			opts := ingestOptions()
			opts.MaxFilesPerTrigger, opts.PartBytes, opts.FlushRows = 4, 4<<10, 7
			x, err := NewIngester(lake, opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := x.Run(ctx); err != nil {
				t.Fatal(err)
			}
			bronze := objstore.WithPrefix(lake, opts.BronzePath)
			src := source.New(bronze, source.Options{})
			latest, _, err := src.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// From the start of the log: each commit's adds in the commit's order.
			fromLog, _, err := src.NextBatch(ctx, &source.Offset{SourceVersion: 1, ReservoirVersion: 0, Index: -1}, latest, source.ReadLimit{})
			if err != nil {
				t.Fatal(err)
			}
			// From a snapshot: by modification time, then path.
			fromSnap, _, err := src.NextBatch(ctx, nil, latest, source.ReadLimit{})
			if err != nil {
				t.Fatal(err)
			}
			var layout []string
			for i, f := range fromLog {
				if fromSnap[i].Add.Path != f.Add.Path {
					t.Fatalf("file %d: the log lists %s, the snapshot %s", i, f.Add.Path, fromSnap[i].Add.Path)
				}
			}
			got := readLineage(t, bronze, fromLog, func(version int64, rows []string) {
				layout = append(layout, fmt.Sprintf("v%d:%s..%s(%d)", version, rows[0], rows[len(rows)-1], len(rows)))
			})
			if !slices.Equal(got, want) {
				t.Fatalf("bronze in stream order holds %d rows, landing order %d:\n%v\nwant\n%v", len(got), len(want), got, want)
			}
			if len(fromLog) <= len(keys)/4+1 {
				t.Fatalf("bronze has %d files for %d objects: the batches were not cut into parts, so the test shows nothing", len(fromLog), len(keys))
			}
			if firstLayout == nil {
				firstLayout = layout
			} else if !slices.Equal(layout, firstLayout) {
				t.Fatalf("data files\n%v\nwith GOMAXPROCS=1 they were\n%v", layout, firstLayout)
			}
		})
	}
}

// readLineage reads the files in order and returns "source_file@source_offset" of every row;
// each file's rows are also passed to file with the file's version.
func readLineage(t *testing.T, b objstore.Bucket, files []source.IndexedFile, each func(version int64, rows []string)) []string {
	t.Helper()
	ctx := context.Background()
	tbl := table.Open(b, table.Options{})
	snap, err := tbl.Log().Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FileScan(snap, []string{ColSourceFile, ColSourceOffset}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, f := range files {
		batches, err := fs.ReadFile(ctx, f.Add)
		if err != nil {
			t.Fatal(err)
		}
		var rows []string
		for _, bt := range batches {
			file, offset := bt.Column(ColSourceFile), bt.Column(ColSourceOffset)
			for i := range bt.Len() {
				rows = append(rows, fmt.Sprintf("%s@%d", file.StringAt(i), offset.Int64[i]))
			}
		}
		if len(rows) > 0 {
			each(f.Version, rows)
		}
		all = append(all, rows...)
	}
	return all
}
